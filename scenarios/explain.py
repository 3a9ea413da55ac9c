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
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.attacks.scoring import leakage
from parley.parties.confidential import SEALED, is_sealed
from parley.parties.transcript import read_transcript
from parley.parties.wire import Envelope

__all__ = ["SEALED_NOTE", "describe", "explain_record", "narrate", "reconstruction_note", "set_name"]

#: What the narration says of a sealed payload (tests match on it).
SEALED_NOTE = "sealed: an observer sees only its size ({size:,} bytes of ciphertext), sender, recipient and kind"
#: Indentation of the lines under a message.
_INDENT = "      "


def _metric(name: Any) -> str:
    """A metric key as people write it: sp -> SP, abs_sp -> |SP|."""
    text = str(name)
    if text.startswith("abs_"):
        return f"|{text[4:].upper()}|"
    return text.upper()


def set_name(name: Any) -> str:
    """A data set's name as people say it: ``train`` -> training."""
    return {"train": "training"}.get(str(name), str(name))


def _people(n: int) -> str:
    return f"{n:,} {'person' if n == 1 else 'people'}"


#: Plurals that do not just add an "s".
_PLURAL = {"hypothesis": "hypotheses"}


def _models(m: int, word: str = "model") -> str:
    return f"{m:,} {word if m == 1 else _PLURAL.get(word, word + 's')}"


def _number(value: float) -> str:
    return f"{float(value):.4g}"


def _values(values: Any, label: str, exact: bool) -> str:
    """One answer or a few, or the range of many; an exact answer with every digit it carries."""
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    fmt = (lambda x: repr(float(x))) if exact else _number
    article = "an" if label[:1].upper() in "AEFHILMNORSX" else "a"
    if v.size == 1:
        return f"{article} {label} answer {fmt(v[0])}"
    if v.size <= 3:
        return f"{v.size} {label} answers: {', '.join(fmt(x) for x in v)}"
    return f"{v.size:,} {label} answers between {fmt(v.min())} and {fmt(v.max())}"


def _shape(payload: Mapping[str, Any], key: str) -> tuple[int, int] | None:
    arr = payload.get(key)
    if not isinstance(arr, np.ndarray) or arr.size == 0:
        return None
    arr = np.atleast_2d(arr)
    return int(arr.shape[0]), int(arr.shape[-1])


def _metric_query(p: Mapping[str, Any]) -> str:
    metric = _metric(p.get("metric", "?"))
    if "edit_of" in p:
        indices = np.atleast_2d(np.asarray(p.get("indices", np.empty((1, 0)))))
        m, k = indices.shape[0], indices.shape[-1]
        each = "the kept model" if m == 1 else f"{m:,} models, each the kept model"
        changed = f"{k:,} prediction{'' if k == 1 else 's'} changed"
        return f"a metric query: {metric} of {each} with {changed} (sent as edits)"
    shape = _shape(p, "predictions")
    text = f"a metric query: {metric} of {_models(shape[0])} over {_people(shape[1])}" if shape else \
        f"a metric query: {metric}"
    return text + (" (the compliance party keeps the model, for queries that edit it)" if p.get("keep") else "")


def _metric_answer(p: Mapping[str, Any]) -> str:
    notes = []
    if p.get("noise") is not None or p.get("epsilon") is not None:
        noise = f"{p['noise']} noise" if p.get("noise") else "noise"
        notes.append(f"{noise} at ε = {_number(p['epsilon'])}" if p.get("epsilon") is not None else noise)
    if p.get("decimals") is not None:
        notes.append(f"rounded to {p['decimals']} decimals")
    text = _values(p.get("values", []), _metric(p.get("metric", "?")), exact=not notes)
    return text + (f" ({', '.join(notes)})" if notes else " (exact)")


def _attribute_release(p: Mapping[str, Any]) -> str:
    z = np.asarray(p.get("z", []))
    text = f"a randomized-response release of {z.size:,} values of A (the {set_name(p.get('set', '?'))} set)"
    if p.get("epsilon") is not None:
        text += f" at ε = {_number(p['epsilon'])}"
    if p.get("pi") is not None:
        text += f": each value kept with probability {float(p['pi']):.2f}"
    return text


def _accept_set(p: Mapping[str, Any]) -> str:
    accepted = np.asarray(p.get("accepted", []))
    return (f"an accept set: {accepted.size:,} of {_models(int(p.get('m', 0)), 'hypothesis')} have covariance with A "
            f"within ρ = {_number(p.get('rho', float('nan')))}")


def _certificate(p: Mapping[str, Any]) -> str:
    metric, n = _metric(p.get("metric", "?")), int(p.get("n", 0))
    if "value" in p:
        rounded = f", rounded up to {p['decimals']} decimals" if p.get("decimals") is not None else ""
        value = _number(p["value"])
        return f"a fairness certificate: {metric} = {value} over {_people(n)} (the measured value{rounded})"
    tolerance = _number(p.get("tolerance", float("nan")))
    priced = f" (a noisy decision, ε = {_number(p['epsilon'])} debited)" if "epsilon" in p else ""
    if p.get("certified") is False:
        return f"no fairness certificate: {metric} was not found within {tolerance} over {_people(n)}{priced}"
    return f"a fairness certificate: {metric} is within {tolerance} over {_people(n)}{priced}"


def _requested_models(p: Mapping[str, Any], what: str, word: str = "model") -> str:
    shape = _shape(p, "predictions")
    if shape is None:
        return what
    return f"{what}: predictions of {_models(shape[0], word)} over {_people(shape[1])}"


def _secure(kind: str, p: Mapping[str, Any]) -> str:
    """A message of the secure protocols: what its shares are of (the values are uniform field elements)."""
    metric, m = _metric(p.get("metric", "?")), p.get("m", "?")
    models = _models(m) if type(m) is int else "? models"
    shares, a_share = p.get("shares"), p.get("a_share")
    if kind == "mpc-query" and isinstance(shares, np.ndarray) and shares.ndim == 3:
        return (f"a secure {metric} query of {models}: the compliance party's Shamir shares of "
                f"{shares.shape[0]:,} rows of predictions over {_people(shares.shape[1])} (uniform in GF(2^127 - 1))")
    if kind == "mpc-query":
        return f"a secure {metric} query of {models} for the helper: the header and a padded share of A"
    owner = "the compliance party's" if isinstance(a_share, np.ndarray) else "the helper's"
    extra = " and the helper's share of A, padded" if isinstance(a_share, np.ndarray) else ""
    return f"{owner} output share of the {metric} statistics of {models}{extra} (alone, uniform: no value in it)"


def _homomorphic(kind: str, p: Mapping[str, Any]) -> str:
    """A message of ``he``: what its ciphertexts hold (pseudorandom to anyone without the secret key)."""
    metric, m = _metric(p.get("metric", "?")), p.get("m", "?")
    models = _models(m) if type(m) is int else "? models"
    if kind == "he-query":
        cts = p.get("ciphertexts")
        count = len(cts) if isinstance(cts, list) else "?"
        context = "with its public key and Galois keys" if "galois_keys" in p else "naming its public context"
        return (f"an encrypted {metric} query of {models}: {count} CKKS ciphertexts of the predictions under the "
                f"data center's key, {context}")
    answers = p.get("answers")
    count = len(answers) if isinstance(answers, list) else "?"
    return (f"the {metric} answers of {models} in {count} CKKS ciphertexts, every other slot masked and the "
            "decryption error noise-flooded (only the data center can decrypt them)")


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
    p = payload
    if kind == "metric-query":
        return _metric_query(p)
    if kind == "metric-answer":
        return _metric_answer(p)
    if kind == "release-request":
        return f"a request for a randomized-response release of the {set_name(p.get('set', '?'))} set's A"
    if kind == "attribute-release":
        return _attribute_release(p)
    if kind == "hypothesis-query":
        return _requested_models(p, "a hypothesis query", "hypothesis")
    if kind == "accept-set":
        return _accept_set(p)
    if kind == "certificate-request":
        return _requested_models(p, "a request to certify a model's fairness")
    if kind == "fairness-certificate":
        return _certificate(p)
    if kind == "refusal":
        return f"a refusal ({p.get('reason', '?')}): {p.get('detail', '')}"
    if kind in ("mpc-query", "mpc-partial"):
        return _secure(kind, p)
    if kind in ("he-query", "he-answer"):
        return _homomorphic(kind, p)
    fields = ", ".join(sorted(str(k) for k in p)) or "nothing"
    return f"a {kind} message (fields: {fields})"


def narrate(transcript: str | Path, learned: Iterable[Sequence[Any]] = (),
            envelopes: Sequence[Envelope] | None = None) -> list[str]:
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
    """
    if envelopes is None:
        envelopes = read_transcript(transcript, verify=True)
    notes: dict[int, list[str]] = defaultdict(list)
    for after, sentence in learned:
        notes[min(max(int(after), 0), len(envelopes))].append(str(sentence))
    lines = [f"  before any message: {sentence}" for sentence in notes.get(0, [])]
    width = len(str(len(envelopes)))
    for number, envelope in enumerate(envelopes, start=1):
        lines.append(f"  #{number:<{width}} {envelope.sender} -> {envelope.recipient}: {envelope.kind} "
                     f"[{envelope.protocol}]")
        lines.append(f"{_INDENT}{describe(envelope.kind, envelope.payload)}")
        lines.extend(f"{_INDENT}learned: {sentence}" for sentence in notes.get(number, []))
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
        parts.append(f"ε spent {_number(m['epsilon_spent'])}")
    return ["  in all: " + "; ".join(parts)]


def explain_record(record: Mapping[str, Any], transcript: str | Path,
                   envelopes: Sequence[Envelope] | None = None) -> str:
    """The whole narration of a run (``result.json``'s record and its transcript), as plain text.

    ``envelopes``: the transcript already read with verification (see :func:`narrate`).
    """
    lines = _header(record) + ["", "messages (as the verified transcript holds them):"]
    lines += narrate(transcript, record.get("learned", []), envelopes)
    lines += [""] + _footer(record)
    return "\n".join(lines)


def reconstruction_note(who: str, indices: np.ndarray, a_hat: np.ndarray, decided: np.ndarray | None,
                        a_true: np.ndarray, *, partition_only: bool = False, concluded: bool = False) -> str:
    """One sentence: how many people's A ``who`` has pinned down, how many rightly, and the leakage.

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
    head = f"{who} has pinned down A of {pinned:,} of {_people(n)} ({rightly})"
    if concluded:
        if indices.size == 0:
            return f"{head}: it attacked no one"
        score = leakage(a_true[indices], a_hat, partition_only, decided)
        return f"{head}; leakage {score:.1f} % over the {_people(int(indices.size))} it attacked"
    full = np.zeros(n, dtype=np.int8)
    known = np.zeros(n, dtype=bool)
    full[indices], known[indices] = a_hat, decided
    running = leakage(a_true, full, partition_only, known) if n else float("nan")
    return f"{head}; running leakage {running:.1f} % (everyone else counts as a coin flip)"
