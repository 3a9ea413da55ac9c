"""Data sets for parley scenarios: Adult, German Credit, COMPAS, synthetic, user CSV and plug-ins.

A scenario names a data set with one of the parameter models (discriminated on
``name``); :func:`load_table` returns the parsed :class:`Table` and :func:`load_split`
the preprocessed training and audit sets. :data:`DATASETS` registers every data set
by name: the built-ins, and those a user's package adds through a ``parley.datasets``
entry point (a :class:`Dataset` subclass, docs/plugins.md). In every data set ``a = 1`` is the advantaged
group and ``y = 1`` the favourable outcome.

Sources (vendored, gzip, SHA-256 checked on every load):

- UCI Adult (1994 census income), Kohavi and Becker; UCI ML Repository, CC BY 4.0.
- UCI Statlog (German Credit Data), Hofmann; UCI ML Repository, CC BY 4.0.
- ProPublica COMPAS two-year recidivism, ProPublica's public analysis data.
- UCI Communities and Crime, Redmond; UCI ML Repository, CC BY 4.0 (``crime``, Hu et al.'s Table I).

Examples
--------
>>> import numpy as np
>>> from parley.scenarios.datasets import AdultParams, load_split
>>> split = load_split(AdultParams(protected="race"), np.random.default_rng(0))
>>> split.X_audit.shape[0]
1000
"""

from parley.scenarios.datasets._load import load_table
from parley.scenarios.datasets._params import (
    DATASET_NAMES,
    AdultParams,
    CompasParams,
    CsvParams,
    DatasetParams,
    DatasetParamsBase,
    GermanParams,
    SyntheticParams,
)
from parley.scenarios.datasets._registry import DATASETS, Dataset, dataset_of, get_dataset, register_dataset
from parley.scenarios.datasets._split import load_split
from parley.scenarios.datasets._table import Split, Table

__all__ = [
    "DatasetParams",
    "AdultParams",
    "GermanParams",
    "CompasParams",
    "SyntheticParams",
    "CsvParams",
    "CrimeParams",
    "Crime",
    "Table",
    "Split",
    "load_table",
    "load_split",
    "DATASET_NAMES",
    "DATASETS",
    "Dataset",
    "DatasetParamsBase",
    "dataset_of",
    "get_dataset",
    "register_dataset",
]

# After the built-ins (registered by _load), so that listings and messages name them first.
from parley.scenarios.datasets._crime import Crime, CrimeParams  # noqa: E402  (registers "crime")
