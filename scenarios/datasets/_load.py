"""Turn data set parameters into a :class:`Table`: dispatch, integrity check and cache.

Parsing Adult takes a few hundred milliseconds and a study loads the same table for every
cell, so parsed tables are cached in-process with :func:`functools.lru_cache` keyed on
the (frozen, hashable) parameters. Callers get a fresh copy of the feature frame and
read-only label/group arrays, so nothing they do can corrupt the cache. The vendored
files are verified on every call, cache hit or not (hashing them takes milliseconds).
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np

from parley.protocols.errors import ConfigError, InternalError
from parley.scenarios.datasets._csv import read_csv
from parley.scenarios.datasets._integrity import verify
from parley.scenarios.datasets._params import AdultParams, CompasParams, CsvParams, GermanParams, SyntheticParams
from parley.scenarios.datasets._real import FILES, read_adult, read_compas, read_german
from parley.scenarios.datasets._synthetic import generate
from parley.scenarios.datasets._table import Table

__all__ = ["load_table", "clear_cache", "MSG_NOT_PARAMS", "MSG_SYNTHETIC_RNG"]

MSG_NOT_PARAMS = (
    "params must be one of AdultParams, GermanParams, CompasParams, SyntheticParams, "
    "CsvParams; received {kind}"
)
MSG_SYNTHETIC_RNG = "the synthetic data set needs rng (a numpy.random.Generator); received {rng!r}"

_READERS: dict[str, Callable[[Any], Table]] = {"adult": read_adult, "german": read_german, "compas": read_compas}
_MODELS = (AdultParams, GermanParams, CompasParams, SyntheticParams, CsvParams)


@functools.lru_cache(maxsize=32)
def _real_table(params: AdultParams | GermanParams | CompasParams) -> Table:
    return _READERS[params.name](params)


@functools.lru_cache(maxsize=8)
def _csv_table(params: CsvParams, stamp: tuple[str, int, int]) -> Table:
    # ``stamp`` (resolved path, mtime, size) is only part of the key: an edited file or a
    # different working directory is a cache miss.
    return read_csv(params)


def clear_cache() -> None:
    """Forget every cached table (tests; long-lived processes after editing a CSV)."""
    _real_table.cache_clear()
    _csv_table.cache_clear()


def _fresh(table: Table) -> Table:
    if table.y.flags.writeable or table.a.flags.writeable:
        raise InternalError("a cached table holds writeable y/a arrays")
    return dataclasses.replace(table, features=table.features.copy(deep=True))


def load_table(params: object, rng: np.random.Generator | None = None) -> Table:
    """Load one data set as a :class:`Table`.

    Parameters
    ----------
    params : DatasetParams
        Which data set, and how (protected attribute, filter, CSV columns ...).
    rng : numpy.random.Generator, optional
        Used only by the synthetic data set, where it is required.

    Returns
    -------
    Table
        A copy the caller may modify; ``y`` and ``a`` are read-only.

    Raises
    ------
    DatasetError
        A vendored file is altered or missing, or a CSV lacks a named column.
    ConfigError
        ``params`` is not a data set model, or the synthetic set gets no generator.
    """
    if not isinstance(params, _MODELS):
        raise ConfigError(MSG_NOT_PARAMS.format(kind=type(params).__name__))
    if isinstance(params, SyntheticParams):
        if not isinstance(rng, np.random.Generator):
            raise ConfigError(MSG_SYNTHETIC_RNG.format(rng=rng))
        return generate(params, rng)
    if isinstance(params, CsvParams):
        path = Path(params.path).resolve()
        stat = path.stat() if path.is_file() else None
        stamp = (str(path), stat.st_mtime_ns, stat.st_size) if stat else (str(path), -1, -1)
        return _fresh(_csv_table(params, stamp))
    for name in FILES[params.name]:
        verify(name)
    return _fresh(_real_table(params))
