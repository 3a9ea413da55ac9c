"""``report.html``: one self-contained page a person can look at after a run.

The page tells the story ``parley run --explain`` tells, with pictures: a message sequence
diagram of the parties (who sent what to whom, refusals marked, sizes of sealed payloads), what
the adversary had pinned down against the queries answered, the leakage beside its bound, the
budget spent against the budget, and the transcript's verification status with the key
fingerprints. Figures are inline SVG or PNG data URIs, so the file opens anywhere, offline.

Everything on the page is read from the run folder (``result.json`` and the transcript), never
from a live party, so the page of an old run can be redrawn (:func:`write_html_report`).
"""

from __future__ import annotations

import base64
import html
import io
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.confidential import is_sealed
from parley.parties.transcript import TranscriptFollower, read_transcript
from parley.protocols.errors import TranscriptError
from parley.scenarios.explain import describe, explain_record
from parley.scenarios.words import exact_digits

__all__ = ["MAX_DIAGRAM_ROWS", "run_parties", "write_html_report"]

#: Messages drawn in the sequence diagram; a longer run shows its first and last ones and says how many are left out.
MAX_DIAGRAM_ROWS = 40
_ROW, _TOP, _COLUMN = 26, 54, 190
_KIND_COLOUR = {"refusal": "#c0392b"}
_ROLE_ORDER = ("data-center", "compliance", "adversary", "observer")


#: Held while matplotlib is imported and set to Agg: a figure waits for a warm-up under way (:func:`warm_up`)
#: rather than run the same import and ``matplotlib.use`` beside it.
_PYPLOT = threading.Lock()


def _pyplot() -> Any:
    """``matplotlib.pyplot`` on the Agg backend (files only, no display)."""
    with _PYPLOT:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    return plt


def warm_up() -> threading.Thread:
    """Import matplotlib in a thread of its own, while the caller goes on; the thread, started.

    The run calls it when its parties are in other processes (over Ray): the driver then spends the
    parties' start and its first calls waiting, and the figures' import (0.3 s on the development
    machine) is done by the time the report is drawn. A figure drawn meanwhile waits for it. In process
    nothing waits, and a second thread would only take turns with the run.
    """
    thread = threading.Thread(target=_pyplot, name="parley-report-warm-up", daemon=True)
    thread.start()
    return thread


def _png(fig: Any) -> str:
    plt = _pyplot()
    buffer = io.BytesIO()
    fig.savefig(buffer, format="png", dpi=100)
    plt.close(fig)
    return "data:image/png;base64," + base64.b64encode(buffer.getvalue()).decode("ascii")


def _payload_bytes(envelope: Any) -> int:
    """Array bytes a payload carries (what dominates the wire); a sealed payload's ciphertext size."""
    total = 0
    stack: list[Any] = [envelope.payload]
    while stack:
        item = stack.pop()
        if isinstance(item, np.ndarray):
            total += int(item.nbytes)
        elif isinstance(item, Mapping):
            stack.extend(item.values())
        elif isinstance(item, (list, tuple)):
            stack.extend(item)
    return total


def _size(nbytes: int) -> str:
    for unit, scale in (("MB", 1e6), ("kB", 1e3)):
        if nbytes >= scale:
            return f"{nbytes / scale:.1f} {unit}"
    return f"{nbytes} B"


def _shown(count: int) -> list[int | None]:
    """Indices of the messages drawn; None marks the gap of those left out."""
    if count <= MAX_DIAGRAM_ROWS:
        return list(range(count))
    head = MAX_DIAGRAM_ROWS * 3 // 4
    tail = MAX_DIAGRAM_ROWS - head
    return [*range(head), None, *range(count - tail, count)]


def run_parties(record: Mapping[str, Any]) -> list[str]:
    """Every party of the run as ``result.json`` records it: those with a key, and a passive observer."""
    anchors = record.get("transcript")
    keys = (anchors.get("keys") or {}) if isinstance(anchors, Mapping) else {}
    names = list(keys)
    if record.get("threat_model") == "passive-observer" and "observer" not in names:
        names.append("observer")
    return names


def sequence_diagram(envelopes: Sequence[Any], parties: Sequence[str] = ()) -> str:
    """An SVG lane per party and an arrow per message: number, kind, and size or what it says.

    ``parties``: every party of the run (:func:`run_parties`). One that neither sends nor receives (a
    passive observer) gets a lane too, marked on every row with the copy of the message it overhears.
    Each arrow's tooltip says what the message says, with every digit of its answers.
    """
    talking = {e.sender for e in envelopes} | {e.recipient for e in envelopes}
    names = sorted(talking | set(parties),
                   key=lambda n: (_ROLE_ORDER.index(n) if n in _ROLE_ORDER else len(_ROLE_ORDER), n))
    silent = [name for name in names if name not in talking]
    speaking = [name for name in names if name not in silent]
    x = {name: 110 + i * _COLUMN for i, name in enumerate(speaking)}
    beyond = 110 + _COLUMN * max(len(speaking) - 1, 1) + 270  # past the arrows' labels
    x.update({name: beyond + k * 140 for k, name in enumerate(silent)})
    rows = _shown(len(envelopes))
    height = _TOP + _ROW * (len(rows) + 1)
    width = (beyond + 140 * len(silent) - 40) if silent else 110 + _COLUMN * max(len(names) - 1, 1) + 260
    parts = [f'<svg xmlns="http://www.w3.org/2000/svg" role="img" aria-label="message sequence diagram" '
             f'width="{width}" height="{height}" viewBox="0 0 {width} {height}" class="sequence">',
             '<defs><marker id="arrow" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="7" markerHeight="7" '
             'orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="context-stroke"/></marker></defs>']
    for name, cx in x.items():
        parts.append(f'<text x="{cx}" y="{16 if name in silent else 22}" text-anchor="middle" class="party">'
                     f'{html.escape(name)}</text>')
        if name in silent:
            parts.append(f'<text x="{cx}" y="29" text-anchor="middle" class="role">overhears every message</text>')
        parts.append(f'<line x1="{cx}" y1="32" x2="{cx}" y2="{height - 8}" class="lane"/>')
    for row, index in enumerate(rows):
        y = _TOP + row * _ROW
        if index is None:
            left_out = len(envelopes) - (len(rows) - 1)
            parts.append(f'<text x="{width // 2}" y="{y + 4}" text-anchor="middle" class="gap">… {left_out:,} '
                         f'messages left out (the narration below has every one) …</text>')
            continue
        env = envelopes[index]
        colour = _KIND_COLOUR.get(env.kind, "#2c3e50")
        x1, x2 = x[env.sender], x[env.recipient]
        sealed = is_sealed(env.payload)
        label = f"#{index + 1} {env.kind}" + (f" (sealed, {_size(_payload_bytes(env))})" if sealed else
                                               f" ({_size(_payload_bytes(env))})" if _payload_bytes(env) else "")
        with exact_digits():
            title = html.escape(describe(env.kind, env.payload))
        for name in silent:  # a passive party reads a copy of every message off the wire (a sealed one: its size)
            parts.append(f'<circle cx="{x[name]}" cy="{y}" r="3.5" class="overheard"><title>{html.escape(name)} '
                         f'overhears #{index + 1}{" (sealed: its size only)" if sealed else ""}</title></circle>')
        parts.append(f'<g class="message{" refusal" if env.kind == "refusal" else ""}"><title>{title}</title>'
                     f'<line x1="{x1}" y1="{y}" x2="{x2}" y2="{y}" stroke="{colour}" stroke-width="1.6" '
                     f'marker-end="url(#arrow)"/>'
                     f'<text x="{max(x1, x2) + 10}" y="{y + 4}" fill="{colour}">{html.escape(label)}</text></g>')
    parts.append("</svg>")
    return "".join(parts)


def _answered_models(envelopes: Sequence[Any]) -> np.ndarray:
    """Models answered once message k (1-based) is on the wire: the x axis of the knowledge plot."""
    counts = np.zeros(len(envelopes) + 1, dtype=np.int64)
    for k, env in enumerate(envelopes, start=1):
        values = env.payload.get("values") if env.kind == "metric-answer" and not is_sealed(env.payload) else None
        counts[k] = counts[k - 1] + (int(np.asarray(values).size) if values is not None else 0)
    return counts


def _integer_ticks(axis: Any) -> None:
    """Ticks at whole numbers only: the axis counts people or models."""
    from matplotlib.ticker import MaxNLocator

    axis.set_major_locator(MaxNLocator(integer=True))


def _verb(decided: int, correct: int, partition_only: bool) -> str:
    """The verb for decisions: "pinned down" if all are right (an exact reading), "guessed" if any is wrong."""
    return "guessed" if correct < decided and not partition_only else "pinned down"


def knowledge_figure(record: Mapping[str, Any], envelopes: Sequence[Any]) -> str:
    """What the adversary had pinned down (decided, and rightly) against the queries answered so far.

    The people axis is scaled to the people attacked (20 targets are not drawn on a 1,000-person axis),
    counts have whole-number ticks, and the legend sits beside the plot, off the data. Decisions of
    which some are wrong are "guessed", not "pinned down".
    """
    plt = _pyplot()

    m = record["metrics"]
    steps = record.get("knowledge") or []
    n = int(record["sizes"]["n_audit"])
    swap = bool(m.get("leakage_up_to_swap"))
    if not steps:  # an attack that concludes once, at the end (a passive observer, a release): its verdict
        decided = int(m.get("attacked", 0)) - int(m.get("undecided", 0))
        verb = _verb(decided, int(m.get("correct", 0)), swap)
        bars = {"audit set": n, "attacked": int(m.get("attacked", 0)), verb: decided}
        if not swap:
            bars[f"{verb} rightly"] = int(m.get("correct", 0))
        fig, ax = plt.subplots(figsize=(7, 2.6))
        ax.barh(list(bars)[::-1], list(bars.values())[::-1], color="#2c7fb8", height=0.55)
        for row, value in enumerate(list(bars.values())[::-1]):
            ax.text(value, row, f" {value:,}", va="center", ha="left")
        # room for the longest bar's label: an attack on the training set targets more people than the audit set holds
        ax.set_xlim(0, max(bars.values()) * 1.15 or 1.0)
        _integer_ticks(ax.xaxis)
        ax.set_xlabel("people")
        ax.set_title(f"What the adversary concluded after all {len(envelopes):,} messages")
        fig.tight_layout()
        return _png(fig)
    answered = _answered_models(envelopes)
    after = np.array([s[0] for s in steps], dtype=np.int64).clip(0, len(envelopes))
    x, pinned, rightly = answered[after], [s[1] for s in steps], [s[2] for s in steps]
    verb = "guessed" if not swap and any(c < d for d, c in zip(pinned, rightly, strict=True)) else "pinned down"
    attacked = int(m.get("attacked") or 0) or n
    top = max(attacked, max(pinned, default=0), 1)
    fig, ax = plt.subplots(figsize=(8.6, 3.4))
    ax.step(x, pinned, where="post", marker="o" if len(x) < 40 else None, label=verb)
    if not swap:
        ax.step(x, rightly, where="post", linestyle="--", label=f"{verb} rightly")
    whom = "audit set" if attacked >= n else "people attacked"
    ax.axhline(top, color="grey", linewidth=0.8, label=f"{whom} ({top:,})")
    ax.set_ylim(0, top * 1.08)
    ax.set_xlim(0, max(int(answered[-1]), int(x.max()) if x.size else 0, 1) * 1.03)
    _integer_ticks(ax.xaxis)
    _integer_ticks(ax.yaxis)
    ax.set_xlabel("models answered so far")
    ax.set_ylabel("people")
    of = f" of the {top:,} people it attacked" if attacked < n else ""
    ax.set_title(f"What the adversary has {verb}{of} (audit set: {n:,})" if of else f"What the adversary has {verb}")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="small", loc="upper left", bbox_to_anchor=(1.01, 1.0), borderaxespad=0.0)
    fig.tight_layout()
    return _png(fig)


def bars_figure(record: Mapping[str, Any]) -> str:
    """Leakage beside its bound (from the epsilon spent), and the budget spent against the budget."""
    plt = _pyplot()

    m = record["metrics"]
    budget = (record.get("spec") or {}).get("budget") or {}
    spent = m.get("epsilon_spent")
    fig, axes = plt.subplots(1, 2, figsize=(7, 2.8))
    leak, bound = m.get("leakage"), m.get("leakage_bound")
    labels, values = ["leakage"], [leak if leak is not None else 0.0]
    if bound is not None:
        labels.append("bound")
        values.append(bound)
    axes[0].barh(labels, values, color=["#2c7fb8", "#bbbbbb"][:len(values)], height=0.5)
    for row, value in enumerate(values):
        axes[0].text(min(value, 100) - 2, row, f"{value:.1f}", va="center", ha="right", color="white")
    axes[0].axvline(50, color="grey", linestyle=":", linewidth=1)
    axes[0].set_xlim(0, 100)
    axes[0].set_xlabel("balanced accuracy, % (50 = chance)")
    if spent is None:
        axes[1].text(0.5, 0.5, "this protocol spends\nno privacy budget", ha="center", va="center")
        axes[1].set_axis_off()
    else:
        cap = budget.get("epsilon")
        names, amounts = ["spent"], [float(spent)]
        if cap is not None:
            names.append("budget")
            amounts.append(float(cap))
        axes[1].barh(names, amounts, color=["#d95f0e", "#bbbbbb"][:len(amounts)], height=0.5)
        for row, value in enumerate(amounts):
            axes[1].text(value, row, f" {value:.3g}", va="center", ha="left")
        axes[1].set_xlim(0, max(amounts) * 1.25 or 1.0)
        axes[1].set_xlabel("epsilon" + ("" if cap is not None else " (no cap set)"))
    fig.tight_layout()
    return _png(fig)


def _verification(transcript: Path, follower: TranscriptFollower | None) -> tuple[str, list[Any]]:
    try:
        envelopes = read_transcript(transcript, verify=True) if follower is None else follower.finish()
        status = f"verified: {len(envelopes):,} messages; every signature, digest and chain link is intact"
    except TranscriptError as exc:
        envelopes = read_transcript(transcript, verify=False)
        status = f"FAILED verification: {exc}"
    return status, envelopes


def _keys_table(record: Mapping[str, Any]) -> str:
    """Key fingerprints and the final transcript head, where the run recorded them."""
    found = record.get("transcript")
    anchors: Mapping[str, Any] = found if isinstance(found, Mapping) else {}
    rows = [(k, v) for k, v in anchors.items() if not isinstance(v, (Mapping, list))]
    for key in ("fingerprints", "keys"):
        for name, value in (anchors.get(key) or {}).items():
            rows.append((f"key of {name}", value))
    if not rows:
        return "<p>This run recorded no key fingerprints.</p>"
    return "<table>" + "".join(f"<tr><th>{html.escape(str(k))}</th><td><code>{html.escape(str(v))}</code></td></tr>"
                               for k, v in rows) + "</table>"


_STYLE = """
body { font-family: system-ui, sans-serif; margin: 2em auto; max-width: 1100px; color: #222; }
h1 { font-size: 1.5em; } h2 { font-size: 1.15em; margin-top: 1.6em; border-bottom: 1px solid #ddd; }
table { border-collapse: collapse; } th, td { padding: 2px 10px; text-align: left; border-bottom: 1px solid #eee; }
.headline td { font-variant-numeric: tabular-nums; }
.sequence text { font-size: 12px; } .sequence .party { font-weight: bold; font-size: 13px; }
.sequence .lane { stroke: #bbb; stroke-dasharray: 4 3; } .sequence .gap { fill: #777; font-style: italic; }
.sequence .role { fill: #777; font-size: 10px; } .sequence .overheard { fill: #fff; stroke: #8e44ad; }
.note { background: #fff7e6; border-left: 4px solid #e6a100; padding: 6px 10px; }
.ok { color: #1a7f37; } .bad { color: #c0392b; }
pre { background: #f6f8fa; padding: 10px; overflow-x: auto; font-size: 12px; }
pre.narration { white-space: pre-wrap; overflow-wrap: anywhere; }
"""

#: The only script: counts the messages of each kind in the diagram into the legend, so a broken page shows.
_SCRIPT = """
document.addEventListener('DOMContentLoaded', function () {
  var counts = {};
  document.querySelectorAll('svg.sequence g.message').forEach(function (g) {
    var kind = g.querySelector('text').textContent.split(' ')[1];
    counts[kind] = (counts[kind] || 0) + 1;
  });
  var legend = document.getElementById('legend');
  legend.textContent = 'drawn: ' + Object.keys(counts).sort().map(function (k) {
    return counts[k] + ' ' + k; }).join(', ');
  legend.dataset.ready = 'yes';
});
"""


def render(record: Mapping[str, Any], transcript: Path, follower: TranscriptFollower | None = None) -> str:
    """The page as a string (see the module docstring); ``follower`` has verified the transcript as the run wrote it."""
    from parley.scenarios.report import HEADLINE, SWAP_NOTE, _fmt

    status, envelopes = _verification(transcript, follower)
    m = record["metrics"]
    esc = html.escape
    headline = "".join(f"<tr><th>{esc(k)}</th><td>{esc(_fmt(m[k]))}</td></tr>" for k in HEADLINE if k in m)
    swap = f'<p class="note">{esc(SWAP_NOTE.format(as_labelled=_fmt(m.get("leakage_as_labelled"))))}</p>' \
        if m.get("leakage_up_to_swap") else ""
    refusals = sum(e.kind == "refusal" for e in envelopes)
    ok = status.startswith("verified")
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>parley run: {esc(record['scenario'])}</title>
<style>{_STYLE}</style><script>{_SCRIPT}</script></head>
<body>
<h1>{esc(record['scenario'])}</h1>
<p>{esc(record.get('description') or '')}</p>
<p>Data set <b>{esc(str(record['dataset']))}</b> (protected: {esc(str(record['protected']))}), audit set
n = {record['sizes']['n_audit']:,}; protocol <b>{esc(record['protocol'])}</b>; attack <b>{esc(record['attack'])}</b>
({esc(record['threat_model'])}); seed {record['seed']}.</p>
<table class="headline">{headline}</table>
{swap}
<h2>What the adversary learned</h2>
<img alt="knowledge" src="{knowledge_figure(record, envelopes)}">
<h2>Leakage and budget</h2>
<img alt="leakage and budget" src="{bars_figure(record)}">
<h2>Transcript</h2>
<p class="{'ok' if ok else 'bad'}">{esc(status)}</p>
{_keys_table(record)}
<h2>Messages</h2>
<p>Every signed message of the run, top to bottom, {len(envelopes):,} in all ({refusals:,} refusals, in red).
Hover over an arrow for what it says. <span id="legend"></span></p>
{sequence_diagram(envelopes, run_parties(record))}
<h2>The run, message by message</h2>
<p>As <code>parley run {esc(record['scenario'])} --explain</code> prints it: answers to 4 significant digits (every
digit in an arrow's tooltip above, or with <code>--exact</code>); runs of like messages folded into one entry.</p>
<pre class="narration">{esc(explain_record(record, transcript, envelopes) if ok else status)}</pre>
</body></html>
"""


def write_html_report(record: Mapping[str, Any], run_dir: Path, follower: TranscriptFollower | None = None) -> Path:
    """Write ``run_dir/report.html`` from ``record`` (``result.json``) and the run's transcript.

    The transcript is verified by ``follower`` as the run wrote it, if given
    (:class:`parley.parties.transcript.TranscriptFollower`).
    """
    path = Path(run_dir) / "report.html"
    path.write_text(render(record, Path(run_dir) / "transcript.jsonl", follower), encoding="utf-8")
    return path
