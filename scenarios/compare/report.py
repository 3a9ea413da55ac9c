"""The comparison's files: matrix CSVs, frontier and audit PNGs, ``report.md`` and a self-contained ``report.html``.

Every sentence of the recommendations is generated from the measured table:
per threat model and per use (answering metric queries, learning a model), the
protocol configuration with the lowest worst-case leakage over the attacks that
apply, ties (within one percentage point) broken by utility, with its cost
against the use's most useful configuration. The report is built once as a
list of blocks and rendered twice, as Markdown and as HTML with the figures
inlined as base64 data URIs (the HTML needs no other file).
"""

from __future__ import annotations

import base64
import html
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402

from parley.scenarios.compare.plan import ATTACK_SETTINGS, UTILITY  # noqa: E402
from parley.scenarios.compare.utility import UNSEEDED_SPREAD  # noqa: E402
from parley.scenarios.spec import THREAT_MODELS  # noqa: E402

__all__ = ["QUICK_CAVEAT", "write_report", "recommendations", "equal_epsilon", "bound_gaps", "render_markdown",
           "render_html", "TIE_PP", "NOISE_LAW_ATTACK", "unseeded_notes"]

#: Worst-case leakages closer than this (percentage points) count as a tie, broken by utility; leakage below
#: chance (50 %) ranks as chance: the adversary's guess carries no information it could know to use.
TIE_PP = 1.0
#: What the quick comparison's ranking is, and is not (it ranks a smaller grid than the full one).
QUICK_CAVEAT = ("A smoke check, not a recommendation: `--quick` runs one epsilon per DP protocol, one attack per "
                "exchange and threat model, {repeats} repeat(s), small audit sets and a short audit, so its "
                "ranking can differ from the full comparison's on the same data. Run `parley compare` without "
                "`--quick` before choosing a protocol.")
CHANCE = 50.0

Block = tuple[str, Any]
#: The attack that decodes under the mechanism's own noise law: its column heads the bound table.
NOISE_LAW_ATTACK = "likelihood"


def _fmt(value: Any, digits: int = 3) -> str:
    if value is None or (isinstance(value, float) and not np.isfinite(value)):
        return "-"
    if isinstance(value, (float, np.floating)):
        return f"{value:.{digits}g}"
    return str(value)


def _utility_text(entry: pd.Series) -> str:
    spec = UTILITY[entry["flow"]]
    text = f"{spec.short} {_fmt(entry['utility'])}"
    if spec.fairness_key and entry.get("unfairness") is not None and pd.notna(entry.get("unfairness")):
        text += f", {spec.fairness_short} {_fmt(entry['unfairness'])}"
    return text


def _same_utility(one: pd.Series, other: pd.Series) -> bool:
    """The same utility (and unfairness, where the use measures one) to the last bit: a tie, not a cost."""
    return all((pd.isna(one.get(key)) and pd.isna(other.get(key))) or one.get(key) == other.get(key)
               for key in ("utility", "unfairness"))


def _utility_label(front: pd.DataFrame, flow: str) -> str:
    """How ``front`` measured the utility of ``flow``: its rows' label, else the flow's definition."""
    if "utility_label" not in front:
        return UTILITY[flow].label
    labels = front.loc[front["flow"] == flow, "utility_label"].dropna()
    return str(labels.iloc[0]) if len(labels) else UTILITY[flow].label


def _metric_utility_label(front: pd.DataFrame) -> str:
    return _utility_label(front, "metric-query")


def _observer_note(conf: pd.DataFrame) -> str | None:
    """What an observer overhearing a curious data center learns in clear and sealed (from the table)."""
    part = conf[conf["scenario"] == "adult-raw-double-query"] if len(conf) else conf
    if part.empty:
        return None
    by = {bool(r["confidential"]): r for _, r in part.iterrows()}
    def leak(r: Any) -> str:
        v = r["observer_leakage"]
        return "nothing decided (chance)" if v is None or pd.isna(v) else f"{_fmt(v)} %"
    text = ("An observer who overhears a curious data center's double queries under raw answers (the "
            "confidentiality table below) reaches " + (leak(by[False]) if False in by else "-") + " in clear")
    if True in by:
        text += f" and {leak(by[True])} with confidential payloads"
    return text + "; the matrix's passive-observer column overhears honest traffic only."


def recommendations(front: pd.DataFrame, conf: pd.DataFrame | None = None) -> list[str]:
    """One sentence per threat model and use, from the frontier (and confidentiality) tables."""
    lines = []
    for threat in THREAT_MODELS:
        key = f"worst_{threat}"
        if key not in front:
            lines.append(f"**{threat}**: no attack of the comparison applies under this threat model.")
            continue
        for flow, group in front.groupby("flow", sort=False):
            measured = group[group[key].notna()]
            unmeasured = group[group[key].isna()]["protocol"].tolist()
            if measured.empty:
                continue
            spec = UTILITY[flow]
            rank = measured[key].clip(lower=CHANCE)
            tied = measured[rank <= rank.min() + TIE_PP]
            util = pd.to_numeric(tied["utility"], errors="coerce")
            best = tied.loc[(util.idxmax() if spec.higher_is_better else util.idxmin()) if util.notna().any()
                            else tied.index[0]]
            all_util = pd.to_numeric(group["utility"], errors="coerce")
            most_useful = group.loc[(all_util.idxmax() if spec.higher_is_better else all_util.idxmin())] \
                if all_util.notna().any() else best
            if most_useful["protocol"] == best["protocol"]:
                cost = "no utility cost (it is the most useful configuration measured)"
            elif _same_utility(best, most_useful):
                cost = f"no utility cost by this measure ({_utility_text(best)}, as {most_useful['protocol']})"
            else:
                cost = (f"at a cost in utility: {_utility_text(best)}, against {_utility_text(most_useful)} for "
                        f"{most_useful['protocol']}")
            worst_row = measured.loc[measured[key].idxmax()]
            if len(group) == 1:
                sentence = (f"**{threat}, {UTILITY[flow].use}**: one configuration, **{best['protocol']}**: worst "
                            f"measured leakage {_fmt(best[key], 3)} % balanced accuracy (50 % is a coin flip), "
                            f"{_utility_text(best)}.")
            else:
                sentence = (f"**{threat}, {UTILITY[flow].use}**: prefer **{best['protocol']}** (worst measured "
                            f"leakage {_fmt(best[key], 3)} % balanced accuracy, 50 % is a coin flip), {cost}.")
            if worst_row["protocol"] != best["protocol"]:
                sentence += f" Most exposed: {worst_row['protocol']} ({_fmt(worst_row[key], 3)} %)."
            if unmeasured:
                sentence += (f" No attack of this threat model applies to {', '.join(unmeasured)}: "
                             "that is absence of a known attack, not a proof of safety.")
            if threat == "passive-observer" and flow == "metric-query" and conf is not None:
                note = _observer_note(conf)
                sentence += f" {note}" if note else ""
            lines.append(sentence)
    return lines


def equal_epsilon(front: pd.DataFrame) -> list[str]:
    """Per exchange and epsilon shared by several protocols: the most useful one against the next protocol's best.

    Protocols are compared by ``family`` (the protocol's name: a protocol's variants, such as dp-counts' two
    noises, are one protocol). Utility ratios are quoted for error-like utilities (lower is better), where a
    ratio reads as "k times smaller".
    """
    lines: list[str] = []
    if "epsilon" not in front:
        return lines
    family = front["family"] if "family" in front else front["name"]
    rated = front.assign(family=family)[pd.to_numeric(front["epsilon"], errors="coerce").notna()
                                        & pd.to_numeric(front["utility"], errors="coerce").notna()]
    for (flow, eps), group in rated.groupby(["flow", "epsilon"], sort=False):
        spec = UTILITY[flow]
        if group["family"].nunique() < 2 or spec.higher_is_better:
            continue
        util = pd.to_numeric(group["utility"])
        best_by_name = util.groupby(group["family"], sort=False).idxmin()
        ranked = sorted(best_by_name, key=lambda i: util[i])
        best, runner = group.loc[ranked[0]], group.loc[ranked[1]]
        smaller = (f"{_fmt(util[ranked[1]] / util[ranked[0]], 3)} times smaller than" if util[ranked[0]] > 0
                   else "exact in most answers (median 0), against")  # no ratio over an error of 0
        frontier_note = "" if "on_frontier" not in group else (
            ", on the frontier" if bool(best["on_frontier"]) else ", not on the frontier")
        lines.append(f"ε = {_fmt(eps)} ({UTILITY[flow].use}): **{best['protocol']}** has {spec.short} "
                     f"{_fmt(best['utility'])}{frontier_note}, {smaller} the next "
                     f"protocol's best, {runner['protocol']} ({_fmt(runner['utility'])}); worst measured leakage "
                     f"{_fmt(best['worst_leakage'], 3)} % against {_fmt(runner['worst_leakage'], 3)} %.")
    return lines


def _label_points(ax: Any, points: list[tuple[float, float, str]], fontsize: float = 7) -> list[Any]:
    """Annotate each point with its text, moving a label up or down (greedily) off the labels placed before it.

    Positions are worked out in display pixels from the axes' final limits (call after the layout);
    a label moved off its point is tied to it by a thin line. Returns the annotations.
    """
    ax.autoscale_view()
    scale = ax.figure.dpi / 72.0  # pixels per point
    height = fontsize * 1.4 * scale
    placed: list[tuple[float, float, float, float]] = []
    annotations = []
    shown = [(ax.transData.transform((x, y)), x, y, text) for x, y, text in points]
    right = ax.get_window_extent().x1
    renderer = ax.figure.canvas.get_renderer()
    font = matplotlib.font_manager.FontProperties(size=fontsize)
    for (px, py), x, y, text in sorted(shown, key=lambda item: (item[0][1], item[0][0])):
        width = renderer.get_text_width_height_descent(text, font, ismath=False)[0] + 2 * scale
        dx = 4.0 if px + 4 * scale + width <= right else -4.0 - width / scale  # at the right edge: to the left
        for step in (0, 1, -1, 2, -2, 3, -3, 4, -4, 5, -5, 6, -6, 7, -7, 8, -8):
            x0, y0 = px + dx * scale, py + 3 * scale + step * height
            box = (x0, y0, x0 + width, y0 + height)
            if not any(box[0] < b[2] and b[0] < box[2] and box[1] < b[3] and b[1] < box[3] for b in placed):
                break
        placed.append(box)
        arrow = {"arrowstyle": "-", "lw": 0.5, "color": "grey"} if step else None
        annotations.append(ax.annotate(text, (x, y), fontsize=fontsize, xytext=(dx, 3 + step * height / scale),
                                       textcoords="offset points", va="bottom", arrowprops=arrow))
    return annotations


def _frontier_png(front: pd.DataFrame, path: Path) -> Path:
    """Worst-case leakage against utility: query error (metric answers), accuracy and unfairness (learning)."""
    measured = front[front["worst_leakage"].notna()]
    metric = measured[measured["flow"] == "metric-query"]
    learning = measured[measured["flow"] != "metric-query"]
    fig, axes = plt.subplots(1, 3, figsize=(16, 5), sharey=True)
    panels = [(axes[0], metric, "utility", "median error of the honest audit answer (lower is better; symlog)"),
              (axes[1], learning, "utility", "model accuracy (higher is better)"),
              (axes[2], learning, "unfairness", "model unfairness (lower is fairer)")]
    labels: dict[Any, list[tuple[float, float, str]]] = {}
    for ax, part, column, label in panels:
        part = part[pd.to_numeric(part[column], errors="coerce").notna()]
        for name, group in part.groupby("name", sort=False):
            x = pd.to_numeric(group[column])
            ax.scatter(x, group["worst_leakage"], s=50, label=name)
            labels.setdefault(ax, []).extend(zip(x.astype(float), group["worst_leakage"].astype(float),
                                                 group["protocol"].astype(str), strict=True))
        if ax is axes[0]:
            ax.set_xscale("symlog", linthresh=1e-3)
        ax.axhline(50.0, color="grey", lw=0.8, ls="--")
        ax.set_xlabel(label)
        ax.grid(True, alpha=0.3)
        if len(part):
            ax.legend(fontsize="small")
    axes[0].set_ylabel("worst-case leakage over applicable attacks (% balanced accuracy)")
    axes[0].set_title("metric-query protocols")
    axes[1].set_title("learning protocols: accuracy")
    axes[2].set_title("learning protocols: fairness")
    fig.tight_layout()
    for ax, points in labels.items():  # placed once the layout is final: the overlaps are worked out in pixels
        _label_points(ax, points)
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _audit_png(audits: pd.DataFrame, path: Path) -> Path | None:
    part = audits[pd.to_numeric(audits.get("epsilon_lower"), errors="coerce").notna()] if len(audits) else audits
    if part is None or part.empty:
        return None
    fig, ax = plt.subplots(figsize=(9, 4))
    x = np.arange(len(part))
    claimed = pd.to_numeric(part["claimed_epsilon"], errors="coerce")
    ax.bar(x - 0.2, part["epsilon_lower"], 0.4, label=f"empirical lower bound ({part['confidence'].iloc[0]:.0%})")
    ax.bar(x + 0.2, claimed.fillna(0.0), 0.4, label="claimed (charged by the ledger); 0 = no claim")
    ax.set_xticks(x, part["protocol"], rotation=30, ha="right", fontsize=8)
    ax.set_ylabel("epsilon")
    ax.set_title("whole-scenario privacy audit")
    ax.legend(fontsize="small")
    ax.grid(True, axis="y", alpha=0.3)
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)
    return path


def _audit_size_words(audits: pd.DataFrame, runs: int) -> str:
    """How many draws the audit's bounds rest on: whole-scenario runs, or the two-level audit's draws and runs."""
    if "mode" in audits and (audits["mode"] == "two-level").any():
        part = audits[audits["mode"] == "two-level"]
        draws = int(pd.to_numeric(part["mechanism_draws"]).max())
        wiring = int(pd.to_numeric(part["wiring_runs"]).max())
        return (f"two levels: {draws:,} mechanism-level releases per neighbour and half (the protocol's release of "
                f"the request one run sent, its noise drawn vectorised), and {wiring} whole-scenario runs per "
                "neighbour whose statistic on the wire is tested to follow the same law (chi-square on 10 "
                "equal-probability bins, Bonferroni over the two neighbours, at 0.01: the wiring column)")
    return f"{runs} runs per neighbour and half ({4 * runs + 1} scenario runs per configuration)"


def _audit_table(audits: pd.DataFrame) -> pd.DataFrame:
    rows = []
    for _, r in audits.iterrows():
        lower, claimed = r.get("epsilon_lower"), r.get("claimed_epsilon")
        if lower is None or pd.isna(lower):
            verdict = r.get("note", "")
        elif claimed is None or pd.isna(claimed):
            verdict = "no DP claim; the bound measures what the view gives away"
        elif lower > claimed:
            verdict = "claim refuted at this confidence"
        else:
            verdict = "consistent with the claim"
        no_claim = lower is not None and pd.notna(lower) and (claimed is None or pd.isna(claimed))
        rows.append({"protocol": r["protocol"], "claimed ε": "no claim" if no_claim else _fmt(claimed),
                     "empirical ε lower bound": _fmt(lower),
                     "confidence": _fmt(r.get("confidence")), "runs per half": _fmt(r.get("runs")),
                     "verdict": verdict, "audited event": r.get("event", "") if pd.notna(r.get("event", "")) else ""})
        if r.get("mode") == "two-level":  # the bound rests on mechanism draws; the wiring runs test the parties
            ok = r.get("wiring_ok")
            rows[-1]["runs per half"] = f"{_fmt(r.get('runs'))} draws"
            rows[-1]["wiring (runs, p)"] = (f"{'matches' if ok is True or ok == 'True' else 'MISMATCH'} "
                                            f"({int(r['wiring_runs'])} runs, p = {_fmt(r.get('wiring_p'))})")
    table = pd.DataFrame(rows)
    if "wiring (runs, p)" in table:  # rows not audited have no wiring test
        table["wiring (runs, p)"] = table["wiring (runs, p)"].fillna("")
    return table


def bound_gaps(long: pd.DataFrame) -> pd.DataFrame:
    """Per configuration with a finite leakage bound: the likelihood attack and the strongest attack against it.

    From ``matrix_long.csv``: leakage (mean over repeats), the bound (e^eps + delta)/(1 + e^eps) of the epsilon
    the runs spent, and the gap between them in points. Empty when the table has no bounds (an older run).
    """
    if "leakage_bound" not in long:
        return pd.DataFrame()
    measured = long[(long["n"] > 0) & pd.to_numeric(long["leakage_bound"], errors="coerce").lt(100.0)]
    rows = []
    for protocol, part in measured.groupby("protocol", sort=False):
        lik = part[part["attack"].str.startswith(f"{NOISE_LAW_ATTACK} [")]
        best = part.loc[part["leakage_mean"].idxmax()]
        entry = {"protocol": protocol}
        if len(lik):
            first = lik.iloc[0]
            entry.update({f"{NOISE_LAW_ATTACK} leakage": _fmt(first["leakage_mean"]),
                          "bound": _fmt(first["leakage_bound"]), "gap (points)": _fmt(first["bound_gap"])})
        else:
            entry.update({f"{NOISE_LAW_ATTACK} leakage": "-", "bound": "-", "gap (points)": "-"})
        entry.update({"strongest attack": str(best["attack"]), "its leakage": _fmt(best["leakage_mean"]),
                      "its bound": _fmt(best["leakage_bound"]), "its gap (points)": _fmt(best["bound_gap"])})
        rows.append(entry)
    return pd.DataFrame(rows)


def _confidentiality_table(conf: pd.DataFrame) -> pd.DataFrame:
    if conf.empty:
        return conf
    out = conf.copy()
    out["observer_leakage"] = out["observer_leakage"].map(
        lambda v: _fmt(v) if v is not None and pd.notna(v) else "none decided (chance, 50)")
    out["span_s"] = out["span_s"].map(lambda v: f"{v:.2f}")
    return out


def _blocks(comparison: Any, long: pd.DataFrame, front: pd.DataFrame, figures: dict[str, Path]) -> list[Block]:
    p = comparison.plan
    applicable = int((long["n"] > 0).sum())
    matrix_table, matrix_notes = _compact_matrix(p, long)
    blocks: list[Block] = [
        ("h1", f"parley compare: {p.dataset}{' (quick)' if p.quick else ''}"),
        ("p", f"{len(p.rows)} protocol configurations × {len(p.columns)} attack columns; {len(p.cells)} cells apply, "
              f"{applicable} measured, {p.repeats} repeat(s) each. This invocation: {comparison.wall_s:.0f} s, "
              f"{comparison.ran} study rows run, {comparison.skipped} found done in `study/`"
              f"{', audit table reused' if comparison.audit_reused else ''}. Leakage is "
              "the balanced accuracy in % of the adversary's reconstruction of the protected attribute (50 % is a "
              "coin flip). Leakage below is computed from the study's rows of this run (`study/results.csv`, "
              "reduced to `matrix_long.csv`); the utility of a metric-query configuration is the "
              f"{_metric_utility_label(front)} of that configuration (`utility.csv`: median and 90th percentile "
              "per audit metric), not the few noisy answers of its runs."),
        ("h2", "Which protocol under which threat model" + (" (a smoke check)" if p.quick else "")),
        *([("p", QUICK_CAVEAT.format(repeats=p.repeats, audit_runs=p.audit_runs))] if p.quick else []),
        ("ul", recommendations(front, comparison.confidentiality)),
        ("h2", "Leakage matrix"),
        ("p", "Rows: protocol configurations; columns: attacks under one threat model. A cell is mean ± std over "
              "repeats; '·' marks an attack that reads another exchange; 'gave up [k]' an attack that ran and stopped, "
              "'refused [k]' one whose query the protocol refused, with the message [k] below. Every reason in full: "
              "`matrix.csv` (wide) and `matrix_long.csv` (numbers)."),
        ("table", matrix_table),
        ("ul", matrix_notes),
        ("h2", "The strongest attack against the bound"),
        ("p", "For every configuration whose runs spent a finite epsilon: the leakage the epsilon allows, "
              "(e^ε + δ)/(1 + e^ε) in %, the cap on the expected balanced accuracy of guessing one person's "
              "attribute (mean over the runs of the ε they spent), beside the likelihood attack (one query of n "
              "random-subset models decoded under the mechanism's own noise law: exact maximum likelihood by "
              "MILP, or Gibbs posterior marginals) and the strongest attack of the row. The gap is the bound "
              "minus the leakage, in points: how much the guarantee would still allow that no attack here "
              "reached."),
        ("table", bound_gaps(long) if len(bound_gaps(long)) else pd.DataFrame(
            [{"bounds": "not measured (a table written before the bound columns)"}])),
        ("h2", "Leakage against utility"),
        ("p", "Utility as each protocol defines it: " + "; ".join(
            f"{flow}: {_utility_label(front, flow)}" + (f" and {u.fairness_label}" if u.fairness_key else "")
            for flow, u in UTILITY.items())
              + ". The y axis is the worst leakage over the attacks that apply to the configuration."),
        ("img", ("frontier", figures["frontier"])),
        ("p", "`on_frontier`: no other configuration of the same exchange leaks less (worst case, below chance "
              "ranked as chance) and is at least as useful, or leaks as little and is more useful. At equal epsilon:"),
        ("ul", equal_epsilon(front) or ["no epsilon is shared by two protocols of one exchange"]),
        ("table", front[["protocol", "flow", "utility", *(["utility_p90"] if "utility_p90" in front else []),
                         "unfairness", "worst_leakage", "worst_attack",
                         "epsilon_spent_max", "on_frontier"]].map(_fmt)),
        *[("p", note) for note in unseeded_notes(front)],
        ("h2", "Whole-scenario privacy audit"),
        ("p", "Each auditable configuration runs as a whole scenario (local parties, signed envelopes, ledger) on a "
              "fixed audit set and on its neighbour that differs in one person's protected attribute, under many "
              "seeds; the output audited is the adversary's view of that person on the wire (the answer to a "
              "query on a model accepting only them, or their released attribute). cov-threshold answers about "
              "the training set: its neighbours differ in one person's A there, the data center's hypothesis "
              "query is held fixed (DP must hold for every query), the pair is chosen so that the person's A "
              "carries one hypothesis across rho, and the view is whether that hypothesis is in the accept set "
              "on the wire. Clopper-Pearson bound at "
              f"alpha = 0.05; {_audit_size_words(comparison.audits, p.audit_runs)} on an audit set of "
              f"{p.audit_dataset['audit_size']} people "
              f"(training set {p.audit_dataset['train_size']}) of {p.dataset}. A bound at "
              "or below the claim is consistent with it (an audit can refute a claim, never prove one); a "
              "configuration without a claim has its bound reported beside \"no claim\"."),
        ("table", _audit_table(comparison.audits) if len(comparison.audits) else pd.DataFrame(
            [{"audit": "not run"}])),
    ]
    phases = getattr(comparison, "phases", None)
    if phases:  # where this invocation's seconds went (the report's own time is in invocation.json)
        blocks += [("h2", "Where the time went"),
                   ("table", pd.DataFrame([{"phase": name, "wall s": f"{seconds:.1f}"}
                                           for name, seconds in phases.items()])),
                   ("p", "Each study cell's run folder (`study/cells/`) keeps its `result.json` and its transcript; "
                         "its own `report.html` is not drawn during the comparison (this report links to none), "
                         "`parley.scenarios.study.engine.draw_run_report(FOLDER)` draws it when asked for.")]
    if "audit" in figures:
        blocks.append(("img", ("audit", figures["audit"])))
    blocks += [
        ("h2", "What a passive observer learns, with and without confidential payloads"),
        ("p", "The passive-observer scenarios run twice, payloads in clear and sealed (X25519 + ChaCha20-Poly1305). "
              "Sealed, the observer still sees who talks to whom, every envelope's kind, its size and its time."),
        ("table", _confidentiality_table(comparison.confidentiality)),
        ("h2", "Settings"),
        ("p", "Attack settings (the only tuning of the comparison): " + "; ".join(
            f"{name} {settings}" for name, settings in ATTACK_SETTINGS.items() if any(
                c.attack["name"] == name for c in p.columns))),
        ("p", "Data sizes per flow: " + "; ".join(sorted({f"{r.flow} {r.dataset}" for r in p.rows}))),
    ]
    return blocks


def unseeded_notes(front: pd.DataFrame) -> list[str]:
    """A sentence per configuration of ``front`` whose utility the seed does not fix, with its spread."""
    return [f"`{name}`'s utility is not fixed by the seed: {why}." for name, why in UNSEEDED_SPREAD.items()
            if (front["protocol"] == name).any()]


def _compact_matrix(p: Any, long: pd.DataFrame) -> tuple[pd.DataFrame, list[str]]:
    """The matrix for reading: numbers; '·' where the exchange differs; 'gave up [k]' / 'refused [k]' with notes."""
    notes: dict[str, int] = {}

    def text(r: pd.Series) -> str:
        if r["n"]:
            mark = " (nobody revealed)" if r["reason"] else ""
            return f"{r['leakage_mean']:.1f} ± {r['leakage_std']:.1f}{mark}"
        if "reads" in r["reason"] and "exchange" in r["reason"]:
            return "· (other flow)"
        kind, _, message = r["reason"].partition(": ")
        number = notes.setdefault(message, len(notes) + 1)
        return f"{kind} [{number}]"

    wide = long.assign(cell=long.apply(text, axis=1)).pivot(index="protocol", columns="attack", values="cell")
    wide = wide.loc[[r.label for r in p.rows], [c.label for c in p.columns]]
    keep = [c for c in wide.columns if not (wide[c] == "· (other flow)").all()]
    return wide[keep].reset_index(), [f"[{k}] {message}" for message, k in notes.items()]


def render_markdown(blocks: list[Block]) -> str:
    """The report's blocks (headings, paragraphs, lists, figures, tables) as one Markdown page."""
    out = []
    for kind, content in blocks:
        if kind == "h1":
            out += [f"# {content}", ""]
        elif kind == "h2":
            out += [f"## {content}", ""]
        elif kind == "p":
            out += [content, ""]
        elif kind == "ul":
            out += [f"- {line}" for line in content] + [""]
        elif kind == "img":
            name, path = content
            out += [f"![{name}]({path.name})", ""]
        elif kind == "table":
            cols = [str(c) for c in content.columns]
            out += ["| " + " | ".join(cols) + " |", "|" + "---|" * len(cols)]
            out += ["| " + " | ".join(str(v).replace("|", "\\|") for v in row) + " |"
                    for row in content.itertuples(index=False)]
            out.append("")
    return "\n".join(out)


def _inline(text: str) -> str:
    """Escape, then the two Markdown marks the report uses: **bold** and `code`."""
    parts = html.escape(text).split("**")
    text = "".join(f"<strong>{p}</strong>" if i % 2 else p for i, p in enumerate(parts))
    parts = text.split("`")
    return "".join(f"<code>{p}</code>" if i % 2 else p for i, p in enumerate(parts))


def render_html(blocks: list[Block]) -> str:
    """Self-contained HTML: figures as base64 data URIs."""
    title = next((c for k, c in blocks if k == "h1"), "parley compare")
    body = []
    for kind, content in blocks:
        if kind in ("h1", "h2"):
            body.append(f"<{kind}>{html.escape(content)}</{kind}>")
        elif kind == "p":
            body.append(f"<p>{_inline(content)}</p>")
        elif kind == "ul":
            body.append("<ul>" + "".join(f"<li>{_inline(line)}</li>" for line in content) + "</ul>")
        elif kind == "img":
            name, path = content
            data = base64.b64encode(path.read_bytes()).decode("ascii")
            body.append(f'<figure><img alt="{html.escape(name)}" src="data:image/png;base64,{data}">'
                        f"<figcaption>{html.escape(path.name)}</figcaption></figure>")
        elif kind == "table":
            head = "".join(f"<th>{html.escape(str(c))}</th>" for c in content.columns)
            rows = "".join("<tr>" + "".join(f"<td>{html.escape(str(v))}</td>" for v in row) + "</tr>"
                           for row in content.itertuples(index=False))
            body.append(f"<div class=\"wrap\"><table><thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div>")
    style = ("body{font-family:system-ui,sans-serif;max-width:1400px;margin:2em auto;padding:0 1em;line-height:1.45}"
             "table{border-collapse:collapse;font-size:12px}td,th{border:1px solid #ccc;padding:3px 6px;"
             "vertical-align:top}th{background:#f3f3f3}.wrap{overflow-x:auto}img{max-width:100%}"
             "code{background:#f3f3f3;padding:0 3px}")
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title>"
            f"<style>{style}</style></head><body>\n" + "\n".join(body) + "\n</body></html>\n")


def write_report(comparison: Any, long: pd.DataFrame, front: pd.DataFrame) -> Path:
    """Write every file of the comparison into ``comparison.out``; return the HTML report's path."""
    from parley.scenarios.compare.run import matrix_wide

    out: Path = comparison.out
    matrix_wide(comparison.plan, long).to_csv(out / "matrix.csv")
    long.to_csv(out / "matrix_long.csv", index=False)
    front.to_csv(out / "frontier.csv", index=False)
    comparison.audits.to_csv(out / "audit.csv", index=False)
    comparison.confidentiality.to_csv(out / "confidentiality.csv", index=False)
    figures = {"frontier": _frontier_png(front, out / "frontier.png")}
    audit_png = _audit_png(comparison.audits, out / "audit.png") if len(comparison.audits) else None
    if audit_png is not None:
        figures["audit"] = audit_png
    blocks = _blocks(comparison, long, front, figures)
    (out / "report.md").write_text(render_markdown(blocks), encoding="utf-8")
    path = out / "report.html"
    path.write_text(render_html(blocks), encoding="utf-8")
    return path
