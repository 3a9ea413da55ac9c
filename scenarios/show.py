"""``parley show NAME``: what a scenario, study or plug-in is and every key it takes.

Everything shown is read from the code: a plug-in's docstring and its pydantic ``Params``
model (each field's type, default, constraints and description), a scenario's TOML
description and its validated values. :func:`params_table` writes the same facts as a
Markdown table (docs/scenarios.md's protocol tables are checked against it).
"""

from __future__ import annotations

import inspect
import shutil
import textwrap
import types
import typing
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from annotated_types import Ge, Gt, Le, Lt
from pydantic import BaseModel
from pydantic.fields import FieldInfo

__all__ = ["Key", "UNKNOWN_NAME", "keys_of", "params_table", "show"]

UNKNOWN_NAME = ("no scenario, study, protocol, attack, learner, data set or exchange is named {name!r}; "
                "`parley list` lists them")
#: The plug-in families `parley show` looks a name up in, in the order it shows them.
FAMILIES = ("protocol", "attack", "learner", "data set", "exchange", "encoding")


@dataclass(frozen=True)
class Key:
    """One settable key: its dotted name, type and range, default (or current value), and description."""

    key: str
    kind: str
    default: str
    description: str
    required: bool = False


def _words(number: Any) -> str:
    """A bound as the docs write it: ``0``, ``0.5``, ``4,096``."""
    if isinstance(number, float) and number.is_integer() and abs(number) < 1e15:
        number = int(number)
    return f"{number:,}" if isinstance(number, int) else f"{number:g}"


def _bounds(metadata: list[Any]) -> str:
    low = next(((f"{'[' if isinstance(m, Ge) else '('}", m.ge if isinstance(m, Ge) else m.gt)
                for m in metadata if isinstance(m, (Ge, Gt))), None)
    high = next(((f"{']' if isinstance(m, Le) else ')'}", m.le if isinstance(m, Le) else m.lt)
                 for m in metadata if isinstance(m, (Le, Lt))), None)
    if low and high:
        return f"in {low[0]}{_words(low[1])}, {_words(high[1])}{high[0]}"
    if low:
        return f"{'>=' if low[0] == '[' else '>'} {_words(low[1])}"
    if high:
        return f"{'<=' if high[0] == ']' else '<'} {_words(high[1])}"
    return ""


def _type_name(annotation: Any) -> str:
    """``int`` -> integer, ``Literal['a', 'b']`` -> ``"a" | "b"``, ``X | None`` -> ``X or none``, ..."""
    origin = typing.get_origin(annotation)
    args = typing.get_args(annotation)
    if origin is typing.Literal:
        return " | ".join(f'"{a}"' if isinstance(a, str) else repr(a) for a in args)
    if origin is typing.Annotated:
        return _type_name(args[0])
    if origin in (typing.Union, types.UnionType):
        named = [_type_name(a) for a in args if a is not type(None)]
        return " or ".join(named) + (" or none" if type(None) in args else "")
    if origin in (list, tuple, set, frozenset) or annotation in (list, tuple):
        inner = [a for a in args if a is not Ellipsis]
        return f"list of {_type_name(inner[0])}" if inner else "list"
    if origin in (dict, Mapping) or annotation is dict:
        return "table"
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return "table"
    names = {int: "integer", float: "float", bool: "boolean", str: "string", type(None): "none"}
    if annotation in names:
        return names[annotation]
    return getattr(annotation, "__name__", str(annotation).replace("typing.", ""))


def kind_of(info: FieldInfo) -> str:
    """The field's type with its range: ``float > 0``, ``integer in [1, 60]``, ``"raw" | "clamp"``."""
    kind = _type_name(info.annotation)
    bounds = _bounds(list(info.metadata))
    if not bounds:
        return kind
    if kind.endswith(" or none"):  # integer >= 1, or none
        return f"{kind.removesuffix(' or none')} {bounds}, or none"
    return f"{kind} {bounds}"


def value_text(value: Any) -> str:
    """A value as TOML and ``--set`` write it (``none`` for absent)."""
    if value is None:
        return "none"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(value_text(v) for v in value) + "]"
    if isinstance(value, Mapping):
        return "{ " + ", ".join(f"{k} = {value_text(v)}" for k, v in value.items()) + " }" if value else "{}"
    if isinstance(value, BaseModel):
        return value_text(value.model_dump())
    return str(value)


def default_of(info: FieldInfo) -> str:
    if info.is_required():
        return "required"
    if info.default_factory is not None:
        return value_text(info.default_factory())  # type: ignore[call-arg]
    return value_text(info.default)


def keys_of(model: type[BaseModel], prefix: str = "", values: Mapping[str, Any] | None = None,
            skip: tuple[str, ...] = ("name",)) -> list[Key]:
    """Every field of ``model`` as a :class:`Key`; with ``values``, the current value instead of the default."""
    keys = []
    for name, info in model.model_fields.items():
        if name in skip or info.exclude:
            continue
        shown = value_text(values[name]) if values is not None and name in values else default_of(info)
        keys.append(Key(prefix + name, kind_of(info), shown, " ".join((info.description or "").split()),
                        info.is_required()))
    return keys


def params_table(model: type[BaseModel]) -> str:
    """The Markdown table of a Params model: key, values, default, meaning."""
    lines = ["| key | values | default | meaning |", "|---|---|---|---|"]
    for key in keys_of(model):
        cells = [f"`{key.key}`", key.kind, key.default if key.required else f"`{key.default}`", key.description]
        lines.append("| " + " | ".join(cell.replace("|", "\\|") for cell in cells) + " |")
    return "\n".join(lines)


# --- what a name is ------------------------------------------------------------------------------------------------


def _registries() -> dict[str, Any]:
    from parley.parties.attacks import ATTACKS
    from parley.parties.encodings import ENCODINGS
    from parley.parties.learners import LEARNERS
    from parley.protocols import PROTOCOLS
    from parley.scenarios.datasets import DATASETS
    from parley.scenarios.exchanges import EXCHANGES

    return {"protocol": PROTOCOLS, "attack": ATTACKS, "learner": LEARNERS, "data set": DATASETS,
            "exchange": EXCHANGES, "encoding": ENCODINGS}


def _doc(obj: Any) -> str:
    return inspect.cleandoc(obj.__doc__ or "")


class _Writer:
    """Lines wrapped to the terminal's width."""

    def __init__(self, width: int | None = None) -> None:
        self.width = max(40, width or shutil.get_terminal_size().columns)
        self.lines: list[str] = []

    def line(self, text: str = "") -> None:
        self.lines.append(text)

    def para(self, text: str, indent: str = "  ") -> None:
        """Paragraphs (blank-line separated) of ``text``, each wrapped and indented."""
        for paragraph in text.strip().split("\n\n"):
            self.lines += textwrap.wrap(" ".join(paragraph.split()), self.width, initial_indent=indent,
                                        subsequent_indent=indent, break_on_hyphens=False) or [""]

    def keys(self, keys: list[Key], current: bool = False) -> None:
        for key in keys:
            head = f"  {key.key} = {key.default}" if current else f"  {key.key}: {key.kind}, " + (
                "required" if key.required else f"default {key.default}")
            self.lines += textwrap.wrap(head, self.width, subsequent_indent="      ", break_on_hyphens=False)
            detail = f"{key.kind}; {key.description}" if current else key.description
            if detail:
                self.para(detail.rstrip("; "), indent="      ")


def _plugin(out: _Writer, family: str, name: str, cls: Any, origin: Any) -> None:
    tags = []
    if family == "protocol":
        tags.append(f"exchange {cls.flow}" + (f", encoding {cls.encoding}" if getattr(cls, "encoding", None) else ""))
    if family == "attack":
        tags.append("threat models: " + ", ".join(cls.threat_models))
    if family == "learner":
        tags.append("exchanges: " + ", ".join(cls.flows))
    out.line(f"{family} {name} ({origin})" + (f" [{'; '.join(tags)}]" if tags else ""))
    summary = getattr(cls, "summary", "")
    if summary:
        out.para(summary)
        out.line()
    if _doc(cls):
        out.para(_doc(cls))
    params = getattr(cls, "Params", None)
    if not (isinstance(params, type) and issubclass(params, BaseModel)):
        return
    table = {"protocol": "protocol", "attack": "attack", "learner": "learner", "data set": "dataset"}.get(family)
    keys = keys_of(params, skip=("name",))
    out.line()
    if not keys:
        out.line("parameters: none")
        return
    where = f" (scenario keys {table}.KEY, with {table}.name = \"{name}\")" if table else ""
    out.line(f"parameters{where}:")
    out.keys(keys)


def _scenario_keys(scenario: Any) -> Iterator[tuple[str, list[Key]]]:
    """The settable keys of a scenario, table by table, with their current values."""
    from parley.scenarios.spec import Scenario

    data = scenario.to_dict()
    simple = [k for k in keys_of(Scenario, values=data, skip=("description",)) if "." not in k.key
              and not isinstance(getattr(scenario, k.key), BaseModel) and k.key not in
              ("dataset", "protocol", "attack", "observer", "learner", "model", "budget")]
    yield "", simple
    components: list[tuple[str, BaseModel | None]] = [
        ("dataset", scenario.dataset), ("model", scenario.model),
        ("protocol", scenario.protocol.params), ("attack", scenario.attack.params),
        ("observer", scenario.observer.params if scenario.observer else None),
        ("learner", scenario.learner.params if scenario.learner else None),
        ("budget", scenario.budget)]
    for table, params in components:
        if params is None:
            continue
        current = data.get(table) or {}
        name = current.get("name")
        head = [Key(f"{table}.name", "string", value_text(name), f"the {table} plug-in (`parley show {name}`)")] \
            if name is not None else []
        yield table, head + keys_of(type(params), prefix=f"{table}.", values=current)


def _show_scenario(out: _Writer, name: str, path: Any) -> None:
    from parley.scenarios.catalog import DEFAULT_SCENARIO
    from parley.scenarios.spec import Scenario

    scenario = Scenario.from_toml(path)
    mark = " (default)" if name == DEFAULT_SCENARIO else ""
    out.line(f"scenario {name}{mark}")
    out.line(f"  protocol {scenario.protocol.name}, attack {scenario.attack.name}, data set {scenario.dataset.name}")
    out.line(f"  file: {path}")
    out.line()
    if scenario.description:
        out.para(scenario.description)
    out.line()
    out.line("settable keys (parley run NAME --set KEY=VALUE), with their values:")
    for _, keys in _scenario_keys(scenario):
        out.keys(keys, current=True)


def _show_study(out: _Writer, name: str, path: Any) -> None:
    from parley.scenarios.study import Study

    study = Study.load(name)
    out.line(f"study {name}")
    out.line(f"  file: {path}")
    out.line()
    if study.description:
        out.para(study.description)
    out.line()
    base = study.scenario if isinstance(study.scenario, str) else "(a table in the study file)"
    out.line("settable keys (parley study NAME --set KEY=VALUE), with their values:")
    fields = keys_of(type(study), values=study.model_dump(), skip=("name", "description", "folder", "outputs"))
    out.keys([k for k in fields if k.key not in ("set", "grid")], current=True)
    for axis, values in study.grid.items():
        out.line(f"  grid.{axis} = {value_text(values)}")
    for key, value in study.set.items():
        out.line(f"  set.{key} = {value_text(value)}")
    out.para(f"and every key of the base scenario {base} (`parley show {base}`), e.g. dataset.audit_size=500")


def show(name: str, width: int | None = None) -> str:
    """What ``name`` is (every scenario, study and plug-in of that name) and the keys it takes.

    Raises ConfigError when nothing is named ``name``.
    """
    from parley.protocols.errors import ConfigError
    from parley.scenarios.catalog import scenario_names, scenario_path, study_names

    out = _Writer(width)
    shown: list[Callable[[], None]] = []
    if name in scenario_names():
        shown.append(lambda: _show_scenario(out, name, scenario_path(name)))
    if name in study_names():
        from parley.scenarios.catalog import resolve_study

        shown.append(lambda: _show_study(out, name, resolve_study(name)))
    for family, registry in _registries().items():
        if name in registry:
            shown.append(lambda f=family, r=registry: _plugin(  # type: ignore[misc]
                out, f, name, r[name], r.origin(name)))
    if not shown:
        raise ConfigError(UNKNOWN_NAME.format(name=name))
    for i, part in enumerate(shown):
        if i:
            out.line()
            out.line("-" * min(out.width, 40))
        part()
    return "\n".join(out.lines)
