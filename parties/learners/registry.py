"""The learner plug-in registry: data-center learning methods a scenario names in its ``[learner]`` table.

A learner is a class with a ``name``, a pydantic ``Params`` model and whatever
fit/predict methods its flow calls; the registry only lets scenario specs
validate ``[learner]`` tables and list the known names, as for protocols and
attacks. A user's package adds one through a ``parley.learners`` entry point
(docs/plugins.md).
"""

from __future__ import annotations

from typing import Any, ClassVar, cast

from pydantic import BaseModel, ConfigDict
from typing_extensions import TypeVar

from parley.protocols.plugin import Plugin
from parley.protocols.registry import Registry

__all__ = ["LEARNERS", "Learner", "LearnerParams", "get_learner", "register_learner"]

UNKNOWN_LEARNER = "unknown learner {name!r}; known learners: {known}"


class LearnerParams(BaseModel):
    """Base of every learner's parameters (frozen, unknown keys rejected)."""

    model_config = ConfigDict(frozen=True, extra="forbid")


#: A learner's parameter model: ``class TwoStepLearner(Learner[TwoStepParams])``; a bare ``Learner`` has
#: ``LearnerParams``.
P = TypeVar("P", bound=LearnerParams, default=LearnerParams, covariant=True)


class Learner(Plugin[P]):
    """Base of every learner.

    Subclasses name their parameter model as the generic argument and as ``Params``
    (``class TwoStepLearner(Learner[TwoStepParams])``, ``Params = TwoStepParams``)
    and set ``name`` and the flows they serve.
    """

    name: ClassVar[str]
    Params: ClassVar[type[LearnerParams]] = LearnerParams
    #: The scenario flows (``Protocol.flow``) this learner can run in.
    flows: ClassVar[tuple[str, ...]] = ()
    summary: ClassVar[str] = ""

    def __init__(self, params: P | None = None) -> None:
        self.params = params if params is not None else cast(P, self.Params())

    @classmethod
    def check_scenario(cls, scenario: Any) -> None:
        """Refuse (ConfigError naming the dotted key) a scenario this learner cannot run in; default: accept.

        ``scenario`` is a :class:`parley.scenarios.spec.Scenario` whose ``[learner]`` names this learner
        (typed ``Any``: ``parties`` imports nothing of ``scenarios``). The spec calls the hook when it
        validates the scenario, before any data is loaded or any party starts, so it reads the spec only.
        """
        return None


def _check_learner(cls: type[Learner[Any]]) -> str | None:
    if not (isinstance(cls.Params, type) and issubclass(cls.Params, LearnerParams)):
        return "its Params is not a subclass of parley.parties.learners.LearnerParams"
    if not cls.flows:
        return "it names no flows"
    return None


#: Every learner by name: the built-ins, and the ``parley.learners`` entry points (loaded on first read).
LEARNERS: Registry[type[Learner[Any]]] = Registry("learner", UNKNOWN_LEARNER, Learner, check=_check_learner)

#: Class decorator adding a learner to :data:`LEARNERS` under ``cls.name`` (:meth:`Registry.register`).
register_learner = LEARNERS.register


def get_learner(name: str) -> type[Learner[Any]]:
    """The learner class registered as ``name``; the error lists the known names."""
    return LEARNERS.lookup(name)
