"""Canary: scan a run's transcript for A itself and for per-individual releases the protocol does not make.

The referee knows A; the transcript is what went over the wire. Two findings:

* ``raw-a``: a vector of n values in any payload equal to A or to 1 - A (as an
  array, or as a list of numbers), from any sender;
* ``per-individual``: a vector of n values in a message *from the compliance
  party* in a message kind its protocol does not declare per-individual
  (``per_individual_kinds``; e.g. a randomized-response ``attribute-release``).
  Metric answers are one value per model, never n values.

Sealed (confidential) payloads are ciphertext and are skipped: a passive
observer could not read them either. The scanner streams the transcript.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.confidential import is_sealed
from parley.parties.transcript import iter_transcript

__all__ = ["Finding", "scan_transcript", "scan_envelopes"]


@dataclass(frozen=True)
class Finding:
    """One thing the canary found: what, in which message (1-based wire order), from whom, where in the payload."""

    what: str
    message: int
    sender: str
    kind: str
    path: str

    def __str__(self) -> str:
        return f"{self.what}: message {self.message} ({self.kind} from {self.sender}) at {self.path}"


def _vectors(value: Any, n: int, path: str) -> Iterator[tuple[str, np.ndarray]]:
    """Every length-n vector in a payload: 1-d arrays, rows and columns of 2-d arrays, lists of n numbers."""
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "biuf" and value.ndim >= 1:
            if value.ndim == 1 and value.shape[0] == n:
                yield path, value
            elif value.ndim == 2:
                if value.shape[1] == n:
                    for i, row in enumerate(value):
                        yield f"{path}[{i}]", row
                if value.shape[0] == n:
                    for j in range(value.shape[1]):
                        yield f"{path}[:, {j}]", value[:, j]
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _vectors(item, n, f"{path}.{key}")
    elif isinstance(value, (list, tuple)):
        if len(value) == n and all(type(v) in (int, float, bool) for v in value):
            yield path, np.asarray(value, dtype=np.float64)
        else:
            for i, item in enumerate(value):
                yield from _vectors(item, n, f"{path}[{i}]")


def scan_envelopes(envelopes: Iterable[Any], a: np.ndarray, compliance: str = "compliance",
                   per_individual_kinds: Iterable[str] = ()) -> list[Finding]:
    """Findings over ``envelopes`` in wire order (see the module docstring)."""
    a = np.asarray(a, dtype=np.float64).reshape(-1)
    n, allowed = a.shape[0], frozenset(per_individual_kinds)
    findings = []
    for number, envelope in enumerate(envelopes, start=1):
        if is_sealed(envelope.payload):
            continue
        for path, vector in _vectors(envelope.payload, n, "payload"):
            v = np.asarray(vector, dtype=np.float64)
            if np.array_equal(v, a) or np.array_equal(v, 1.0 - a):
                findings.append(Finding("raw-a", number, envelope.sender, envelope.kind, path))
            elif envelope.sender == compliance and envelope.kind not in allowed:
                findings.append(Finding("per-individual", number, envelope.sender, envelope.kind, path))
    return findings


def scan_transcript(path: str | Path, a: np.ndarray, compliance: str = "compliance",
                    per_individual_kinds: Iterable[str] = ()) -> list[Finding]:
    """:func:`scan_envelopes` over a transcript file (not re-verified: ``parley verify`` does that)."""
    return scan_envelopes(iter_transcript(path, verify=False), a, compliance, per_individual_kinds)
