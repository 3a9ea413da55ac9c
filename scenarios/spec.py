"""Scenario specs: TOML files (or dicts) validated into frozen pydantic models.

A scenario names a data set, the data center's base model, the compliance
party's protocol, the threat model and its attack. Protocol, attack and
dataset tables are validated against the parameter model each plug-in
registers (a built-in, or a plug-in from an entry point of another package, see
docs/plugins.md), so an unknown key is reported with the keys that plug-in accepts::

    name = "adult-raw-double-query"
    threat_model = "curious-data-center"
    [dataset]
    name = "adult"
    protected = "race"
    audit_size = 1000
    [protocol]
    name = "raw"
    [attack]
    name = "double-query"
    targets = 20

``--set key=value`` (or :meth:`Scenario.with_overrides`) changes any field by
its dotted path, e.g. ``protocol.decimals=4`` or ``dataset.audit_size=500``.
``epsilon`` is an alias of ``protocol.epsilon`` (the per-query epsilon of the DP
protocols), so ``parley run adult-conceal --set epsilon=1`` works; it does not
change ``budget``.

Privacy budget: a protocol that spends budget (a DP protocol) is accounted in
the run's ``ledger.sqlite``. An optional ``[budget]`` table caps what the
querier (the data center, and the adversary speaking in its name) may spend
over the whole run, composed as ``composition`` says::

    composition = "sequential"     # or "advanced" / "zcdp" (need budget.delta >= 1e-6)
    [budget]
    epsilon = 2.0
    delta = 0.0

A compliance team can instead give each purpose a query declares its own cap, so
that honest exploration never draws on the honest audit's budget (each purpose is a
ledger account ``data-center/<purpose>``; the honest queries declare ``audit``,
a query declaring nothing is ``exploratory``). The purpose is what the querier
declares: a querier that lies (an adversary holding the data center's key) can
spend every purpose's cap, so what it can spend in all is the sum of the caps::

    [budget.purposes.audit]
    epsilon = 1.0
    [budget.purposes.exploratory]
    epsilon = 4.0

Without ``[budget]`` nothing is capped (debits are still recorded and reported
as ``epsilon_spent`` / ``delta_spent``). Protocols that spend nothing (``raw``)
ignore the budget.
"""

from __future__ import annotations

import json
import re
import tomllib
import typing
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, Literal, TypeVar

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    SerializeAsAny,
    ValidationError,
    create_model,
    model_validator,
)

from parley import protocols
from parley.parties.attacks import ATTACKS, PASSIVE, get_attack
from parley.parties.learners import LEARNERS, ModelSpec, get_learner
from parley.parties.ledger import DEFAULT_SLACK
from parley.protocols.budget import Budget, budget
from parley.protocols.errors import ConfigError
from parley.protocols.metrics import METRICS
from parley.scenarios.datasets import DATASETS

__all__ = ["BudgetSpec", "PurposeBudget", "Component", "SAFE_NAME", "SafeName", "Scenario", "THREAT_MODELS",
           "check_name", "parse_assignment", "load_toml"]

ModelT = TypeVar("ModelT", bound=BaseModel)

THREAT_MODELS = ("curious-data-center", "passive-observer", "black-box-auxiliary")

UNKNOWN_KEY = "unknown key {key!r}; allowed keys: {allowed}"
MISSING_KEY = "missing key {key!r}"
BAD_VALUE = "{key}: {msg} (got {value})"
NOT_A_TABLE = "{key} must be a table (e.g. [{key}] in TOML), got {value!r}"
NO_NAME = "{key} needs a 'name' (one of: {known})"
BAD_ASSIGNMENT = "--set expects key=value with a dotted key such as protocol.decimals=4, got {text!r}"
BAD_TOML = "{path}: not valid TOML ({error})"
NO_FILE = "scenario file {path} does not exist"
WRONG_THREAT = "attack {name!r} works under {supported}, but the scenario's threat_model is {threat!r}"
BAD_DATASET = "dataset.name must be one of {known}, got {name!r}"
BAD_AUDIT_METRIC = "audit_metrics: unknown metric {metric!r}; known: {known}"
NOT_SETTABLE = "cannot set {dotted!r}: {part!r} is a value, not a table"
WRONG_FLOW = ("{what} {name!r} reads {flows} exchanges, but protocol {protocol!r} runs a {flow!r} exchange "
              "(attacks for it: {fitting})")
LEARNER_FLOW = "learner {name!r} runs in {flows} exchanges, but protocol {protocol!r} runs a {flow!r} exchange"
GROUPS_MISMATCH = ("dataset {name!r} with protected={protected!r} has {k} groups, but protocol {protocol!r} "
                   "{takes} (k-ary attributes run under rr-release with protocol.groups = {k})")
OBSERVER_ACTIVE = "observer attack {name!r} must be passive (one of the attacks for passive-observer)"
CONFIDENTIAL_FLOW = ("confidential = true is not supported by protocol {protocol!r}: its {flow!r} flow reads the "
                     "compliance party's replies from the transcript, where a confidential channel seals them; "
                     "confidential channels run with the {supported} flows")
ADVANCED_NEEDS_DELTA = ("composition {method!r} spends a slack delta'={slack:g}: "
                        "budget.delta must be at least {slack:g}, "
                        "got {delta!r}")
BUDGET_NEEDS_CAP = "budget needs epsilon (one cap for the querier) or a non-empty purposes table (one cap per purpose)"
BUDGET_TWO_POLICIES = ("budget gives both a cap (epsilon/delta) and purposes: with purposes every cap is a purpose's "
                       "(budget.purposes.<name>.epsilon)")
BAD_PURPOSE = "budget.purposes: purpose names are 1 to 40 letters, digits, '_' or '-', got {name!r}"
NO_AUDIT_PURPOSE = ("budget.purposes needs an 'audit' purpose: the honest data center's audit queries declare it "
                    "(got {names})")
#: A purpose's name: part of a ledger account name, ``data-center/audit``.
PURPOSE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_-]{0,39}")
EPSILON_TWICE = "epsilon is an alias of protocol.epsilon: give one of them, not both"
EPSILON_ALIAS = " (epsilon is an alias of protocol.epsilon, which protocol {name!r} does not take)"
#: Slack delta' of advanced composition in a run's ledger.
COMPOSITION_SLACK = DEFAULT_SLACK

def _describe(value: Any) -> Any:
    text = repr(value)
    return text if len(text) <= 80 else text[:77] + "..."


def _model_at(model: type[BaseModel], loc: Sequence[Any]) -> type[BaseModel]:
    """The (nested) model a validation error's location points into: ``outputs.tables.0`` -> TableSpec."""
    for part in loc:
        if isinstance(part, int):
            continue
        field = model.model_fields.get(part)
        if field is None:
            return model
        candidates = [field.annotation, *typing.get_args(field.annotation)]
        nested = [t for c in candidates for t in (c, *typing.get_args(c))
                  if isinstance(t, type) and issubclass(t, BaseModel)]
        if not nested:
            return model
        model = nested[0]
    return model


#: A scenario's or study's name: it names a folder (``runs/<name>``, ``studies/<name>``, a temporary
#: folder's prefix), so it is one path component and nothing more: no separators, no ``..``, no leading dot
#: or space.
SAFE_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9 ._-]{0,99}")
BAD_NAME = ("name must be 1 to 100 letters, digits, spaces, '.', '_' or '-', starting with a letter or digit "
            "(it names the output folder), got {name!r}")


def check_name(name: Any) -> str:
    """``name`` if it is a safe folder name (:data:`SAFE_NAME`), else :class:`ConfigError`."""
    if not isinstance(name, str) or SAFE_NAME.fullmatch(name) is None:
        raise ConfigError(BAD_NAME.format(name=name))
    return name


#: A ``str`` field holding a safe name (validated wherever the field is, including ``_SimpleFields``).
SafeName = Annotated[str, AfterValidator(check_name)]


def _validate_typed(model: type[ModelT], data: dict[str, Any]) -> ModelT:
    """Validate without coercion across types when ``data`` holds TOML's types (a file, ``--set``).

    pydantic's lax mode turns ``true`` into 1, ``"yes"`` into True and ``1e3`` into 1000, so a
    mistyped value would run silently; its strict JSON mode accepts exactly the JSON/TOML type
    of each field (an integer where a float is asked for, an array for a tuple). Values that are
    not plain data (a ``Path`` or a numpy number handed over by a script) keep the lax rules.
    """
    try:
        text = json.dumps(data, allow_nan=True)
    except (TypeError, ValueError):
        return model.model_validate(data)
    return model.model_validate_json(text, strict=True)


def _validate(model: type[ModelT], data: Any, where: str) -> ModelT:
    """Validate ``data`` with ``model``; one clear ConfigError naming every bad key."""
    if not isinstance(data, Mapping):
        raise ConfigError(NOT_A_TABLE.format(key=where, value=_describe(data)))
    try:
        return _validate_typed(model, dict(data))
    except ValidationError as exc:
        problems = []
        # Missing keys first, then unknown ones, then bad values: the same order whatever the input's key order.
        order = {"missing": 0, "extra_forbidden": 1}
        for err in sorted(exc.errors(), key=lambda e: order.get(e["type"], 2)):
            key = ".".join([where, *map(str, err["loc"])]) if where else ".".join(map(str, err["loc"]))
            if err["type"] == "extra_forbidden":
                owner = _model_at(model, err["loc"][:-1])
                allowed = ", ".join(sorted(k for k, f in owner.model_fields.items() if not f.exclude)) or "none"
                problems.append(UNKNOWN_KEY.format(key=key, allowed=allowed))
            elif err["type"] == "missing":
                problems.append(MISSING_KEY.format(key=key))
            elif isinstance(err.get("ctx", {}).get("error"), ConfigError):  # our own validator's message
                problems.append(str(err["ctx"]["error"]))
            else:
                problems.append(BAD_VALUE.format(key=key, msg=err["msg"], value=_describe(err.get("input"))))
        raise ConfigError("; ".join(problems)) from None


class Component(BaseModel):
    """A named plug-in (protocol, attack, data set) with its validated parameters."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: str
    if TYPE_CHECKING:
        params: Any  # the Params model of the plug-in ``name`` names, known only at run time
    else:
        params: SerializeAsAny[BaseModel]

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, **self.params.model_dump(exclude={"name"})}


def _component(where: str, data: Any, lookup: Callable[[str], type[BaseModel]], known: Iterable[str]) -> Component:
    if not isinstance(data, Mapping):
        raise ConfigError(NOT_A_TABLE.format(key=where, value=_describe(data)))
    if "name" not in data:
        raise ConfigError(NO_NAME.format(key=where, known=", ".join(sorted(known))))
    name = data["name"]
    params_model = lookup(name)
    params = _validate(params_model, {k: v for k, v in data.items() if k != "name"}, where)
    return Component(name=name, params=params)


def _dataset(data: Any) -> BaseModel:
    if not isinstance(data, Mapping):
        raise ConfigError(NOT_A_TABLE.format(key="dataset", value=_describe(data)))
    name = data.get("name")
    # The registry holds the built-ins and the parley.datasets entry points (plug-ins).
    if not isinstance(name, str) or name not in DATASETS:
        raise ConfigError(BAD_DATASET.format(known=", ".join(DATASETS), name=name))
    return _validate(DATASETS[name].Params, data, "dataset")


def _protocol_params(name: str) -> type[BaseModel]:
    return protocols.get_protocol(name).Params


def _attack_params(name: str) -> type[BaseModel]:
    return get_attack(name).Params


def _learner_params(name: str) -> type[BaseModel]:
    return get_learner(name).Params


class PurposeBudget(BaseModel):
    """One purpose's budget over a whole run: epsilon and delta (0 for pure DP)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epsilon: float = Field(gt=0.0, allow_inf_nan=False, description="total epsilon this purpose may spend")
    delta: float = Field(default=0.0, ge=0.0, lt=1.0, description="total delta this purpose may spend")

    def to_budget(self) -> Budget:
        return budget(self.epsilon, self.delta)


class BudgetSpec(BaseModel):
    """The querier's privacy budget over a whole run: one cap (epsilon, delta), or one cap per declared purpose."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    epsilon: float | None = Field(default=None, gt=0.0, allow_inf_nan=False,
                                  description="total epsilon the querier may spend (without purposes)")
    delta: float = Field(default=0.0, ge=0.0, lt=1.0, description="total delta the querier may spend")
    purposes: dict[str, PurposeBudget] | None = Field(
        default=None, description="a cap per purpose a query declares ('audit': the honest queries; 'exploratory': "
        "queries declaring none), each its own ledger account")

    @model_validator(mode="after")
    def _one_policy(self) -> BudgetSpec:
        if self.purposes is None:
            if self.epsilon is None:
                raise ValueError(BUDGET_NEEDS_CAP)
            return self
        if self.epsilon is not None or self.delta != 0.0:
            raise ValueError(BUDGET_TWO_POLICIES)
        if not self.purposes:
            raise ValueError(BUDGET_NEEDS_CAP)
        for name in self.purposes:
            if PURPOSE_NAME.fullmatch(name) is None:
                raise ValueError(BAD_PURPOSE.format(name=name))
        if "audit" not in self.purposes:  # else every honest audit query would be refused as over budget
            raise ValueError(NO_AUDIT_PURPOSE.format(names=", ".join(sorted(self.purposes))))
        return self

    def limits(self) -> dict[str | None, Budget]:
        """The caps by purpose; ``{None: cap}`` without purposes."""
        if self.purposes is None:
            return {None: self.to_budget()}
        return {name: spec.to_budget() for name, spec in self.purposes.items()}

    def to_budget(self) -> Budget:
        """The one cap (without purposes); with purposes, the sum of their caps (what the querier may spend)."""
        if self.purposes is None:
            assert self.epsilon is not None
            return budget(self.epsilon, self.delta)
        return budget(sum(p.epsilon for p in self.purposes.values()), sum(p.delta for p in self.purposes.values()))


class Scenario(BaseModel):
    """One run: data set, base model, protocol, threat model and attack.

    Build it with :meth:`from_dict` or :meth:`from_toml` (which give precise
    errors); :meth:`to_dict` gives the same flat form back.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: SafeName = "custom"
    description: str = ""
    seed: int = Field(default=0, ge=0, description="root of the simulated world's random streams (public: never a "
                                                   "party's noise or keys)")
    threat_model: Literal["curious-data-center", "passive-observer", "black-box-auxiliary"] = "curious-data-center"
    if TYPE_CHECKING:
        dataset: Any  # the Params model of the data set ``dataset.name`` names, known only at run time
    else:
        dataset: SerializeAsAny[BaseModel]
    model: ModelSpec = Field(default_factory=ModelSpec)
    protocol: Component
    attack: Component
    observer: Component | None = Field(default=None, description="a passive observer also attacking the transcript")
    learner: Component | None = Field(default=None,
                                      description="the data center's learning method, where the flow has one")
    audit_metrics: tuple[str, ...] = Field(default=("sp",), description="honest queries about the base model")
    backend: Literal["ray", "local"] = Field(default="ray", description="parties as Ray actors, or in-process")
    budget: BudgetSpec | None = Field(default=None,
                                      description="the querier's privacy budget over the run (no cap if absent)")
    composition: Literal["sequential", "advanced", "zcdp"] = Field(
        default="sequential", description="how the ledger composes the querier's per-query costs ('zcdp': the "
        "recorded zCDP parameters of dp-counts' Gaussian answers, composed by dp-accounting)")
    confidential: bool = Field(
        default=False,
        description="payloads encrypted between parties (X25519 + ChaCha20-Poly1305); observers see sizes")

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> Scenario:
        """Validate a scenario given as nested dicts (the TOML structure)."""
        if not isinstance(data, Mapping):
            raise ConfigError(NOT_A_TABLE.format(key="scenario", value=_describe(data)))
        for key in data:
            if key not in cls.model_fields:
                raise ConfigError(UNKNOWN_KEY.format(key=key, allowed=", ".join(sorted(cls.model_fields))))
        for key in ("dataset", "attack"):
            if key not in data:
                raise ConfigError(MISSING_KEY.format(key=key))
        parsed: dict[str, Any] = {
            "dataset": _dataset(data["dataset"]),
            "protocol": _component("protocol", data.get("protocol", {"name": "raw"}), _protocol_params,
                                   protocols.PROTOCOLS),
            "attack": _component("attack", data["attack"], _attack_params, ATTACKS),
            "model": _validate(ModelSpec, data.get("model", {}), "model"),
        }
        if data.get("observer") is not None:
            parsed["observer"] = _component("observer", data["observer"], _attack_params, ATTACKS)
        if data.get("budget") is not None:
            parsed["budget"] = _validate(BudgetSpec, data["budget"], "budget")
        if data.get("learner") is not None:
            parsed["learner"] = _component("learner", data["learner"], _learner_params, LEARNERS)
        simple = {k: v for k, v in data.items() if k not in parsed and k not in ("observer", "budget", "learner")}
        rest = _validate(_SimpleFields, simple, "")
        scenario = cls(**parsed, **rest.model_dump())
        scenario._check_threat_model()
        scenario._check_plugins()
        return scenario

    def _check_threat_model(self) -> None:
        attack = get_attack(self.attack.name)
        if self.threat_model not in attack.threat_models:
            raise ConfigError(WRONG_THREAT.format(name=attack.name, supported=", ".join(attack.threat_models),
                                                  threat=self.threat_model))
        if self.observer is not None and get_attack(self.observer.name).threat_models != PASSIVE:
            raise ConfigError(OBSERVER_ACTIVE.format(name=self.observer.name))
        flow = protocols.get_protocol(self.protocol.name).flow
        for what, component in (("attack", self.attack), ("observer", self.observer)):
            if component is not None and flow not in get_attack(component.name).flows:
                fitting = ", ".join(sorted(n for n, cls in ATTACKS.items() if flow in cls.flows)) or "none"
                raise ConfigError(WRONG_FLOW.format(what=what, name=component.name,
                                                    flows=" or ".join(get_attack(component.name).flows),
                                                    protocol=self.protocol.name, flow=flow, fitting=fitting))
        if self.confidential:
            from parley.scenarios.exchanges import EXCHANGES, get_exchange

            if not get_exchange(flow).confidential:
                supported = sorted(name for name, cls in EXCHANGES.items() if cls.confidential)
                raise ConfigError(CONFIDENTIAL_FLOW.format(protocol=self.protocol.name, flow=flow,
                                                           supported=" and ".join(supported)))
        self._check_groups()
        if self.learner is not None and flow not in get_learner(self.learner.name).flows:
            raise ConfigError(LEARNER_FLOW.format(name=self.learner.name, flows=" or ".join(
                get_learner(self.learner.name).flows) or "no", protocol=self.protocol.name, flow=flow))
        for metric in self.audit_metrics:
            if metric not in METRICS:
                raise ConfigError(BAD_AUDIT_METRIC.format(metric=metric, known=", ".join(METRICS)))
        if self.composition != "sequential" and self.budget is not None:
            for limit in self.budget.limits().values():
                if limit.delta < COMPOSITION_SLACK:
                    raise ConfigError(ADVANCED_NEEDS_DELTA.format(method=self.composition, slack=COMPOSITION_SLACK,
                                                                  delta=limit.delta))

    def _check_plugins(self) -> None:
        """Each plug-in's own ``check_scenario(scenario)`` hook, once the combination is otherwise valid.

        A plug-in (protocol, attack, learner, data set) may declare the hook to refuse, naming the dotted
        key, a combination only it knows to be impossible (``attack.targets`` above ``dataset.audit_size``),
        here, in milliseconds, rather than after the data is loaded and the models trained. An attack's hook
        runs for the ``[attack]`` table (it reads ``scenario.attack``); a passive ``[observer]`` is not asked.
        """
        plugins: list[type] = [DATASETS.lookup(self.dataset.name), protocols.get_protocol(self.protocol.name),
                               get_attack(self.attack.name)]
        if self.learner is not None:
            plugins.append(get_learner(self.learner.name))
        for plugin in plugins:
            check = getattr(plugin, "check_scenario", None)
            if check is not None:
                check(self)

    def _check_groups(self) -> None:
        """A dataset with more than two groups needs a protocol whose ``groups`` parameter matches."""
        k = int(getattr(self.dataset, "group_count", 2))
        if k == 2:
            return
        groups = getattr(self.protocol.params, "groups", None)
        if groups != k:
            takes = "is binary" if groups is None else f"has groups = {groups}"
            raise ConfigError(GROUPS_MISMATCH.format(name=self.dataset.name,
                                                     protected=getattr(self.dataset, "protected", None), k=k,
                                                     protocol=self.protocol.name, takes=takes))

    @classmethod
    def from_toml(cls, path: str | Path) -> Scenario:
        """Read and validate a scenario file; a relative CSV path is taken from the file's folder."""
        data = load_toml(path)
        dataset = data.get("dataset")
        if isinstance(dataset, dict) and dataset.get("name") == "csv" and isinstance(dataset.get("path"), str):
            csv_path = Path(dataset["path"]).expanduser()
            if not csv_path.is_absolute():
                data["dataset"] = {**dataset, "path": str((Path(path).parent / csv_path).resolve())}
        return cls.from_dict(data)

    def to_dict(self) -> dict[str, Any]:
        """The flat (TOML-shaped) form: plug-in tables carry ``name`` and their parameters."""
        out: dict[str, Any] = {
            "name": self.name, "description": self.description, "seed": self.seed,
            "threat_model": self.threat_model, "dataset": self.dataset.model_dump(),
            "model": self.model.model_dump(), "protocol": self.protocol.to_dict(), "attack": self.attack.to_dict(),
            "audit_metrics": list(self.audit_metrics), "backend": self.backend,
        }
        if self.observer is not None:
            out["observer"] = self.observer.to_dict()
        if self.learner is not None:
            out["learner"] = self.learner.to_dict()
        # Written only when set, so the specs (and study cell ids) of runs without a budget stay as they were.
        if self.budget is not None:
            out["budget"] = self.budget.model_dump(exclude_none=True)
        if self.composition != "sequential" or self.budget is not None:
            out["composition"] = self.composition
        if self.confidential:
            out["confidential"] = True
        return out

    def with_values(self, values: Mapping[str, Any]) -> Scenario:
        """A copy with fields changed by dotted path (``{"protocol.decimals": 4}``), re-validated.

        Changing a plug-in's ``name`` (``attack.name``, ``protocol.name``, ...)
        starts its table afresh: the old plug-in's parameters do not carry over.
        ``epsilon`` is an alias of ``protocol.epsilon``.
        """
        values = dict(values)
        aliased = "epsilon" in values
        if aliased:
            if "protocol.epsilon" in values:
                raise ConfigError(EPSILON_TWICE)
            values["protocol.epsilon"] = values.pop("epsilon")
        try:
            return self._with_values(values)
        except ConfigError as exc:
            if aliased and "'protocol.epsilon'" in str(exc):
                name = values.get("protocol.name", self.protocol.name)
                raise ConfigError(str(exc) + EPSILON_ALIAS.format(name=name)) from None
            raise

    def _with_values(self, values: Mapping[str, Any]) -> Scenario:
        data = self.to_dict()
        for dotted, value in values.items():
            table, _, leaf = dotted.partition(".")
            if leaf == "name" and isinstance(data.get(table), dict) and data[table].get("name") != value:
                data[table] = {}
        for dotted, value in values.items():
            *parents, leaf = dotted.split(".")
            node = data
            for part in parents:
                child = node.get(part)
                if child is None:
                    child = node[part] = {}
                elif not isinstance(child, dict):
                    raise ConfigError(NOT_SETTABLE.format(dotted=dotted, part=part))
                node = child
            node[leaf] = value
        if any(key.startswith("dataset.") for key in values):
            data = self._own_csv(data, values)
        return Scenario.from_dict(data)

    def _own_csv(self, data: dict[str, Any], values: Mapping[str, Any]) -> dict[str, Any]:
        """A CSV set from the command line gets an absolute path and, unless named, a name of its own.

        The path is taken from the working directory, where the user typed it, so the
        stored spec (``result.json``) reruns from anywhere; the name keeps the scenario's
        runs apart from those of the catalog scenario it started from.
        """
        dataset = data.get("dataset")
        if not (isinstance(dataset, dict) and dataset.get("name") == "csv" and isinstance(dataset.get("path"), str)):
            return data
        path = Path(dataset["path"]).expanduser().resolve()
        data = {**data, "dataset": {**dataset, "path": str(path)}}
        was = self.dataset
        moved = getattr(was, "name", None) != "csv" or Path(getattr(was, "path", "")).resolve() != path
        if moved and "name" not in values:
            data["name"] = f"{self.name}-on-{re.sub(r'[^A-Za-z0-9._-]+', '-', path.stem).strip('-') or 'csv'}"
        return data

    def with_overrides(self, assignments: Sequence[str]) -> Scenario:
        """Apply ``key=value`` strings as given on the command line."""
        return self.with_values(dict(parse_assignment(text) for text in assignments))


_SIMPLE = ("name", "description", "seed", "threat_model", "audit_metrics", "backend", "composition", "confidential")
#: The scalar top-level fields, validated apart so messages name them plainly.
_SIMPLE_DEFINITIONS: dict[str, Any] = {key: (Scenario.model_fields[key].annotation, Scenario.model_fields[key])
                                       for key in _SIMPLE}
_SimpleFields = create_model("_SimpleFields", __config__=ConfigDict(extra="forbid"), **_SIMPLE_DEFINITIONS)


def parse_assignment(text: str) -> tuple[str, Any]:
    """``"a.b=4"`` -> ``("a.b", 4)``; the value is read as TOML, else kept as a string."""
    key, sep, raw = text.partition("=")
    key = key.strip()
    if not sep or not key or any(not part for part in key.split(".")):
        raise ConfigError(BAD_ASSIGNMENT.format(text=text))
    try:
        value = tomllib.loads(f"v = {raw.strip()}")["v"]
    except tomllib.TOMLDecodeError:
        value = raw.strip()
    return key, value


def load_toml(path: str | Path) -> dict[str, Any]:
    """Read a TOML file with errors that name the file."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(NO_FILE.format(path=path))
    try:
        return tomllib.loads(path.read_text(encoding="utf-8"))
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(BAD_TOML.format(path=path, error=exc)) from None
