"""The reconstruction-correction paper's tables.

The tolerances, ThresholdOptimizer, the combination with Attribute-Reveal, the authors' configuration and its
ablations, the forest, CorrelationRemover and hidden fairness.
"""

from __future__ import annotations

import ast
import json

import pandas as pd

from parley.scenarios.reproductions.query_leakage import CONCEAL_ROOTS
from parley.scenarios.reproductions.table import Table, _claims, _exponents, _g, _n, _num, _ok, _signed, _study

CORRECTION_ROOTS = ("parley.parties.attacks.reconstruction_correction", "parley.parties.attacks.solvers",
                    "parley.protocols.mechanisms.fairness_certificate", "parley.parties.learners.fair_targets",
                    "parley.scenarios.datasets")


METRICS = ("sp", "pe", "eo", "eodds")

#: A gain (in points) within this of zero counts as unchanged.
EPS = 1e-9


def _tally(gain: pd.Series) -> str:
    """``worse in 1, unchanged in 1, better in 22 of 24 cells`` for gains in points."""
    return (f"worse in {int((gain < -EPS).sum())}, unchanged in {int((gain.abs() <= EPS).sum())}, better in "
            f"{int((gain > EPS).sum())} of {len(gain)} cells")


#: A configuration's row: (label, study folder, the columns its rows equal in that folder's results).
Configuration = tuple[str, str, dict[str, object]]


CORRECTION_RUNS: tuple[Configuration, ...] = (("authors (`correction-authors`)", "correction-authors", {}),
                                              ("parley default (`correction-seeds`)", "correction-seeds", {}))


#: The ablations: one part of the authors' configuration swapped for parley's, and the converse for the forest.
ABLATION_RUNS: tuple[Configuration, ...] = (
    ("authors, parley's forest", "correction-authors-ablations", {"attack__max_depth": 64}),
    ("authors, complete rows one-hot", "correction-authors-ablations", {"dataset__variant": "complete"}),
    ("authors, parley's exponents", "correction-authors-ablations",
     {"attack__max_depth": 6, "dataset__variant": "openml-1590"}),
    ("parley default, the authors' forest", "correction-seeds-forest", {}))


def _configurations(results: pd.DataFrame, paper: pd.DataFrame, runs: tuple[Configuration, ...]) -> list[str]:
    """One row per configuration: mean ± std over its seeds, the exponents chosen, the longest solve."""
    lines = ["| configuration | baseline | corrected | gain | corrected > baseline | balanced: baseline → corrected "
             "| exponents chosen |", "|---|---|---|---|---|---|---|"]
    longest = []
    for label, run, where in runs:
        rows = _ok(results, run=run, **where)
        if rows.empty:
            lines.append(f"| {label} | not recorded | | | | | |")
            continue
        base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy", "improvement"))
        lines.append(f"| {label} | {base.mean():.2f} ± {base.std(ddof=1):.2f} | {corr.mean():.2f} ± "
                     f"{corr.std(ddof=1):.2f} | {_signed(gain.mean())} ± {gain.std(ddof=1):.2f} "
                     f"| {int((gain > 0).sum())} of {len(gain)} | {_num(rows, 'baseline_leakage').mean():.1f} → "
                     f"{_num(rows, 'leakage').mean():.1f} | {_exponents(_num(rows, 'exponent'))} |")
        status = rows["solver_status"].astype(str)
        declined = int((status == "declined").sum())
        longest.append(f"{label.split(' (')[0]} {_num(rows, 'solve_s').max():.1f} s"
                       + ("" if status.isin(["optimal", "declined"]).all() else " (not every solve optimal)")
                       + (f" ({declined} of {len(rows)} declined)" if declined else ""))
    return lines + ["", "Longest correction solve (every one optimal unless said): " + "; ".join(longest) + ".", "",
                    f"The paper: {_claims(paper)}."]


def _correction_authors(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    return _configurations(results, paper, CORRECTION_RUNS)


def _ablations(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    return _configurations(results, paper, ABLATION_RUNS)


FORESTS = ((64, 2, 2, "parley default (unlimited depth, split 2, leaf 2)"),
           (6, 2, 2, "depth 6 (split 2, leaf 2)"),
           (6, 10, 1, "the authors' (depth 6, split 10, leaf 1)"))


def _forest_depth(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| forest | cells | baseline (%) | corrected (%) | mean gain | corrected ≥ baseline | better / unchanged "
             "/ worse | lowest gain | changes that were right |", "|---|---|---|---|---|---|---|---|---|"]
    for depth, split, leaf, label in FORESTS:
        rows = _ok(results, attack__max_depth=depth, attack__min_samples_split=split, attack__min_samples_leaf=leaf)
        base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy", "improvement"))
        changed, right = _num(rows, "changed").sum(), _num(rows, "changed_correctly").sum()
        eps = 1e-9
        share = f"{100 * right / changed:.1f} % ({_n(right)} of {_n(changed)})" if changed else "–"
        lines.append(f"| {label} | {len(rows)} | {base.mean():.1f} | {corr.mean():.1f} | {_signed(gain.mean())} "
                     f"| {int((gain >= -eps).sum())} of {len(gain)} | {int((gain > eps).sum())} / "
                     f"{int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} | {_signed(gain.min())} "
                     f"| {share} |")
    return lines + ["", f"The paper: {_claims(paper)}."]


def _valid(rows: pd.DataFrame) -> pd.Series:
    """Whether each row's estimated constraint holds on the training set (its unfairness there <= the tolerance)."""
    def one(row: pd.Series) -> bool:
        measured = pd.to_numeric(row.get(f"target_train_{row['constraint_metric']}"), errors="coerce")
        return bool(measured <= float(row["constraint_tolerance"]) + 1e-12)
    return rows.apply(one, axis=1) if len(rows) else pd.Series(dtype=bool)


def _counts(values: pd.Series) -> str:
    counts = values.astype(str).str.upper().value_counts()
    return ", ".join(f"{name} ×{count}" for name, count in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


REMOVER_SETS = (("adult", "Adult (sex)"), ("compas", "COMPAS (race)"), ("german", "German (sex)"))


BASELINES = (("xy", "A1"), ("xy-yhat", "A2"))


def _correction_remover(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | adversary | runs | baseline (%) | corrected (%) | gain | better / unchanged / worse "
             "| declined | metric estimated | tolerance estimated | estimate valid on the training set "
             "| target: accuracy, SP |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    eps = 1e-9
    for dataset, label in REMOVER_SETS:
        for baseline, adversary in BASELINES:
            rows = _ok(results, dataset__name=dataset, attack__baseline=baseline)
            if rows.empty:
                lines.append(f"| {label} | {adversary} | not recorded | | | | | | | | | |")
                continue
            base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy",
                                                              "improvement"))
            tol = _num(rows, "constraint_tolerance")
            declined = int((rows["solver_status"].astype(str) == "declined").sum())
            lines.append(
                f"| {label} | {adversary} | {len(rows)} | {base.mean():.2f} ± {base.std(ddof=1):.2f} "
                f"| {corr.mean():.2f} ± {corr.std(ddof=1):.2f} | {_signed(gain.mean())} ± {gain.std(ddof=1):.2f} "
                f"| {int((gain > eps).sum())} / {int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} "
                f"| {declined} | {_counts(rows['constraint_metric'])} | {tol.mean():.4f} ({tol.min():.4f}–"
                f"{tol.max():.4f}) | {int(_valid(rows).sum())} of {len(rows)} "
                f"| {100 * _num(rows, 'target_train_accuracy').mean():.1f} %, "
                f"{_num(rows, 'target_train_sp').mean():.3f} |")
    return lines + ["", f"The paper: {_claims(paper)}."]


def _target(cell: str) -> tuple[str, str, str]:
    """(learner, metric trained, tolerance) of a results row's ``learner`` cell (a JSON table)."""
    spec = json.loads(cell.replace("'", '"'))
    name = str(spec["name"])
    metric = str(spec.get("metric", "sp" if name == "exponentiated-gradient" else "–"))
    tolerance = _g(float(spec.get("tolerance", 0.0))) if name == "exponentiated-gradient" else \
        ("0 (aimed at)" if name == "threshold-optimizer" else "none")
    return name, metric, tolerance


HIDDEN_TARGETS = {"exponentiated-gradient": "ExponentiatedGradient", "threshold-optimizer": "ThresholdOptimizer",
                  "correlation-remover": "CorrelationRemover"}


#: The runs of the hidden-fairness table: the paper's two adversaries (A2 on (X, y, yhat), A1 on (X, y)).
HIDDEN_RUNS = (("correction-hidden", "A2"), ("correction-hidden-a1", "A1"))


def _hidden_cells(done: pd.DataFrame) -> tuple[list[str], dict[str, list[float]]]:
    """The per-cell rows of one adversary's run, and per target: cells, metric named, valid, kept, gains."""
    lines: list[str] = []
    tally: dict[str, list[float]] = {}
    for dataset, label in REMOVER_SETS:
        rows = done[done["dataset.name"] == dataset]
        for cell in dict.fromkeys(rows["learner"].astype(str)):
            name, metric, tolerance = _target(cell)
            cert = rows[(rows["learner"].astype(str) == cell) & (rows["attack.fairness"] == "certificate")]
            est = rows[(rows["learner"].astype(str) == cell) & (rows["attack.fairness"] == "estimated")]
            if cert.empty or est.empty:
                lines.append(f"| {label} | {HIDDEN_TARGETS[name]} | {metric.upper()}, {tolerance} | not recorded "
                             "| | | | |")
                continue
            c, e = cert.iloc[0], est.iloc[0]
            valid = bool(_valid(est).iloc[0])
            counts = tally.setdefault(HIDDEN_TARGETS[name], [0, 0, 0, 0, 0.0, 0.0])
            for k, value in enumerate((1, str(e["constraint_metric"]) == metric, valid,
                                       float(e["improvement"]) >= -1e-9, 100 * float(c["improvement"]),
                                       100 * float(e["improvement"]))):
                counts[k] += float(value)
            certified = f"{str(c['constraint_metric']).upper()} {float(c['certificate_value']):.4f}"
            lines.append(f"| {label} | {HIDDEN_TARGETS[name]} | {metric.upper()}, {tolerance} | {certified} "
                         f"| {_signed(100 * float(c['improvement']))} | {str(e['constraint_metric']).upper()}, "
                         f"{float(e['constraint_tolerance']):.4f} | {'yes' if valid else 'no'} "
                         f"| {_signed(100 * float(e['improvement']))} |")
    return lines, tally


def _correction_hidden(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    """Adversary A2's cells one by one, then per adversary and target what the estimate found and what it gained."""
    done = _ok(results)
    runs = {adversary: _hidden_cells(_ok(done, run=run)) for run, adversary in HIDDEN_RUNS}
    lines = ["Adversary A2, cell by cell:", "",
             "| data set | target | trained: metric, tolerance | certified | corrected − baseline, certificate "
             "| estimated: metric, tolerance | estimate valid | corrected − baseline, estimated |",
             "|---|---|---|---|---|---|---|---|", *runs["A2"][0]]
    lines += ["", "| adversary | target | cells | estimate names the metric trained under | estimate valid on the "
                  "training set | estimated correction ≥ baseline | mean gain: certificate / estimated |",
              "|---|---|---|---|---|---|---|"]
    for adversary, (_, tally) in runs.items():
        if not tally:
            lines.append(f"| {adversary} | not recorded | | | | | |")
        for target, (cells_n, named_right, holds, kept, cert_gain, est_gain) in tally.items():
            n = int(cells_n)
            named = "– (optimises none)" if target == "CorrelationRemover" else f"{int(named_right)} of {n}"
            lines.append(f"| {adversary} | {target} | {n} | {named} | {int(holds)} of {n} | {int(kept)} of {n} "
                         f"| {_signed(cert_gain / n)} / {_signed(est_gain / n)} |")
    return lines + ["", f"The paper: {_claims(paper)}."]


def _forest_search(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | forest | runs | baseline (%) | corrected (%) | gain | better / unchanged / worse "
             "| cross-validated accuracy of the search | depths chosen |", "|---|---|---|---|---|---|---|---|---|"]
    eps = 1e-9
    for dataset, label in REMOVER_SETS:
        for forest, name in (("fixed", "fixed (parley default)"), ("search", "searched (20 candidates, 3 folds)")):
            rows = _ok(results, dataset__name=dataset, attack__forest=forest)
            if rows.empty:
                lines.append(f"| {label} | {name} | not recorded | | | | | | |")
                continue
            base, corr, gain = (100 * _num(rows, c) for c in ("baseline_accuracy", "corrected_accuracy",
                                                              "improvement"))
            chosen = [ast.literal_eval(str(cell)) for cell in rows["attack_forest"].dropna()] \
                if "attack_forest" in rows else []
            depths = pd.Series([str(c.get("max_depth") or "unlimited") for c in chosen if isinstance(c, dict)])
            score = _num(rows, "attack_forest_cv_score") if "attack_forest_cv_score" in rows else pd.Series()
            lines.append(
                f"| {label} | {name} | {len(rows)} | {base.mean():.2f} ± {base.std(ddof=1):.2f} "
                f"| {corr.mean():.2f} ± {corr.std(ddof=1):.2f} | {_signed(gain.mean())} "
                f"| {int((gain > eps).sum())} / {int((gain.abs() <= eps).sum())} / {int((gain < -eps).sum())} "
                f"| {f'{100 * score.mean():.1f} %' if len(score) else '–'} "
                f"| {', '.join(f'{d} (×{c})' if c > 1 else d for d, c in depths.value_counts().items()) or '–'} |")
    return lines + ["", f"The paper: {_claims(paper)}."]


def _tolerance_cell(rows: pd.DataFrame) -> str:
    """``baseline / corrected (gain)`` of one (tolerance, metric) cell, accuracies in %."""
    if rows.empty:
        return "not recorded"
    row = rows.iloc[0]
    base, corrected = 100 * float(row["baseline_accuracy"]), 100 * float(row["corrected_accuracy"])
    return f"{base:.1f} / {corrected:.1f} ({_signed(100 * float(row['improvement']))})"


def _right_changes(rows: pd.DataFrame) -> str:
    """The share of changed guesses that were right, over the cells that changed any."""
    changed, right = _num(rows, "changed"), _num(rows, "changed_correctly")
    acted = int((changed > 0).sum())
    if not acted:
        return "no cell changed a guess"
    return (f"the changed guesses were right in {100 * right.sum() / changed.sum():.1f} % of the changes "
            f"({_n(right.sum())} of {_n(changed.sum())}, over the {acted} cells that changed any)")


def _tolerance(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines: list[str] = []
    done = _ok(results)
    for dataset, label in REMOVER_SETS:
        rows = done[done["dataset.name"] == dataset]
        lines += [f"**{label}**: baseline / corrected accuracy (%), gain in points", "",
                  "| tolerance | " + " | ".join(m.upper() for m in METRICS) + " |", "|---" * (len(METRICS) + 1) + "|"]
        tolerance = pd.to_numeric(rows["learner.tolerance"], errors="coerce")
        for value in sorted(tolerance.dropna().unique()):
            at = rows[tolerance == value]
            cells = [_tolerance_cell(at[at["learner.metric"] == metric]) for metric in METRICS]
            lines.append(f"| {_g(float(value))} | " + " | ".join(cells) + " |")
        gain = 100 * _num(rows, "improvement")
        if gain.empty:
            lines += ["", f"{label}: not recorded", ""]
            continue
        declined = int(pd.to_numeric(rows["exponent"], errors="coerce").isna().sum())
        lines += ["", f"{label}: {_tally(gain)}; mean gain {_signed(gain.mean())} points, lowest "
                      f"{_signed(gain.min())}; {_right_changes(rows)}; declined (no exponent beat the uncorrected "
                      f"guess on validation) in {declined}; correction solve {1000 * _num(rows, 'solve_s').mean():.0f} "
                      f"ms on average, {1000 * _num(rows, 'solve_s').max():.0f} ms at most.", ""]
    return lines + [f"The paper: {_claims(paper)}."]


def _pair(rows: pd.DataFrame, column: str) -> str:
    """``A1 / A2`` of one column in %, from a (data set, metric, fairness) slice."""
    values = []
    for baseline, _ in BASELINES:
        value = _num(rows[rows["attack.baseline"].astype(str) == baseline], column)
        values.append(f"{100 * value.iloc[0]:.1f}" if len(value) else "–")
    return " / ".join(values)


def _threshold_row(label: str, metric: str, rows: pd.DataFrame) -> str:
    cert = rows[rows["attack.fairness"].astype(str) == "certificate"]
    est = rows[rows["attack.fairness"].astype(str) == "estimated"]
    if cert.empty or est.empty:
        return f"| {label} | {metric.upper()} | not recorded | | | |"
    guess = est.iloc[0]
    return (f"| {label} | {metric.upper()} (certified {float(cert['certificate_value'].iloc[0]):.4f}) "
            f"| {_pair(cert, 'baseline_accuracy')} | {_pair(cert, 'corrected_accuracy')} "
            f"| {str(guess['constraint_metric']).upper()}, {float(guess['constraint_tolerance']):.4f} "
            f"| {_pair(est, 'corrected_accuracy')} |")


def _threshold(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| data set | metric | baseline A1 / A2 | certificate: corrected A1 / A2 | estimated: metric, tolerance "
             "| estimated: corrected A1 / A2 |", "|---|---|---|---|---|---|"]
    done = _ok(results)
    for dataset, label in REMOVER_SETS:
        rows = done[done["dataset.name"] == dataset]
        lines += [_threshold_row(label, metric, rows[rows["learner.metric"] == metric]) for metric in METRICS]
    gain = 100 * _num(done, "improvement")
    kept = [f"{label.split(' (')[0]} {int((g >= -EPS).sum())} of {len(g)}" for dataset, label in REMOVER_SETS
            if len(g := 100 * _num(done[done["dataset.name"] == dataset], "improvement"))]
    means = []
    for baseline, adversary in BASELINES:
        for fairness in ("certificate", "estimated"):
            part = done[(done["attack.baseline"].astype(str) == baseline) & (done["attack.fairness"] == fairness)]
            means.append(f"{adversary} {fairness} {_signed(100 * _num(part, 'improvement').mean())}")
    still = [f"{label.split(' (')[0]} {int((_num(done[done['dataset.name'] == dataset], 'changed') == 0).sum())}"
             for dataset, label in REMOVER_SETS]
    return lines + ["", f"Corrected at least as accurate as the baseline in {int((gain >= -EPS).sum())} of {len(gain)} "
                        f"cells ({', '.join(kept)}); {_tally(gain)}; no guess changed in "
                        f"{int((_num(done, 'changed') == 0).sum())} ({', '.join(still)}). Mean gain in points: "
                        f"{', '.join(means)}.", "", f"The paper: {_claims(paper)}."]


def _leak(rows: pd.DataFrame) -> str:
    leak = _num(rows, "leakage")
    return f"{leak.mean():.1f} ± {leak.std(ddof=1):.1f}" if len(leak) else "not recorded"


def _conceal_correction(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    lines = ["| protocol | epsilon | leakage compressed-sensing (%) | leakage corrected (%) | guesses changed "
             "(mean) |", "|---|---|---|---|---|"]
    done = _ok(results)
    gaps = []
    for (protocol, epsilon), rows in done.groupby(["protocol.name", "protocol.epsilon"], sort=True):
        plain = rows[rows["attack.name"] == "compressed-sensing"]
        fixed = rows[rows["attack.name"] == "corrected-compressed-sensing"]
        lines.append(f"| {protocol} | {_g(float(epsilon))} | {_leak(plain)} | {_leak(fixed)} "
                     f"| {_num(fixed, 'attack_correction_changed').mean():.1f} |")
        gaps.append(_num(fixed, "leakage").mean() - _num(plain, "leakage").mean())
    fixed = done[done["attack.name"] == "corrected-compressed-sensing"]
    changed, released = _num(fixed, "attack_correction_changed"), _num(fixed, "attack_released_sp")
    plain_all = _num(done[done["attack.name"] == "compressed-sensing"], "leakage")
    return lines + [
        "", f"Runs per cell: {len(fixed) // max(len(gaps), 1)}. Corrected minus plain, difference of the cells' means: "
            f"{_signed(min(gaps), 1)} to {_signed(max(gaps), 1)} points (mean {_signed(sum(gaps) / len(gaps), 1)}); "
            f"leakage of the plain decode over all its runs {plain_all.min():.1f} to {plain_all.max():.1f} %. "
            f"The correction changed no guess in {int((changed == 0).sum())} of {len(changed)} runs and at most "
            f"{_n(changed.max())}; the released SP lay outside [−1, 1] in {int((released.abs() > 1).sum())}."
        if gaps else "", "", f"The paper: {_claims(paper)}."]


#: Tolerance bands of the 49-tolerance summary: (low, high] (the first band includes 0).
TOLERANCE_BANDS = ((-1.0, 0.005), (0.005, 0.02), (0.02, 0.05), (0.05, 1.0))


def _tolerance_49(results: pd.DataFrame, paper: pd.DataFrame) -> list[str]:
    """One summary row per data set and metric, then Adult SP (Fig. 2's top-left panel) at every tolerance."""
    done = _ok(results)
    lines = ["| data set, metric | tolerances | better / unchanged / worse | gain: lowest, highest | mean gain "
             "| mean gain by tolerance: ≤ 0.005 / 0.005–0.02 / 0.02–0.05 / > 0.05 | median cell time (s) |",
             "|---|---|---|---|---|---|---|"]
    for (dataset, metric), rows in done.groupby(["dataset.name", "learner.metric"], sort=True):
        gain, tol = 100 * _num(rows, "improvement"), _num(rows, "learner.tolerance")
        bands = " / ".join(_signed(gain[(tol > low) & (tol <= high)].mean()) for low, high in TOLERANCE_BANDS)
        lines.append(f"| {dataset} {str(metric).upper()} | {len(rows)} | {int((gain > 1e-9).sum())} / "
                     f"{int((gain.abs() <= 1e-9).sum())} / {int((gain < -1e-9).sum())} "
                     f"| {_signed(gain.min())}, {_signed(gain.max())} | {_signed(gain.mean())} | {bands} "
                     f"| {_num(rows, 'wall_s').median():.1f} |")
    panel = _ok(done, dataset__name="adult", learner__metric="sp")
    panel = panel.sort_values("learner.tolerance", key=lambda c: pd.to_numeric(c, errors="coerce"))
    lines += ["", "Adult, SP, at each tolerance:", "",
              "| tolerance | certified value | baseline (%) | corrected (%) | gain |", "|---|---|---|---|---|"]
    for _, row in panel.iterrows():
        lines.append(f"| {_g(float(row['learner.tolerance']))} | {float(row['certificate_value']):.4f} "
                     f"| {100 * float(row['baseline_accuracy']):.2f} | {100 * float(row['corrected_accuracy']):.2f} "
                     f"| {_signed(100 * float(row['improvement']))} |")
    return lines + ["", f"The paper: {_claims(paper)}."]


TABLES = (
    Table("correction-tolerance", (_study("correction-tolerance", workers=1),), CORRECTION_ROOTS, _tolerance,
          ("scenarios/catalog/studies/correction-tolerance.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-threshold", (_study("correction-threshold", workers=1),), CORRECTION_ROOTS, _threshold,
          ("scenarios/catalog/studies/correction-threshold.toml", "scenarios/catalog/adult-correction.toml")),
    Table("conceal-correction", (_study("conceal-correction", workers=1),),
          CONCEAL_ROOTS + ("parley.parties.attacks.reconstruction_correction",), _conceal_correction,
          ("scenarios/catalog/studies/conceal-correction.toml", "scenarios/catalog/adult-conceal.toml")),
    Table("correction-ablations", (_study("correction-authors-ablations", workers=1),
                                   _study("correction-seeds-forest", workers=1)), CORRECTION_ROOTS, _ablations,
          ("scenarios/catalog/studies/correction-authors-ablations.toml",
           "scenarios/catalog/studies/correction-seeds-forest.toml",
           "scenarios/catalog/adult-correction-authors.toml", "scenarios/catalog/adult-correction.toml"),
          paper="correction-authors"),
    Table("correction-authors", (
        _study("correction-authors", workers=1), _study("correction-seeds", workers=1)),
          CORRECTION_ROOTS, _correction_authors,
          ("scenarios/catalog/studies/correction-authors.toml", "scenarios/catalog/studies/correction-seeds.toml",
           "scenarios/catalog/adult-correction-authors.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-depth", (_study("correction-forest-depth"),), CORRECTION_ROOTS, _forest_depth,
          ("scenarios/catalog/studies/correction-forest-depth.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-remover", (_study("correction-remover"),),
          CORRECTION_ROOTS + ("parley.parties.learners.correlation_remover",), _correction_remover,
          ("scenarios/catalog/studies/correction-remover.toml", "scenarios/catalog/adult-correction-remover.toml")),
    Table("correction-hidden", (_study("correction-hidden"), _study(
          "correction-hidden", "correction-hidden-a1", workers=1, extra=" --set attack.baseline=xy")),
          CORRECTION_ROOTS + ("parley.parties.learners.correlation_remover",), _correction_hidden,
          ("scenarios/catalog/studies/correction-hidden.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-forest-search", (_study("correction-forest-search"),),
          CORRECTION_ROOTS + ("parley.parties.attacks.correction_search",), _forest_search,
          ("scenarios/catalog/studies/correction-forest-search.toml", "scenarios/catalog/adult-correction.toml")),
    Table("correction-tolerance-49", (_study("correction-tolerance-49", workers=1),),
          CORRECTION_ROOTS, _tolerance_49,
          ("scenarios/catalog/studies/correction-tolerance-49.toml", "scenarios/catalog/adult-correction.toml")),
)
