"""Human-readable run reports: the short console table and ``report.md``."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from parley.protocols import get_protocol

__all__ = ["format_table", "ledger_table", "transcript_anchors", "write_report", "HEADLINE", "ROWS_DROPPED"]

#: Metrics shown first, in this order, when present.
HEADLINE = ("leakage", "leakage_bound", "exact_recovery", "attacked", "correct", "queries", "messages", "bytes",
            "avg_query_error", "median_query_error", "epsilon_spent", "delta_spent", "budget_refusals",
            "base_accuracy", "base_sp", "observer_leakage", "wall_s")


def _fmt(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e-3 and value != 0 else f"{value:,.4f}".rstrip("0").rstrip(".")
    if isinstance(value, int):
        return f"{value:,}"
    return str(value)


#: Said wherever a leakage figure of a partition-only reconstruction is shown.
SWAP_NOTE = ("The attack recovers a partition of the individuals, not which side is which: leakage is measured "
             "up to a swap of the two labels (the better labelling, as the paper scores it). With the labels as "
             "the attack wrote them it is {as_labelled} %, and `correct` counts those labels.")


def ledger_table(ledger: dict[str, Any] | None) -> list[str]:
    """Markdown lines: per ledger account (a querier, or a querier's purpose), spent against its budget."""
    if not ledger or not ledger.get("queriers"):
        return []
    lines = [f"Privacy budget ({ledger['composition']} composition), per ledger account:", "",
             "| account | spent epsilon | spent delta | budget epsilon | budget delta | answers charged |",
             "|---|---|---|---|---|---|"]
    for name, entry in ledger["queriers"].items():
        limit = entry.get("limit")
        lines.append(f"| {name} | {_fmt(entry['spent']['epsilon'])} | {_fmt(entry['spent']['delta'])} | "
                     f"{'no cap' if limit is None else _fmt(limit['epsilon'])} | "
                     f"{'no cap' if limit is None else _fmt(limit['delta'])} | {entry['debits']} |")
    return [*lines, ""]


def format_table(metrics: dict[str, Any], keys: tuple[str, ...] | None = None) -> str:
    """Two aligned columns, headline metrics first (all metrics if ``keys`` is None)."""
    order = [k for k in HEADLINE if k in metrics]
    if keys is None:
        order += [k for k in metrics if k not in order]
    else:
        order = [k for k in order if k in keys]
    width = max(len(k) for k in order) if order else 0
    return "\n".join(f"{k:<{width}}  {_fmt(metrics[k])}" for k in order)


def _what_was_asked(protocol: str, count: Any) -> str:
    """What ``queries`` counts: models queried, or the requests of a protocol with its own exchange."""
    flow = get_protocol(protocol).flow
    one, many = ("model query", "model queries") if flow == "metric-query" else (f"{flow} request", f"{flow} requests")
    return one if count == 1 else many


def transcript_anchors(anchors: dict[str, Any] | None) -> list[str]:
    """The report's lines on the transcript's key fingerprints and final head (what ``parley verify`` checks)."""
    if not anchors or not anchors.get("head"):
        return []
    keys = ",".join(f"{name}={fp}" for name, fp in anchors["keys"].items())
    return [
        "## Transcript anchors",
        "",
        f"Every party signed the final head after {anchors['messages']:,} messages. Keep these apart from the "
        "run folder: a transcript checked against them cannot have been rewritten, even with fresh keys.",
        "",
        f"- final head: `{anchors['head']}`",
        *(f"- key of {name}: `{fp}`" for name, fp in anchors["keys"].items()),
        "",
        f"    parley verify {anchors.get('file', 'transcript.jsonl')} --keys {keys} --head {anchors['head']}",
        "",
    ]


#: Added to the data set line when the loader dropped rows (a user CSV's rows with a blank cell in a used column).
ROWS_DROPPED = "; {count:,} row(s) of the file dropped for a missing value in a used column"


def _dropped(sizes: dict[str, Any]) -> str:
    count = sizes.get("rows_dropped") or 0
    return ROWS_DROPPED.format(count=count) if count else ""


def write_report(record: dict[str, Any], run_dir: Path) -> Path:
    """Write ``report.md``: what ran, what leaked, every metric, the files of the run."""
    m = record["metrics"]
    groups = record["groups"]
    lines = [
        f"# {record['scenario']}",
        "",
        record.get("description") or "",
        "",
        f"- data set: {record['dataset']} (protected: {record['protected']}, a=1 {groups['a=1']}, "
        f"a=0 {groups['a=0']}{''.join(f', {code} {label}' for code, label in list(groups.items())[2:])}); "
        f"audit set n = {record['sizes']['n_audit']:,}, "
        f"training set {record['sizes']['n_train']:,}{_dropped(record['sizes'])}",
        f"- protocol: `{record['protocol']}`; threat model: {record['threat_model']}; attack: `{record['attack']}`",
        f"- seed: {record['seed']}",
        "",
        f"The adversary attacked {m['attacked']} individuals and reconstructed {m['correct']} correctly "
        f"({m['undecided']} undecided): "
        f"leakage (balanced accuracy, Def. 5.1) {_fmt(m['leakage'])} % after {m['queries']} answered "
        f"{_what_was_asked(record['protocol'], m['queries'])}.",
        *(["", SWAP_NOTE.format(as_labelled=_fmt(m.get("leakage_as_labelled")))]
          if m.get("leakage_up_to_swap") else []),
        "",
        "| metric | value |",
        "|---|---|",
        *(f"| {k} | {_fmt(v)} |" for k, v in m.items()),
        "",
        *ledger_table(record.get("ledger")),
        "Files: `result.json` (every number above), `transcript.jsonl` (every signed message; check it with "
        "`parley verify transcript.jsonl`)" + (", `ledger.sqlite` (every debit of privacy budget)." if
                                                 m.get("epsilon_spent") is not None else "."),
        "",
        *transcript_anchors(record.get("transcript")),
    ]
    path = run_dir / "report.md"
    path.write_text("\n".join(lines), encoding="utf-8")
    return path
