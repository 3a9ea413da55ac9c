"""Name -> plug-in registries: one mechanism behind every plug-in family.

The families: protocols, attacks, learners, data sets, exchanges and encodings.

Each plug-in family keeps its own :class:`Registry` and error text; every family follows the same rules:

- a name is taken once: a second plug-in under it is an error, never an override;
- a miss names every known plug-in;
- built-ins register by import (the decorator :meth:`Registry.register`); a user's package adds
  a plug-in through an entry point in the family's group (``parley.protocols``,
  ``parley.attacks``, ``parley.learners``, ``parley.datasets``, ``parley.exchanges``,
  ``parley.encodings``), loaded once per process, on
  the first look-up or listing of the registry, so importing parley never imports
  a third-party package;
- every entry records its :class:`Origin`: ``parley`` for a built-in, else the
  distribution (name and version) and the entry point that provided it.

A plug-in whose entry point fails to import, is not a class of the family, names
itself differently from its entry point, or takes a name already taken, raises a
:class:`~parley.protocols.errors.PluginError` naming the distribution and the entry
point, on this and every later look-up of that registry: a broken plug-in is never
skipped in silence.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator, Mapping, MutableMapping
from dataclasses import dataclass
from importlib import metadata
from typing import Any, Generic, TypeVar, cast

from parley.protocols.errors import ConfigError, ParleyError, PluginError

__all__ = [
    "BUILTIN",
    "ENTRY_POINT_GROUPS",
    "Origin",
    "Registry",
    "add",
    "lookup",
    "NAME_TAKEN",
    "PLUGIN_LOAD_FAILED",
    "PLUGIN_NOT_A_CLASS",
    "PLUGIN_NAME_MISMATCH",
    "PLUGIN_NAME_TAKEN",
    "PLUGIN_NAME_HELD",
    "PLUGIN_INVALID",
    "NOT_REGISTERED",
]

T = TypeVar("T")

#: The entry-point group of each plug-in family (the ``what`` of its registry).
ENTRY_POINT_GROUPS = {"protocol": "parley.protocols", "attack": "parley.attacks",
                      "learner": "parley.learners", "dataset": "parley.datasets",
                      "exchange": "parley.exchanges", "encoding": "parley.encodings"}

NAME_TAKEN = "two {what}s are registered as {name!r} (a bug in parley, please report it)"
#: Prefix of every plug-in error: which entry point of which distribution.
PLUGIN = "{what} plug-in {entry_point!r} ({group} entry point '{value}' of {dist})"
PLUGIN_LOAD_FAILED = PLUGIN + " failed to load: {error}"
PLUGIN_NOT_A_CLASS = PLUGIN + " is {got}, not a subclass of {base}"
PLUGIN_NAME_MISMATCH = PLUGIN + " names itself {name!r}: the entry point's name and the class's name must agree"
PLUGIN_NAME_TAKEN = PLUGIN + " takes the name {name!r}, already registered by {origin}"
PLUGIN_NAME_HELD = PLUGIN + " holds the name {name!r}, which one of parley's built-in {what}s also takes"
PLUGIN_INVALID = PLUGIN + ": {problem}"
#: A class refused by :meth:`Registry.register` (the family's ``check`` found a problem).
NOT_REGISTERED = "{what} {name!r} ({cls}) cannot be registered: {problem}"


@dataclass(frozen=True)
class Origin:
    """Where a registered plug-in came from: parley itself, or an entry point of a distribution.

    ``str(origin)`` is ``parley`` for a built-in and ``<distribution> <version>``
    for a plug-in (what ``parley list`` prints).
    """

    dist: str = "parley"
    version: str = ""
    entry_point: str = ""  #: ``group:name = value``; empty for a built-in

    @property
    def builtin(self) -> bool:
        return not self.entry_point

    def __str__(self) -> str:
        return self.dist if self.builtin else f"{self.dist} {self.version}".strip()


#: The origin of every plug-in that registers by import.
BUILTIN = Origin()


def _qualified(cls: Any) -> str:
    return f"{getattr(cls, '__module__', '?')}.{getattr(cls, '__qualname__', cls)}"


def _dist_of(entry_point: metadata.EntryPoint) -> tuple[str, str]:
    dist = entry_point.dist
    if dist is None:  # an entry point built by hand, not found through a distribution
        return "an unknown distribution", ""
    return str(dist.metadata["Name"] or dist.name), str(dist.version)


class Registry(MutableMapping[str, T], Generic[T]):
    """A mapping name -> plug-in class that also loads its entry-point group on first read.

    ``registry[name] = cls`` is :meth:`add` (a taken name is refused, never replaced) and
    ``del registry[name]`` unregisters, so a test can register a class for its own duration
    (``monkeypatch.setitem``).

    Parameters
    ----------
    what : str
        The family's singular noun (``"protocol"``), used in messages.
    unknown : str
        The family's miss message, with fields ``name`` and ``known``.
    base : type
        The class every plug-in of the family subclasses.
    group : str, optional
        The entry-point group; defaults to :data:`ENTRY_POINT_GROUPS` [``what``].
    check : callable, optional
        ``check(cls)`` returns a problem text for a class the family cannot use
        (checked for entry-point plug-ins), or None.
    """

    def __init__(self, what: str, unknown: str, base: type, group: str | None = None,
                 check: Callable[[Any], str | None] | None = None) -> None:
        self.what = what
        self.unknown = unknown
        self.base = base
        self.group = group if group is not None else ENTRY_POINT_GROUPS[what]
        self.check = check
        self._entries: dict[str, T] = {}
        self._origins: dict[str, Origin] = {}
        self._lock = threading.RLock()
        self._state = "new"  # -> "loading" -> "loaded"
        self._failure: PluginError | None = None

    # -- registration -------------------------------------------------------------------

    def add(self, name: str, plugin: T, origin: Origin = BUILTIN) -> T:
        """Register ``plugin`` under ``name``; a different plug-in already there is an error.

        Registering the same class again (a module imported twice, or a plug-in class
        that also carries the family's decorator) is no error; an entry point's origin
        then replaces the built-in one.
        """
        with self._lock:
            held = self._entries.get(name, plugin)
            if held is not plugin:  # the later would silently hide the first
                first = self._origins[name]
                if origin.builtin and first.builtin:
                    raise ParleyError(NAME_TAKEN.format(what=self.what, name=name))
                if origin.builtin:  # a built-in imported late, after a plug-in took its name
                    raise PluginError(PLUGIN_NAME_HELD.format(**self._context(first, name), name=name))
                raise PluginError(PLUGIN_NAME_TAKEN.format(**self._context(origin, name), name=name, origin=first))
            self._entries[name] = plugin
            if name not in self._origins or not origin.builtin:
                self._origins[name] = origin
            return plugin

    def register(self, cls: T) -> T:
        """Class decorator: check ``cls`` with the family's ``check`` and :meth:`add` it under ``cls.name``.

        The one decorator of every family (``register_protocol = PROTOCOLS.register``).

        Raises
        ------
        PluginError
            ``check`` finds a problem with ``cls``.
        ParleyError
            Another class is registered under ``cls.name`` (see :meth:`add`).
        """
        name = getattr(cls, "name", None)
        problem = self.check(cls) if isinstance(name, str) and self.check is not None else None
        if not isinstance(name, str) or problem:
            problem = problem or "it sets no name"
            raise PluginError(NOT_REGISTERED.format(what=self.what, name=name, cls=_qualified(cls), problem=problem))
        return self.add(name, cls)

    def _context(self, origin: Origin, name: str) -> dict[str, str]:
        group, _, rest = origin.entry_point.partition(":")
        entry_point, _, value = rest.partition(" = ")
        return {"what": self.what, "entry_point": entry_point or name, "group": group or self.group,
                "value": value, "dist": str(origin)}

    # -- entry points --------------------------------------------------------------------

    def _load(self) -> None:
        """Load the entry-point group once; remember (and re-raise) any failure."""
        if self._state == "loaded":
            if self._failure is not None:
                raise self._failure
            return
        with self._lock:
            if self._state != "new":  # loaded meanwhile, or a plug-in reading the registry while it loads
                if self._state == "loaded" and self._failure is not None:
                    raise self._failure
                return
            self._state = "loading"
            problems: list[str] = []
            try:
                for entry_point in metadata.entry_points(group=self.group):
                    try:
                        self._add_entry_point(entry_point)
                    except PluginError as exc:
                        problems.append(str(exc))
            finally:
                self._state = "loaded"
            if problems:
                self._failure = PluginError("; ".join(problems))
                raise self._failure

    def _add_entry_point(self, entry_point: metadata.EntryPoint) -> None:
        dist, version = _dist_of(entry_point)
        origin = Origin(dist, version, f"{self.group}:{entry_point.name} = {entry_point.value}")
        context = self._context(origin, entry_point.name)
        try:
            plugin = entry_point.load()
        except Exception as exc:  # whatever the third-party import raised: reported, never swallowed
            raise PluginError(PLUGIN_LOAD_FAILED.format(**context, error=f"{type(exc).__name__}: {exc}")) from None
        if not (isinstance(plugin, type) and issubclass(plugin, self.base)):
            got = (f"class {plugin.__qualname__}" if isinstance(plugin, type)
                   else f"an object of type {type(plugin).__name__}")
            raise PluginError(PLUGIN_NOT_A_CLASS.format(**context, got=got,
                                                        base=f"{self.base.__module__}.{self.base.__qualname__}"))
        name = getattr(plugin, "name", None)
        if name != entry_point.name:
            raise PluginError(PLUGIN_NAME_MISMATCH.format(**context, name=name))
        problem = self.check(plugin) if self.check is not None else None
        if problem:
            raise PluginError(PLUGIN_INVALID.format(**context, problem=problem))
        self.add(name, cast(T, plugin), origin)

    # -- reading ---------------------------------------------------------------------------

    def __getitem__(self, name: str) -> T:
        self._load()
        return self._entries[name]

    def __iter__(self) -> Iterator[str]:
        self._load()
        return iter(dict(self._entries))

    def __len__(self) -> int:
        self._load()
        return len(self._entries)

    def __contains__(self, name: object) -> bool:
        self._load()
        return name in self._entries

    def __setitem__(self, name: str, plugin: T) -> None:
        self.add(name, plugin)

    def __delitem__(self, name: str) -> None:
        with self._lock:
            del self._entries[name]
            del self._origins[name]

    def lookup(self, name: str) -> T:
        """The plug-in named ``name``, or a ConfigError that lists the known names."""
        return lookup(self, name, self.unknown)

    def origin(self, name: str) -> Origin:
        """Where the plug-in ``name`` came from (a ConfigError if none is registered under it)."""
        self.lookup(name)
        return self._origins[name]

    def origins(self) -> dict[str, Origin]:
        """Every registered name with its origin, sorted by name."""
        self._load()
        return {name: self._origins[name] for name in sorted(self._entries)}

    def __repr__(self) -> str:
        return f"Registry({self.what!r}, group={self.group!r}, names={sorted(self._entries)})"


def add(registry: MutableMapping[str, T] | Registry[T], name: str, plugin: T, what: str) -> T:
    """Register ``plugin`` under ``name``; a different plug-in already there is a bug."""
    if isinstance(registry, Registry):
        return registry.add(name, plugin)
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
