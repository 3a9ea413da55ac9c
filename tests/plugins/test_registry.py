"""The Registry itself, in process: entry points of a test-only group, loaded lazily, once, with origins.

Each test lays out a distribution (a module and its .dist-info, as pip installs one) in tmp_path
and puts it on sys.path; it declares entry points only in a group no parley registry reads, so the
registries of this process are untouched.
"""

from __future__ import annotations

import itertools
import sys
from pathlib import Path

import pytest

from parley.protocols.errors import ConfigError, ParleyError, PluginError
from parley.protocols.registry import (
    BUILTIN,
    NAME_TAKEN,
    PLUGIN_LOAD_FAILED,
    PLUGIN_NAME_HELD,
    PLUGIN_NAME_MISMATCH,
    PLUGIN_NAME_TAKEN,
    PLUGIN_NOT_A_CLASS,
    Origin,
    Registry,
)

UNKNOWN = "unknown widget {name!r}; known widgets: {known}"
_counter = itertools.count()


class Widget:
    name = "base"


class Builtin(Widget):
    name = "spanner"


def _install(root: Path, monkeypatch: pytest.MonkeyPatch, entry_points: dict[str, str], module: str) -> tuple[str, str]:
    """A distribution with ``module`` as its package and ``entry_points`` in a fresh group; (group, package)."""
    n = next(_counter)
    group, package = f"parley.test-widgets-{n}", f"widget_plugins_{n}"
    site = root / f"site{n}"
    (site / package).mkdir(parents=True)
    (site / package / "__init__.py").write_text(module)
    info = site / f"widget_plugins-{n}.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: widget-plugins\nVersion: {n}.0\n")
    lines = [f"{name} = {value.format(package=package)}" for name, value in entry_points.items()]
    (info / "entry_points.txt").write_text(f"[{group}]\n" + "\n".join(lines) + "\n")
    monkeypatch.syspath_prepend(str(site))
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return group, package


MODULE = f"""\
from {__name__} import Widget, Builtin


class Hammer(Widget):
    name = "hammer"


class Misnamed(Widget):
    name = "wrench"


class Impostor(Widget):
    name = "spanner"


NOT_A_CLASS = 3
"""


def _registry(group: str) -> Registry[type[Widget]]:
    registry: Registry[type[Widget]] = Registry("widget", UNKNOWN, Widget, group=group)
    registry.add("spanner", Builtin)
    return registry


def test_a_plugin_is_loaded_on_first_read_with_its_origin(tmp_path, monkeypatch):
    group, package = _install(tmp_path, monkeypatch, {"hammer": "{package}:Hammer"}, MODULE)
    registry = _registry(group)
    assert package not in sys.modules  # nothing imported before the first read
    assert sorted(registry) == ["hammer", "spanner"]
    hammer = registry.lookup("hammer")
    assert hammer.__module__ == package and hammer.name == "hammer"
    version = group.rsplit("-", 1)[1] + ".0"
    assert registry.origin("hammer") == Origin("widget-plugins", version, f"{group}:hammer = {package}:Hammer")
    assert str(registry.origin("hammer")) == f"widget-plugins {version}"
    assert registry.origin("spanner") is BUILTIN and str(BUILTIN) == "parley"
    assert list(registry.origins()) == ["hammer", "spanner"]
    with pytest.raises(ConfigError, match="unknown widget 'drill'; known widgets: hammer, spanner"):
        registry.lookup("drill")


def test_a_failing_entry_point_is_reported_on_every_read(tmp_path, monkeypatch):
    group, package = _install(tmp_path, monkeypatch, {"hammer": "{package}:Hammer", "drill": "{package}.gone:Drill"},
                              MODULE)
    registry = _registry(group)
    dist = f"widget-plugins {group.rsplit('-', 1)[1]}.0"
    expected = PLUGIN_LOAD_FAILED.format(what="widget", entry_point="drill", group=group, value=f"{package}.gone:Drill",
                                         dist=dist, error=f"ModuleNotFoundError: No module named '{package}.gone'")
    for read in (lambda: registry["spanner"], lambda: "hammer" in registry, registry.origins):
        with pytest.raises(PluginError) as caught:
            read()
        assert str(caught.value) == expected


def test_wrong_classes_and_names_are_refused_naming_the_entry_point(tmp_path, monkeypatch):
    group, package = _install(tmp_path, monkeypatch, {
        "three": "{package}:NOT_A_CLASS", "builtin": f"{__name__}:Builtin", "spanner-2": "{package}:Misnamed",
        "spanner": "{package}:Impostor"}, MODULE)
    registry = _registry(group)
    dist = f"widget-plugins {group.rsplit('-', 1)[1]}.0"

    def context(entry_point: str, value: str) -> dict[str, str]:
        return {"what": "widget", "entry_point": entry_point, "group": group, "value": value, "dist": dist}

    expected = {
        PLUGIN_NOT_A_CLASS.format(**context("three", f"{package}:NOT_A_CLASS"), got="an object of type int",
                                  base=f"{__name__}.Widget"),
        # The class registered as spanner, offered again under another name: the names disagree.
        PLUGIN_NAME_MISMATCH.format(**context("builtin", f"{__name__}:Builtin"), name="spanner"),
        PLUGIN_NAME_MISMATCH.format(**context("spanner-2", f"{package}:Misnamed"), name="wrench"),
        PLUGIN_NAME_TAKEN.format(**context("spanner", f"{package}:Impostor"), name="spanner", origin="parley"),
    }
    with pytest.raises(PluginError) as caught:
        len(registry)
    assert set(str(caught.value).split("; ")) == expected
    assert registry._entries["spanner"] is Builtin  # the built-in keeps its name


def test_a_class_registered_by_import_and_by_entry_point_takes_the_entry_points_origin(tmp_path, monkeypatch):
    group, _ = _install(tmp_path, monkeypatch, {"spanner": f"{__name__}:Builtin"}, MODULE)
    registry = _registry(group)
    assert registry["spanner"] is Builtin
    assert registry.origin("spanner").entry_point == f"{group}:spanner = {__name__}:Builtin"


def test_two_builtins_under_one_name_are_a_bug_in_parley():
    registry: Registry[type[Widget]] = Registry("widget", UNKNOWN, Widget, group="parley.test-widgets-none")
    registry.add("spanner", Builtin)
    assert registry.add("spanner", Builtin) is Builtin  # a module imported twice
    with pytest.raises(ParleyError, match=NAME_TAKEN.format(what="widget", name="spanner").replace("(", r"\(")
                       .replace(")", r"\)")) as caught:
        registry.add("spanner", type("Other", (Widget,), {"name": "spanner"}))
    assert not isinstance(caught.value, PluginError)


def test_a_builtin_registered_after_a_plugin_took_its_name_names_the_plugin(tmp_path, monkeypatch):
    group, package = _install(tmp_path, monkeypatch, {"hammer": "{package}:Hammer"}, MODULE)
    registry = _registry(group)
    list(registry)
    dist = f"widget-plugins {group.rsplit('-', 1)[1]}.0"
    late = type("LateHammer", (Widget,), {"name": "hammer"})
    with pytest.raises(PluginError) as caught:
        registry.add("hammer", late)
    assert str(caught.value) == PLUGIN_NAME_HELD.format(what="widget", entry_point="hammer", group=group,
                                                        value=f"{package}:Hammer", dist=dist, name="hammer")
    assert registry["hammer"].__module__ == package


def test_item_assignment_registers_and_deletion_unregisters():
    registry: Registry[type[Widget]] = Registry("widget", UNKNOWN, Widget, group="parley.test-widgets-none")
    registry["spanner"] = Builtin
    assert registry.origin("spanner") is BUILTIN
    with pytest.raises(ParleyError, match="two widgets are registered as 'spanner'"):
        registry["spanner"] = type("Other", (Widget,), {"name": "spanner"})
    del registry["spanner"]
    assert "spanner" not in registry and registry.origins() == {}
