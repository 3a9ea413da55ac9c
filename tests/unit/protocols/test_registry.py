"""Plug-in registries: a name is taken once, a miss lists the known names."""

from __future__ import annotations

import pytest

from parley.protocols import PROTOCOLS, get_protocol, register_protocol
from parley.protocols.errors import ConfigError, ParleyError
from parley.protocols.registry import NAME_TAKEN, add, lookup


def test_a_taken_name_is_a_bug_but_registering_the_same_plugin_again_is_not():
    registry: dict[str, object] = {}
    first, second = object(), object()
    assert add(registry, "x", first, "widget") is first
    assert add(registry, "x", first, "widget") is first  # a module imported twice registers the same class
    with pytest.raises(ParleyError,
                       match=NAME_TAKEN.format(what="widget", name="x").replace("(", r"\(").replace(")", r"\)")):
        add(registry, "x", second, "widget")
    assert registry == {"x": first}


def test_lookup_names_every_known_plugin_or_none():
    with pytest.raises(ConfigError, match="unknown widget 'y'; known: none"):
        lookup({}, "y", "unknown widget {name!r}; known: {known}")
    assert lookup({"b": 2, "a": 1}, "a", "{name}{known}") == 1
    with pytest.raises(ConfigError, match="unknown widget 'c'; known: a, b"):
        lookup({"b": 2, "a": 1}, "c", "unknown widget {name!r}; known: {known}")


def test_the_protocol_registry_refuses_a_second_class_under_a_taken_name():
    raw = get_protocol("raw")
    impostor = type("Impostor", (raw,), {"name": "raw"})
    with pytest.raises(ParleyError, match="two protocols are registered as 'raw'"):
        register_protocol(impostor)
    assert PROTOCOLS["raw"] is raw
