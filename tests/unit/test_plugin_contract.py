"""The contract every registered plug-in keeps: one common test over every protocol, attack, learner and data set.

As scikit-learn runs its common checks over every estimator (``parametrize_with_checks``) and Tumult
Analytics runs ``BudgetTests`` over every budget type, each test here runs over every entry of
``PROTOCOLS``, ``ATTACKS``, ``LEARNERS`` and ``DATASETS`` (the built-ins and any installed plug-in),
with ids such as ``protocol:laplace``:

- ``Params`` is frozen and closed (``frozen=True``, ``extra="forbid"``);
- every parameter has a description (what the docs' tables and a plug-in's help are written from);
- a value just outside each numeric bound a parameter declares (``ge``/``gt``/``le``/``lt``) is refused
  by the scenario's own validation (``_validate``) with a ConfigError naming the dotted key
  (``protocol.epsilon``) and the value received; just outside is the bound itself for ``gt``/``lt``, and
  for ``ge``/``le`` one step beyond it (1 for an integer, the next float64 for a float);
- the class names its ``Params`` as the generic argument of its family's base
  (``class LaplaceProtocol(ExactValueProtocol[LaplaceParams])``, what mypy types ``self.params`` with);
- the defaults construct: ``Params(**required)``, with :data:`EXAMPLES` for the fields that have no
  default, survives the spec's round trip (dump, then validate as a scenario table), and builds the plug-in;
- a ``check_scenario`` hook, where a plug-in declares one, is a class or static method (the spec calls it
  on the class);
- a built-in has a class docstring of its own and its name appears (quoted or in backticks) in docs/;
- a protocol exercised with a small synthetic audit set gives the same answer for the same party secret and,
  when its answers carry a privacy cost (they are random draws), a different one for another secret.

Beside the contract: every family's decorator is its registry's ``register``, which checks a class before
adding it; every module of the package lists in ``__all__`` only names it has, each once; and the
``check_scenario`` hooks refuse an impossible scenario when it is read (``attack.targets`` above the
audit set's size), before any data is loaded or any party starts.
"""

from __future__ import annotations

import collections
import functools
import importlib
import inspect
import math
import pkgutil
import re
import typing
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from annotated_types import Ge, Gt, Le, Lt

from parley.parties.attacks import ATTACKS, AttackerView
from parley.parties.learners import LEARNERS
from parley.parties.run_secrets import PartySecret
from parley.protocols import PROTOCOLS, AuditSet, MetricQuery
from parley.protocols.errors import ConfigError, ParleyError, PluginError, QueryError
from parley.protocols.plugin import Plugin
from parley.protocols.registry import NOT_REGISTERED, Registry
from parley.scenarios.datasets import DATASETS
from parley.scenarios.spec import Scenario, _validate

DOCS = Path(__file__).resolve().parents[2] / "docs"

#: Every family's registry; its key is also the scenario table the family's parameters live in.
FAMILIES = {"protocol": PROTOCOLS, "attack": ATTACKS, "learner": LEARNERS, "dataset": DATASETS}
PLUGINS = [(family, name, registry[name]) for family, registry in FAMILIES.items() for name in sorted(registry)]
IDS = [f"{family}:{name}" for family, name, _ in PLUGINS]

#: Example values of the parameters that have no default, by field name (every built-in's required field
#: is here). ``epsilon`` and ``delta`` are inside every protocol's bounds (smooth-laplace needs both in
#: (0, 1)); ``label``, ``protected`` and ``privileged`` name the columns of :data:`CSV_TEXT`, and ``path``
#: is that file, written for the test.
EXAMPLES: dict[str, Any] = {"epsilon": 0.5, "delta": 1e-6, "label": "y", "protected": "group", "privileged": "p"}
CSV_TEXT = "x,y,group\n0.5,1,p\n1.5,0,q\n2.5,1,q\n3.5,0,p\n"

#: A request whose payload a protocol's ``respond`` serves from the holdings alone (no shares, no ciphertexts).
SIMPLE_REQUESTS: dict[str, dict[str, Any]] = {"release-request": {"set": "audit"}}


@pytest.fixture
def csv_file(tmp_path: Path) -> Path:
    path = tmp_path / "people.csv"
    path.write_text(CSV_TEXT)
    return path


def _required(family: str, name: str, cls: type, csv_file: Path) -> dict[str, Any]:
    """Example values of ``cls.Params``'s required fields; a plug-in needing one EXAMPLES lacks is skipped."""
    examples = {**EXAMPLES, "path": str(csv_file)}
    needed = [field for field, info in cls.Params.model_fields.items() if info.is_required()]
    unknown = [field for field in needed if field not in examples]
    if unknown:
        message = f"{family} {name!r}: no example value of its required field(s) {unknown} in EXAMPLES"
        if FAMILIES[family].origin(name).builtin:
            pytest.fail(message + ": add one")
        pytest.skip(message)
    return {field: examples[field] for field in needed}


@pytest.mark.parametrize(("family", "name", "cls"), PLUGINS, ids=IDS)
def test_params_are_frozen_and_closed(family, name, cls):
    config = cls.Params.model_config
    assert config.get("frozen") is True, f"{family} {name!r}: {cls.Params.__name__} is not frozen"
    assert config.get("extra") == "forbid", f"{family} {name!r}: {cls.Params.__name__} accepts unknown keys"


@pytest.mark.parametrize(("family", "name", "cls"), PLUGINS, ids=IDS)
def test_every_parameter_is_described(family, name, cls):
    bare = [field for field, info in cls.Params.model_fields.items() if not (info.description or "").strip()]
    assert not bare, f"{family} {name!r}: parameters without a description: {', '.join(bare)}"


def _numeric_kind(annotation: Any) -> type | None:
    """int or float for a numeric field (``None`` allowed beside it), else None (bool is not numeric here)."""
    kinds = {arg for arg in (typing.get_args(annotation) or (annotation,)) if arg is not type(None)}
    if kinds == {int}:
        return int
    if float in kinds and kinds <= {int, float}:
        return float
    return None


def _just_outside(bound: Ge | Gt | Le | Lt, kind: type) -> int | float:
    """The nearest value of ``kind`` that ``bound`` refuses."""
    if isinstance(bound, Ge):
        return bound.ge - 1 if kind is int else math.nextafter(float(bound.ge), -math.inf)
    if isinstance(bound, Le):
        return bound.le + 1 if kind is int else math.nextafter(float(bound.le), math.inf)
    value = bound.gt if isinstance(bound, Gt) else bound.lt
    return value if kind is int else float(value)


def _bounds() -> list[Any]:
    cases = []
    symbols = {Ge: (">=", "ge"), Gt: (">", "gt"), Le: ("<=", "le"), Lt: ("<", "lt")}
    for family, name, cls in PLUGINS:
        for field, info in cls.Params.model_fields.items():
            kind = _numeric_kind(info.annotation)
            if kind is None:
                continue
            for bound in info.metadata:
                if type(bound) in symbols:
                    symbol, attribute = symbols[type(bound)]
                    cases.append(pytest.param(family, name, cls, field, _just_outside(bound, kind),
                                              id=f"{family}:{name}.{field}{symbol}{getattr(bound, attribute)}"))
    return cases


@pytest.mark.parametrize(("family", "name", "cls", "field", "bad"), _bounds())
def test_a_value_just_outside_a_bound_is_refused_naming_the_key(family, name, cls, field, bad, csv_file):
    data = {**_required(family, name, cls, csv_file), field: bad}
    with pytest.raises(ConfigError) as exc:
        _validate(cls.Params, data, family)
    assert f"{family}.{field}: " in str(exc.value) and f"(got {bad!r})" in str(exc.value)  # the key and the value


def _generic_arguments(cls: type) -> list[Any]:
    """The arguments of the family bases ``cls`` itself names (``Protocol[LaplaceParams]``), each one's first."""
    bases = cls.__dict__.get("__orig_bases__", ())  # its own, never a parent's
    return [typing.get_args(base)[0] for base in bases
            if isinstance(typing.get_origin(base), type) and issubclass(typing.get_origin(base), Plugin)]


@pytest.mark.parametrize(("family", "name", "cls"), PLUGINS, ids=IDS)
def test_the_generic_argument_is_the_params_model(family, name, cls):
    arguments = _generic_arguments(cls)
    if not FAMILIES[family].origin(name).builtin and not [a for a in arguments if not isinstance(a, typing.TypeVar)]:
        pytest.skip(f"{family} {name!r} comes from {FAMILIES[family].origin(name)} and names no generic argument")
    assert arguments == [cls.Params], (
        f"{family} {name!r}: its base's generic argument is {arguments}, its Params is {cls.Params.__name__}")


@pytest.mark.parametrize(("family", "name", "cls"), PLUGINS, ids=IDS)
def test_the_defaults_construct_and_build_the_plugin(family, name, cls, csv_file):
    params = cls.Params(**_required(family, name, cls, csv_file))
    # What a spec writes (to_dict, result.json, a study's cell) reads back as the same parameters.
    assert _validate(cls.Params, params.model_dump(), family) == params
    plugin = cls(params, AttackerView(n=20), np.random.default_rng(0)) if family == "attack" else cls(params)
    assert plugin.params is params


@pytest.mark.parametrize(("family", "name", "cls"), PLUGINS, ids=IDS)
def test_a_check_scenario_hook_is_called_on_the_class(family, name, cls):
    hook = inspect.getattr_static(cls, "check_scenario", None)
    assert hook is None or isinstance(hook, classmethod | staticmethod), (
        f"{family} {name!r}: check_scenario must be a classmethod or staticmethod (the spec calls it on the class)")


@functools.cache
def _docs_text() -> str:
    return "\n".join(path.read_text(encoding="utf-8") for path in sorted(DOCS.rglob("*.md")))


@pytest.mark.parametrize(("family", "name", "cls"), PLUGINS, ids=IDS)
def test_a_builtin_is_documented(family, name, cls):
    if not FAMILIES[family].origin(name).builtin:
        pytest.skip(f"{family} {name!r} comes from {FAMILIES[family].origin(name)}: its docs are its package's")
    assert (cls.__dict__.get("__doc__") or "").strip(), f"{family} {name!r}: {cls.__qualname__} has no docstring"
    quoted = re.compile(rf"`{re.escape(name)}`|\"{re.escape(name)}\"")
    assert quoted.search(_docs_text()), f"{family} {name!r} is named nowhere in docs/"


def _audit_set() -> AuditSet:
    """40 people, 12 of group a = 0, labels alternating: every metric's slices hold both groups."""
    rng = np.random.default_rng(7)
    a = rng.permutation(np.r_[np.zeros(12), np.ones(28)]).astype(np.int8)
    return AuditSet(a=a, y=(np.arange(40) % 2).astype(np.int8))


def _release(protocol: Any, audit: AuditSet, secret: PartySecret) -> dict[str, Any]:
    """One release from ``protocol``'s private noise stream: a simple request's reply, or a metric answer.

    A protocol that serves neither (its requests carry shares, ciphertexts or models) is skipped.
    """
    rng = secret.rng("noise")
    simple = [kind for kind in type(protocol).requests if kind in SIMPLE_REQUESTS]
    if simple:
        return protocol.respond(simple[0], SIMPLE_REQUESTS[simple[0]], {"audit": audit}, rng)
    kinds = ", ".join(type(protocol).requests) or "none"
    if not protocol.metrics:
        pytest.skip(f"{protocol.name!r} answers no metric query, only its own requests ({kinds}), whose payloads "
                    "its flow builds; its own tests exercise them")
    metric = "sp" if "sp" in protocol.metrics else protocol.metrics[0]
    models = np.random.default_rng(8).random((3, audit.n))
    query = MetricQuery.from_payload({"metric": metric, "predictions": models, "query_id": "contract"}, audit.n)
    return protocol.answer(query, audit, rng)


def _same(first: Any, second: Any) -> bool:
    try:
        np.testing.assert_equal(first, second)
    except AssertionError:
        return False
    return True


PROTOCOL_PLUGINS = [(name, cls) for family, name, cls in PLUGINS if family == "protocol"]


@pytest.mark.parametrize(("name", "cls"), PROTOCOL_PLUGINS, ids=[f"protocol:{name}" for name, _ in PROTOCOL_PLUGINS])
def test_a_release_depends_on_the_secret_alone(name, cls, csv_file):
    protocol = cls(cls.Params(**_required("protocol", name, cls, csv_file)))
    audit = _audit_set()
    protocol.check_holdings({"audit": audit})
    secret, other = PartySecret(bytes(32)), PartySecret(bytes([1]) * 32)
    try:
        first = _release(protocol, audit, secret)
    except QueryError as exc:  # e.g. a secure-computation protocol refuses predictions in the clear
        pytest.skip(f"{name!r} refuses a plain metric query ({exc}); its requests carry shares or ciphertexts "
                    "and are exercised by its own tests")
    assert _same(first, _release(protocol, audit, secret)), f"{name!r}: the same secret gave another release"
    if protocol.charges():  # a release with a privacy cost is a random draw: another secret draws another
        assert not _same(first, _release(protocol, audit, other)), f"{name!r}: another secret gave the same release"


# -- registration --------------------------------------------------------------------------------------

def test_each_familys_decorator_is_its_registrys_register():
    from parley.parties.attacks import register_attack
    from parley.parties.learners import register_learner
    from parley.protocols import register_protocol
    from parley.scenarios.datasets import register_dataset

    decorators = {"protocol": register_protocol, "attack": register_attack, "learner": register_learner,
                  "dataset": register_dataset}
    assert decorators == {family: registry.register for family, registry in FAMILIES.items()}


def test_register_checks_the_class_then_adds_it_under_its_name():
    class Widget:
        name = "spanner"

    class Broken(Widget):
        name = "broken"

    registry: Registry[type[Widget]] = Registry(
        "widget", "unknown widget {name!r}; known: {known}", Widget, group="parley.test-widgets-none",
        check=lambda cls: "it is broken" if cls is Broken else None)
    assert registry.register(Widget) is Widget and registry["spanner"] is Widget and registry.origin("spanner").builtin
    assert registry.register(Widget) is Widget  # the same class again: no error
    with pytest.raises(PluginError) as exc:
        registry.register(Broken)
    qualified = f"{__name__}.{Broken.__qualname__}"
    assert str(exc.value) == NOT_REGISTERED.format(what="widget", name="broken", cls=qualified, problem="it is broken")
    assert "broken" not in registry
    with pytest.raises(ParleyError, match="two widgets are registered as 'spanner'"):
        registry.register(type("Other", (Widget,), {}))


# -- __all__ -------------------------------------------------------------------------------------------

def _raise(name: str) -> None:
    raise  # walk_packages calls this inside its except clause: a package that fails to import fails collection


def _modules() -> list[str]:
    """``parley`` and every module under its three subpackages.

    ``parley`` itself is not walked: in a source checkout its ``__path__`` also holds the checkout's
    root, where the walk would find ``parley`` again, docs/ and tests/; its own folder holds no other
    module. No module is skipped: the only import-time side effect in the package is
    ``matplotlib.use("Agg")`` in the two report modules, a files-only backend the rest of the suite
    sets anyway.
    """
    names = ["parley"]
    for package in ("parley.protocols", "parley.parties", "parley.scenarios"):
        module = importlib.import_module(package)
        names.append(package)
        names += [info.name for info in pkgutil.walk_packages(module.__path__, package + ".", onerror=_raise)]
    return sorted(set(names))


@pytest.mark.parametrize("module_name", _modules())
def test_all_lists_names_the_module_has_once(module_name):
    module = importlib.import_module(module_name)
    exported = getattr(module, "__all__", None)
    if exported is None:
        return  # a module without __all__ exports by the underscore convention
    assert all(isinstance(name, str) for name in exported), f"{module_name}.__all__ holds a non-string"
    twice = sorted(name for name, count in collections.Counter(exported).items() if count > 1)
    assert not twice, f"{module_name}.__all__ lists {twice} more than once"
    missing = [name for name in exported if not hasattr(module, name)]
    assert not missing, f"{module_name}.__all__ lists {missing}, which the module does not have"


# -- check_scenario ------------------------------------------------------------------------------------

SMALL = {"name": "synthetic", "audit_size": 100, "minority": 20}
# the built-in targeted attacks share TargetsInAudit; a plug-in with an integer ``targets`` writes its own hook
TARGETED = sorted(name for name, cls in ATTACKS.items()
                  if "targets" in cls.Params.model_fields and ATTACKS.origin(name).builtin)


def _no_loading(monkeypatch: pytest.MonkeyPatch) -> None:
    """Make loading any data set, or running any scenario, fail the test."""
    def refuse(*args: Any, **kwargs: Any) -> None:
        raise AssertionError("the scenario was run or its data loaded")

    for cls in DATASETS.values():
        monkeypatch.setattr(cls, "load", refuse)
    monkeypatch.setattr("parley.scenarios.runner.run", refuse)


def test_targeted_attacks_are_the_ones_checked():
    from parley.parties.attacks.query_leakage.targeted import TargetsInAudit

    assert TARGETED, "no attack with a targets field"
    assert [name for name in TARGETED if not issubclass(ATTACKS[name], TargetsInAudit)] == []


@pytest.mark.parametrize("attack", TARGETED)
def test_more_targets_than_the_audit_set_holds_are_refused_when_the_scenario_is_read(attack, monkeypatch):
    from parley.parties.attacks.query_leakage.targeted import TARGET_OUTSIDE_AUDIT, TARGETS_OVER_AUDIT

    _no_loading(monkeypatch)
    base = {"dataset": SMALL, "backend": "local", "attack": {"name": attack}}
    with pytest.raises(ConfigError) as exc:
        Scenario.from_dict({**base, "attack": {"name": attack, "targets": 101}})
    assert str(exc.value) == TARGETS_OVER_AUDIT.format(got=101, n=100)
    assert "at most the audit set's size (100)" in str(exc.value)
    with pytest.raises(ConfigError) as exc:
        Scenario.from_dict({**base, "attack": {"name": attack, "targets": [3, 100]}})
    assert str(exc.value) == TARGET_OUTSIDE_AUDIT.format(index=100, last=99, n=100)
    for fits in (100, [0, 99]):
        assert Scenario.from_dict({**base, "attack": {"name": attack, "targets": fits}}).attack.params.targets == fits


def test_the_measured_case_fails_at_spec_time(monkeypatch):
    from parley.scenarios.catalog import resolve_scenario

    _no_loading(monkeypatch)
    scenario = Scenario.from_toml(resolve_scenario("adult-raw-double-query"))
    assert scenario.dataset.audit_size == 1000
    with pytest.raises(ConfigError) as exc:
        scenario.with_overrides(["attack.targets=5000"])
    message = str(exc.value)
    assert message.startswith("attack.targets: ") and "at most the audit set's size (1000)" in message
    with pytest.raises(ConfigError, match=re.escape(message)):
        Scenario.from_dict({**scenario.to_dict(), "attack": {"name": "double-query", "targets": 5000}})


def test_parley_run_reports_it_in_one_line_and_exits_2(monkeypatch, tmp_path, capsys):
    from parley.scenarios.cli import main

    _no_loading(monkeypatch)
    monkeypatch.chdir(tmp_path)
    assert main(["run", "adult-raw-double-query", "--set", "attack.targets=5000"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith("parley: error: attack.targets: ")
    assert "at most the audit set's size (1000)" in err
    assert not (tmp_path / "runs").exists()


def test_every_components_hook_is_called_with_the_scenario(monkeypatch):
    from parley.scenarios.catalog import resolve_scenario

    data = Scenario.from_toml(resolve_scenario("adult-correction")).to_dict()
    seen: list[tuple[str, str]] = []

    def recorder(family: str) -> Any:
        def check_scenario(cls: type, scenario: Scenario) -> None:
            assert isinstance(scenario, Scenario)
            seen.append((family, cls.name))
        return classmethod(check_scenario)

    for family in FAMILIES:
        table = data[family]
        monkeypatch.setattr(FAMILIES[family][table["name"]], "check_scenario", recorder(family))
    Scenario.from_dict(data)
    assert sorted(seen) == sorted((family, data[family]["name"]) for family in FAMILIES)

    def refuse(cls: type, scenario: Scenario) -> None:
        raise ConfigError("learner.metric: refused by the learner's own check")

    monkeypatch.setattr(LEARNERS[data["learner"]["name"]], "check_scenario", classmethod(refuse))
    with pytest.raises(ConfigError, match="^learner.metric: refused by the learner's own check$"):
        Scenario.from_dict(data)
