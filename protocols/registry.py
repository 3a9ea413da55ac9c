"""Name -> plug-in registries: the one mechanism behind protocols, attacks, learners and flows.

Each plug-in family keeps its own dict and error text; these two functions give
every family the same rules: a name is taken once (a second plug-in under it is
a bug, not an override), and a miss names every known plug-in.
"""

from __future__ import annotations

from collections.abc import Mapping, MutableMapping
from typing import TypeVar

from parley.protocols.errors import ConfigError, ParleyError

__all__ = ["add", "lookup"]

T = TypeVar("T")

NAME_TAKEN = "two {what}s are registered as {name!r} (a bug in parley, please report it)"


def add(registry: MutableMapping[str, T], name: str, plugin: T, what: str) -> T:
    """Register ``plugin`` under ``name``; a different plug-in already there is a bug."""
    if registry.get(name, plugin) is not plugin:  # the later would silently hide the first
        raise ParleyError(NAME_TAKEN.format(what=what, name=name))
    registry[name] = plugin
    return plugin


def lookup(registry: Mapping[str, T], name: str, unknown: str) -> T:
    """The plug-in named ``name``, or a ConfigError from ``unknown`` (fields ``name``, ``known``)."""
    try:
        return registry[name]
    except KeyError:
        known = ", ".join(sorted(registry)) or "none"
        raise ConfigError(unknown.format(name=name, known=known)) from None
