"""Turn data set parameters into a :class:`Table`: the built-in data sets, dispatch, checks and cache.

Each built-in is a :class:`Dataset` registered here; :func:`load_table` dispatches on
the parameters' model through :data:`DATASETS`, so a plug-in data set (a
``parley.datasets`` entry point) loads the same way, and what it returns is checked.

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
from typing import Any, TypeVar

import numpy as np

from parley.protocols.errors import ConfigError, DatasetError, InternalError
from parley.scenarios.datasets._integrity import verify
from parley.scenarios.datasets._params import AdultParams, CompasParams, CsvParams, GermanParams, SyntheticParams
from parley.scenarios.datasets._registry import MSG_NOT_PARAMS, Dataset, dataset_of, register_dataset
from parley.scenarios.datasets._table import Table

__all__ = ["load_table", "clear_cache", "MSG_NOT_PARAMS", "MSG_SYNTHETIC_RNG", "MSG_SEEDED_RNG", "MSG_BAD_TABLE"]

MSG_SYNTHETIC_RNG = "the synthetic data set needs rng (a numpy.random.Generator); received {rng!r}"
MSG_SEEDED_RNG = "data set {name!r} draws its rows from rng (a numpy.random.Generator); received {rng!r}"
MSG_BAD_TABLE = "data set {name!r} loaded a bad table: {problem}"



def _reader(name: str) -> Callable[[Any], Table]:
    # The readers (and pandas) are imported on first load, not with the registry: reading and validating a
    # scenario, which needs only the parameter models, stays free of pandas' import time.
    from parley.scenarios.datasets._real import read_adult, read_compas, read_german

    readers: dict[str, Callable[[Any], Table]] = {"adult": read_adult, "german": read_german, "compas": read_compas}
    return readers[name]


@functools.lru_cache(maxsize=32)
def _real_table(params: AdultParams | GermanParams | CompasParams) -> Table:
    return _reader(params.name)(params)


@functools.lru_cache(maxsize=8)
def _csv_table(params: CsvParams, stamp: tuple[str, int, int]) -> Table:
    # ``stamp`` (resolved path, mtime, size) is only part of the key: an edited file or a
    # different working directory is a cache miss.
    from parley.scenarios.datasets._csv import read_csv

    return read_csv(params)


def clear_cache() -> None:
    """Forget every cached table (tests; long-lived processes after editing a CSV)."""
    _real_table.cache_clear()
    _csv_table.cache_clear()


def _fresh(table: Table) -> Table:
    if table.y.flags.writeable or table.a.flags.writeable:
        raise InternalError("a cached table holds writeable y/a arrays")
    return dataclasses.replace(table, features=table.features.copy(deep=True))


#: The parameters of a vendored data set.
R = TypeVar("R", AdultParams, GermanParams, CompasParams)


class _RealDataset(Dataset[R]):
    """A vendored public data set: files verified on every load, parsed tables cached."""

    def load(self, rng: np.random.Generator | None) -> Table:
        from parley.scenarios.datasets._real import FILES

        for name in FILES[self.name]:
            verify(name)
        return _fresh(_real_table(self.params))


@register_dataset
class Adult(_RealDataset[AdultParams]):
    """UCI Adult (1994 census income): :func:`~parley.scenarios.datasets._real.read_adult`."""

    name = "adult"
    Params = AdultParams
    summary = "UCI Adult (1994 census income), A = race, sex or race3 (three groups)"


@register_dataset
class German(_RealDataset[GermanParams]):
    """UCI Statlog German Credit: :func:`~parley.scenarios.datasets._real.read_german`."""

    name = "german"
    Params = GermanParams
    summary = "UCI Statlog German Credit, A = sex or age"


@register_dataset
class Compas(_RealDataset[CompasParams]):
    """ProPublica COMPAS two-year recidivism: :func:`~parley.scenarios.datasets._real.read_compas`."""

    name = "compas"
    Params = CompasParams
    summary = "ProPublica COMPAS two-year recidivism, A = race or sex"


@register_dataset
class Synthetic(Dataset[SyntheticParams]):
    """Generated from the run's generator: :func:`~parley.scenarios.datasets._synthetic.generate`."""

    name = "synthetic"
    Params = SyntheticParams
    summary = "generated from the seed: exact minority count, tunable feature-A link"
    seeded = True

    def load(self, rng: np.random.Generator | None) -> Table:
        if rng is None:
            raise InternalError("the synthetic data set was loaded without a generator")
        from parley.scenarios.datasets._synthetic import generate

        return generate(self.params, rng)


@register_dataset
class Csv(Dataset[CsvParams]):
    """A user's CSV file: :func:`~parley.scenarios.datasets._csv.read_csv`."""

    name = "csv"
    Params = CsvParams
    summary = "a user CSV file: label, protected column, favourable and privileged values"

    def load(self, rng: np.random.Generator | None) -> Table:
        path = Path(self.params.path).resolve()
        stat = path.stat() if path.is_file() else None
        stamp = (str(path), stat.st_mtime_ns, stat.st_size) if stat else (str(path), -1, -1)
        return _fresh(_csv_table(self.params, stamp))


def _check_table(table: object, name: str) -> Table:
    """What a (plug-in) data set returned is a Table of consistent, binary/k-ary columns."""
    if not isinstance(table, Table):
        problem = f"a {type(table).__name__}, not a parley.scenarios.datasets.Table"
    elif not len(table.features) == len(table.y) == len(table.a):
        problem = f"{len(table.features)} feature rows, {len(table.y)} labels and {len(table.a)} values of A"
    elif not (np.isin(table.y, (0, 1)).all() and len(table.groups) >= 2
              and np.isin(table.a, np.arange(len(table.groups))).all()):
        problem = f"y must be 0/1 and a one of 0..{len(table.groups) - 1} (groups {table.groups})"
    else:
        return table
    raise DatasetError(MSG_BAD_TABLE.format(name=name, problem=problem))


def load_table(params: Any, rng: np.random.Generator | None = None) -> Table:
    """Load one data set as a :class:`Table`.

    Parameters
    ----------
    params : DatasetParams or a plug-in's parameters
        Which data set, and how (protected attribute, filter, CSV columns ...).
    rng : numpy.random.Generator, optional
        Used only by seeded data sets (synthetic), where it is required.

    Returns
    -------
    Table
        A copy the caller may modify; ``y`` and ``a`` are read-only.

    Raises
    ------
    DatasetError
        A vendored file is altered or missing, a CSV lacks a named column, or a
        plug-in returned an inconsistent table.
    ConfigError
        ``params`` is not a registered data set's model, or a seeded data set (synthetic)
        gets no generator.
    """
    dataset = dataset_of(params)
    if dataset.seeded and not isinstance(rng, np.random.Generator):
        message = MSG_SYNTHETIC_RNG if dataset is Synthetic else MSG_SEEDED_RNG
        raise ConfigError(message.format(name=dataset.name, rng=rng))
    return _check_table(dataset(params).load(rng), dataset.name)
