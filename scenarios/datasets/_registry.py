"""The data set plug-in registry: what a scenario's ``[dataset]`` table may name.

A data set is a class with a ``name``, a frozen pydantic ``Params`` model (whose
``name`` field defaults to the data set's name, so a spec's ``[dataset]`` table
validates against it) and a :meth:`Dataset.load` that returns a :class:`Table`.
The split into training and audit sets, the preprocessing and the checks around
them are parley's, the same for every data set. Built-ins register by import
(:mod:`parley.scenarios.datasets._load`); a user's package adds one through a
``parley.datasets`` entry point (docs/plugins.md).
"""

from __future__ import annotations

from typing import Any, ClassVar

import numpy as np
from pydantic import BaseModel
from typing_extensions import TypeVar

from parley.protocols.errors import ConfigError
from parley.protocols.plugin import Plugin
from parley.protocols.registry import Registry
from parley.scenarios.datasets._params import (
    AdultParams,
    CompasParams,
    CsvParams,
    DatasetParamsBase,
    GermanParams,
    SyntheticParams,
)
from parley.scenarios.datasets._table import Table

__all__ = ["DATASETS", "Dataset", "dataset_of", "get_dataset", "register_dataset",
           "UNKNOWN_DATASET", "MSG_NOT_PARAMS"]

UNKNOWN_DATASET = "unknown data set {name!r}; known data sets: {known}"
MSG_NOT_PARAMS = "params must be the parameters of a registered data set ({known}); received {kind}"

#: The models of parley's own data sets: the fields of :class:`DatasetParamsBase`, in another order.
_BUILTIN_PARAMS: tuple[type[BaseModel], ...] = (AdultParams, GermanParams, CompasParams, SyntheticParams, CsvParams)

#: A data set's parameter model: ``class Csv(Dataset[CsvParams])``; a bare ``Dataset`` has ``BaseModel``.
P = TypeVar("P", bound=BaseModel, default=BaseModel, covariant=True)


class Dataset(Plugin[P]):
    """Base of every data set: subclasses set ``name``, ``Params``, ``summary`` and implement :meth:`load`.

    A plug-in's ``Params`` subclasses :class:`DatasetParamsBase` (``name``,
    ``audit_size``, ``train_size``); its rows are split by parley, uniformly without
    replacement, from the table :meth:`load` returns. The class names the model as its generic
    argument too (``class Toy(Dataset[ToyParams])``), so type checkers see its fields.
    """

    name: ClassVar[str]
    Params: ClassVar[type[BaseModel]] = DatasetParamsBase
    summary: ClassVar[str] = ""
    #: True when :meth:`load` draws the rows from the run's generator (synthetic data): it then
    #: needs ``rng``, and no table is shared between runs with different seeds.
    seeded: ClassVar[bool] = False

    def __init__(self, params: P) -> None:
        self.params = params

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """Refuse (ConfigError naming the dotted key) a scenario this data set cannot serve; default: accept.

        ``scenario`` is a :class:`parley.scenarios.spec.Scenario` whose ``[dataset]`` names this data set.
        The spec calls the hook when it validates the scenario, before any data is loaded or any party
        starts, so it reads the spec only (``scenario.dataset``, the other components' parameters).
        """
        return None

    def load(self, rng: np.random.Generator | None) -> Table:
        """The whole data set as a :class:`Table` (``rng`` is given, and needed, only when ``seeded``)."""
        raise NotImplementedError(f"data set {self.name!r} implements no load()")


def _check_dataset(cls: type[Dataset[Any]]) -> str | None:
    params = cls.Params
    if not (isinstance(params, type) and (issubclass(params, DatasetParamsBase) or params in _BUILTIN_PARAMS)):
        return "its Params is not a subclass of parley.scenarios.datasets.DatasetParamsBase"
    default = params.model_fields["name"].default
    if default != cls.name:
        return f"its Params.name defaults to {default!r}, not to the data set's name {cls.name!r}"
    if cls.load is Dataset.load:
        return "it implements no load()"
    return None


#: Every data set by name: the built-ins, and the ``parley.datasets`` entry points (loaded on first read).
DATASETS: Registry[type[Dataset[Any]]] = Registry("dataset", UNKNOWN_DATASET, Dataset, check=_check_dataset)

#: Class decorator adding a data set to :data:`DATASETS` under ``cls.name`` (:meth:`Registry.register`).
register_dataset = DATASETS.register


def get_dataset(name: str) -> type[Dataset[Any]]:
    """The data set class registered as ``name``; the error lists the known names."""
    return DATASETS.lookup(name)


def dataset_of(params: Any) -> type[Dataset[Any]]:
    """The registered data set whose ``Params`` model ``params`` is an instance of.

    Raises
    ------
    ConfigError
        ``params`` is not the parameters of a registered data set.
    """
    cls = DATASETS.get(str(getattr(params, "name", ""))) if isinstance(params, BaseModel) else None
    if cls is None or not isinstance(params, cls.Params):
        raise ConfigError(MSG_NOT_PARAMS.format(known=", ".join(DATASETS), kind=type(params).__name__))
    return cls
