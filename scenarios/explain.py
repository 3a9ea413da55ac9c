"""Narration of a run for a room: who sent what to whom, and what was learned after each message.

``parley run NAME --explain`` prints, for every envelope of the run's verified
transcript, its number, sender, recipient, kind and protocol and a plain-English
summary of its payload (:func:`describe`), and under it what the flow reported
was learned once that message was on the wire (``World.learned``, stored in
``result.json`` as ``learned``: pairs of message number and sentence). The
per-message part is generic: it reads only the transcript, so it works for
every flow. What was learned is the flow's to say, because only the flow knows
what its parties and its adversary concluded and only the referee knows the
truth to score it against (:func:`reconstruction_note` words the common case).

With a confidential scenario the payloads on the wire are sealed: the
narration then says what a passive observer sees of each message, its size.

The narration is meant for a projector: answers are worded to four significant digits (every
digit with ``exact=True``, ``parley run --explain --exact``), and a run of messages of the same
shape (the same sender, recipient, kind, protocol and summary up to its numbers), or of pairs of
them (a query and its answer), is folded after its first one into one entry with a count
(:func:`narrate`). Folding never hides what was learned: the sentences after folded messages are
listed under the fold, each with its message number; the last message is never folded.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.attacks.scoring import leakage
from parley.parties.confidential import SEALED, is_sealed
from parley.parties.transcript import read_transcript
from parley.parties.wire import Envelope
from parley.scenarios.words import exact_digits, number, people, set_name

__all__ = ["MIN_FOLD", "SEALED_NOTE", "describe", "explain_record", "narrate", "reconstruction_note", "set_name"]

#: What the narration says of a sealed payload (tests match on it).
SEALED_NOTE = "sealed: an observer sees only its size ({size:,} bytes of ciphertext), sender, recipient and kind"
#: Indentation of the lines under a message.
_INDENT = "      "
#: Fewest messages a fold takes in (after the first of its kind, which is shown in full).
MIN_FOLD = 3
#: A number as a summary writes it (``1,000``, ``0.1392``, ``-5e-05``): what may differ between messages of one shape.
_NUMBER = re.compile(r"[+-]?\d[\d,]*(?:\.\d+)?(?:e[+-]?\d+)?")


def describe(kind: str, payload: Mapping[str, Any]) -> str:
    """A human summary of one message's payload (what it asks or tells), from the wire alone.

    Parameters
    ----------
    kind : str
        The envelope's kind (``metric-query``, ``attribute-release``, ``refusal``, ...).
    payload : mapping
        Its payload as read from the transcript (arrays decoded); a sealed payload is
        described by its size only.
    """
    if is_sealed(payload):
        ciphertext = payload[SEALED].get("ciphertext") if isinstance(payload[SEALED], Mapping) else None
        size = int(np.asarray(ciphertext).size) if ciphertext is not None else 0
        return SEALED_NOTE.format(size=size)
    if kind == "refusal":
        return f"a refusal ({payload.get('reason', '?')}): {payload.get('detail', '')}"
    from parley.scenarios.exchanges import EXCHANGES

    for exchange in EXCHANGES.values():  # each exchange words its own kinds
        sentence = exchange().describe(kind, payload)
        if sentence is not None:
            return sentence
    p = payload
    fields = ", ".join(sorted(str(k) for k in p)) or "nothing"
    return f"a {kind} message (fields: {fields})"


def _shape(envelope: Envelope, text: str) -> tuple[str, ...]:
    """What two messages share when one is "like" the other: all but the numbers of their summaries."""
    return envelope.sender, envelope.recipient, envelope.kind, envelope.protocol, _NUMBER.sub("#", text)


def _merged(texts: Sequence[str]) -> str:
    """The summaries of folded messages as one: each number that differs between them as its range."""
    template = _NUMBER.split(texts[0])
    slots = [_NUMBER.findall(text) for text in texts]
    out = [template[0]]
    for k, rest in enumerate(template[1:]):
        seen = [found[k] for found in slots]
        values = sorted(set(seen), key=lambda x: float(x.replace(",", "")))
        out.append(values[0] if len(values) == 1 else f"{values[0]} to {values[-1]}")
        out.append(rest)
    return "".join(out)


def _repeats(shapes: Sequence[tuple[str, ...]], start: int, period: int, end: int) -> int:
    """How many times the ``period`` messages from ``start`` repeat right after themselves, before ``end``."""
    unit = shapes[start:start + period]
    count = 0
    while start + period * (count + 2) <= end and shapes[start + period * (count + 1):
                                                            start + period * (count + 2)] == unit:
        count += 1
    return count


def narrate(transcript: str | Path, learned: Iterable[Sequence[Any]] = (),
            envelopes: Sequence[Envelope] | None = None, *, exact: bool = False, fold: bool = True) -> list[str]:
    """The lines of the narration: every envelope of ``transcript`` with what was learned after it.

    Parameters
    ----------
    transcript : path-like
        A run's ``transcript.jsonl``; it is verified as it is read (a tampered file raises
        :class:`parley.protocols.errors.TranscriptError`).
    learned : iterable of (int, str)
        What was learned after message number ``k`` (1-based; 0 = before any message).
    envelopes : sequence of Envelope, optional
        The transcript's envelopes as :func:`parley.parties.transcript.read_transcript` returned them
        *with* ``verify=True`` (the HTML report has just verified them): not read and verified twice.
    exact : bool
        Answers with every digit the wire holds, instead of four significant digits.
    fold : bool
        Fold runs of messages of the same shape (or of pairs of them) after their first one into
        one entry, ``#8-#33 26 more like #7 (metric-query [raw])``, with the summary's differing
        numbers as ranges and, under it, every sentence learned after a folded message
        (``after #35, learned: ...``). At least :data:`MIN_FOLD` messages are folded at a time, and
        never the last one.
    """
    if envelopes is None:
        envelopes = read_transcript(transcript, verify=True)
    notes: dict[int, list[str]] = defaultdict(list)
    for after, sentence in learned:
        notes[min(max(int(after), 0), len(envelopes))].append(str(sentence))
    with exact_digits(exact):
        texts = [describe(envelope.kind, envelope.payload) for envelope in envelopes]
    shapes = [_shape(envelope, text) for envelope, text in zip(envelopes, texts, strict=True)]
    lines = [f"  before any message: {sentence}" for sentence in notes.get(0, [])]
    width = len(str(len(envelopes)))

    def full(index: int) -> None:
        envelope, position = envelopes[index], index + 1
        lines.append(f"  #{position:<{width}} {envelope.sender} -> {envelope.recipient}: {envelope.kind} "
                     f"[{envelope.protocol}]")
        lines.append(f"{_INDENT}{texts[index]}")
        lines.extend(f"{_INDENT}learned: {sentence}" for sentence in notes.get(position, []))

    first_seen: dict[str, int] = {}
    for k, envelope in enumerate(envelopes):
        first_seen.setdefault(envelope.kind, k)
    index, end = 0, len(envelopes) - 1  # the last message is never folded
    while index < len(envelopes):
        best = max(((_repeats(shapes, index, period, end), period) for period in (1, 2)),
                   key=lambda found: found[0] * found[1]) if fold else (0, 1)
        times, period = best
        # Pairs read as the conversation does: a query and its answer, not an answer and the next query.
        turned = period == 2 and first_seen[envelopes[index + 1].kind] < first_seen[envelopes[index].kind]
        if times * period < MIN_FOLD or turned:
            full(index)
            index += 1
            continue
        for k in range(index, index + period):
            full(k)
        first, last = index + period, index + period * (times + 1) - 1
        unit = envelopes[index:index + period]
        kinds = " and ".join(dict.fromkeys(e.kind for e in unit))
        protocols = ", ".join(dict.fromkeys(e.protocol for e in unit))
        like = f"#{index + 1}" if period == 1 else f"#{index + 1}-#{index + period}"
        more = f"{times:,} more" + (" pairs" if period == 2 else "")
        lines.append(f"  #{first + 1}-#{last + 1} {more} like {like} ({kinds} [{protocols}])")
        for k in range(period):
            lines.append(f"{_INDENT}{_merged(texts[first + k:last + 1:period])}")
        for position in range(first + 1, last + 2):
            lines.extend(f"{_INDENT}after #{position}, learned: {sentence}" for sentence in notes.get(position, []))
        index = last + 1
    return lines


def _header(record: Mapping[str, Any]) -> list[str]:
    sizes = record.get("sizes", {})
    spec = record.get("spec", {})
    lines = [
        f"parley explains the run {record.get('scenario', '?')}",
        (f"  threat model: {record.get('threat_model', '?')}; protocol: {record.get('protocol', '?')}; "
         f"attack: {record.get('attack', '?')}"),
        (f"  data set: {record.get('dataset', '?')} (A = {record.get('protected', '?')}); audit set of "
         f"{int(sizes.get('n_audit', 0)):,} people, training set of {int(sizes.get('n_train', 0)):,}"),
        ("  the data center holds X and y; the compliance party holds A (and y) of the sets its protocol "
         "answers about; the referee alone holds the truth every score below is measured against"),
    ]
    if spec.get("confidential"):
        lines.append("  confidential: payloads are sealed between the data center and the compliance party, "
                     "so a passive observer sees only who talked to whom, the kinds and the sizes")
    return lines


def _footer(record: Mapping[str, Any]) -> list[str]:
    m = record.get("metrics", {})
    parts = [f"{int(m.get('messages', 0)):,} messages, {int(m.get('bytes', 0)):,} bytes on the wire"]
    if m.get("refusals"):
        parts.append(f"{int(m['refusals'])} refused")
    if m.get("leakage") is not None:
        parts.append(f"leakage {float(m['leakage']):.1f} % "
                     "(balanced accuracy of the adversary's A; 50 % = a coin flip)")
    if m.get("epsilon_spent") is not None:
        parts.append(f"ε spent {number(m['epsilon_spent'])}")
    return ["  in all: " + "; ".join(parts)]


def explain_record(record: Mapping[str, Any], transcript: str | Path,
                   envelopes: Sequence[Envelope] | None = None, *, exact: bool = False, fold: bool = True) -> str:
    """The whole narration of a run (``result.json``'s record and its transcript), as plain text.

    ``envelopes``: the transcript already read with verification; ``exact``, ``fold``: see :func:`narrate`.
    """
    lines = _header(record) + ["", "messages (as the verified transcript holds them):"]
    lines += narrate(transcript, record.get("learned", []), envelopes, exact=exact, fold=fold)
    lines += [""] + _footer(record)
    return "\n".join(lines)


def reconstruction_note(who: str, indices: np.ndarray, a_hat: np.ndarray, decided: np.ndarray | None,
                        a_true: np.ndarray, *, partition_only: bool = False, concluded: bool = False) -> str:
    """One sentence: how many people's A ``who`` has pinned down, how many rightly, and the leakage.

    "Pinned down" is said only of decisions that are all right (an exact reading of the answers); when
    some decided person's A is wrong, the decisions were guesses and the sentence says "guessed".
    While an attack runs (``concluded`` False) the leakage is the running one over the whole set
    ``a_true``: everyone not yet pinned down counts as a coin flip, so it grows from 50 % as the
    adversary learns. Once it has concluded, the leakage is the run's own: over the people it
    attacked (``indices``), as ``result.json`` reports it.
    """
    n = int(a_true.size)
    indices = np.asarray(indices, dtype=np.int64)
    a_hat = np.asarray(a_hat, dtype=np.int8)
    decided = np.ones(indices.size, dtype=bool) if decided is None else np.asarray(decided, dtype=bool)
    pinned = int(decided.sum())
    correct = int((decided & (a_hat == a_true[indices])).sum())
    rightly = f"{correct:,} of them rightly" if not partition_only else "up to swapping the two groups"
    verb = "guessed" if correct < pinned and not partition_only else "pinned down"
    head = f"{who} has {verb} A of {pinned:,} of {people(n)} ({rightly})"
    if concluded:
        if indices.size == 0:
            return f"{head}: it attacked no one"
        score = leakage(a_true[indices], a_hat, partition_only, decided)
        return f"{head}; leakage {score:.1f} % over the {people(int(indices.size))} it attacked"
    full = np.zeros(n, dtype=np.int8)
    known = np.zeros(n, dtype=bool)
    full[indices], known[indices] = a_hat, decided
    running = leakage(a_true, full, partition_only, known) if n else float("nan")
    return f"{head}; running leakage {running:.1f} % (everyone else counts as a coin flip)"
