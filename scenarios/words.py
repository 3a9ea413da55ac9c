"""Words for narrations: metric names, counts of people and models, numbers, as people write them.

Pure helpers shared by ``parley run --explain`` (:mod:`parley.scenarios.explain`) and each
exchange's sentences about its own message kinds (:meth:`parley.scenarios.exchanges.Exchange.describe`).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

import numpy as np

__all__ = ["PLURAL", "answer_values", "exact_digits", "metric_name", "models", "number", "people", "requested_models",
           "set_name", "shape_of"]

#: Plurals that do not just add an "s".
PLURAL = {"hypothesis": "hypotheses"}
#: Whether answers are worded with every digit the wire holds (``parley run --explain --exact``, the
#: HTML report's tooltips) rather than to four significant digits (what a room reads off a projector).
_EXACT_DIGITS: ContextVar[bool] = ContextVar("parley_exact_digits", default=False)


@contextmanager
def exact_digits(on: bool = True) -> Iterator[None]:
    """Within the block, answers are worded with every digit they carry (``repr`` of the float64)."""
    token = _EXACT_DIGITS.set(on)
    try:
        yield
    finally:
        _EXACT_DIGITS.reset(token)


def metric_name(name: Any) -> str:
    """A metric key as people write it: sp -> SP, abs_sp -> |SP|."""
    text = str(name)
    if text.startswith("abs_"):
        return f"|{text[4:].upper()}|"
    return text.upper()


def set_name(name: Any) -> str:
    """A data set's name as people say it: ``train`` -> training."""
    return {"train": "training"}.get(str(name), str(name))


def people(n: int) -> str:
    """``1 person``, ``1,000 people``."""
    return f"{n:,} {'person' if n == 1 else 'people'}"


def models(m: int, word: str = "model") -> str:
    """``1 model``, ``50 hypotheses``: ``m`` of ``word``, plural as people write it."""
    return f"{m:,} {word if m == 1 else PLURAL.get(word, word + 's')}"


def number(value: float) -> str:
    """A number to four significant digits."""
    return f"{float(value):.4g}"


def answer_values(values: Any, label: str, exact: bool) -> str:
    """One answer or a few, or the range of many, to four significant digits.

    Within :func:`exact_digits` every digit the wire holds is shown (``repr`` of the float64). ``exact``
    says whether the protocol released the value exactly (the caller words that); it no longer changes
    the digits: 17 of them are unreadable on a projector, and the precision attack reads them all the same.
    """
    v = np.asarray(values, dtype=np.float64).reshape(-1)
    fmt = (lambda x: repr(float(x))) if _EXACT_DIGITS.get() else number
    article = "an" if label[:1].upper() in "AEFHILMNORSX" else "a"
    if v.size == 1:
        return f"{article} {label} answer {fmt(v[0])}"
    if v.size <= 3:
        return f"{v.size} {label} answers: {', '.join(fmt(x) for x in v)}"
    return f"{v.size:,} {label} answers between {fmt(v.min())} and {fmt(v.max())}"


def shape_of(payload: Mapping[str, Any], key: str) -> tuple[int, int] | None:
    """(models, people) of the predictions array under ``key``; None if there is none."""
    arr = payload.get(key)
    if not isinstance(arr, np.ndarray) or arr.size == 0:
        return None
    arr = np.atleast_2d(arr)
    return int(arr.shape[0]), int(arr.shape[-1])


def requested_models(p: Mapping[str, Any], what: str, word: str = "model") -> str:
    """``what``, with how many models over how many people the request's predictions hold."""
    shape = shape_of(p, "predictions")
    if shape is None:
        return what
    return f"{what}: predictions of {models(shape[0], word)} over {people(shape[1])}"
