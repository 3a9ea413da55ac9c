"""``parley run``'s status line on a terminal: what the run has done so far, on one self-rewriting line.

Two small parts, so that Ray stays at the edges:

* :class:`RunProgress`, the source: the network calls it with every envelope it carries
  (:attr:`parley.parties.network.Network.observer`). It counts messages and, when the display
  is due, asks its polls for the rest: the active attack's own counts (models answered to it,
  people it has pinned down, models it plans to ask about; see
  :meth:`parley.parties.adversary.Adversary.status`, the same progress reports the run's
  ``knowledge`` series in ``result.json`` is built from) and the epsilon spent in the ledger.
  It never guesses: a count the attack does not report, or a time left without a query plan,
  is left out of the line.
* :class:`StatusLine`, the display: rewrites one line with a carriage return at most
  ``1 / interval`` times a second, clipped to the terminal's width, and erases it at the end.

``parley run`` shows the line only when stderr is a terminal; elsewhere (a pipe, CI, a log
file) nothing is installed and stderr holds exactly what it held before.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, TextIO

__all__ = ["Display", "RunProgress", "Status", "StatusLine", "describe"]

#: Erase from the cursor to the end of the line (ANSI/ECMA-48 EL).
ERASE = "\x1b[K"
#: Fewest seconds between two drawings of the line.
INTERVAL = 0.25


@dataclass(frozen=True)
class Status:
    """What a run has done so far; None where it is not known (never a made-up number)."""

    messages: int
    answered: int | None = None  # models the compliance party answered to the adversary
    planned: int | None = None  # models the attack will ask about in all
    pinned: int | None = None  # people the adversary has pinned down
    epsilon_spent: float | None = None
    epsilon_limit: float | None = None
    eta_s: float | None = None


def _duration(seconds: float) -> str:
    if seconds < 60:
        return f"{max(1, round(seconds))} s"
    if seconds < 3600:
        return f"{round(seconds / 60)} min"
    return f"{seconds / 3600:.1f} h"


def describe(status: Status) -> str:
    """The status line's text, e.g. ``parley: 44 messages, 12 of 21 queries answered, 11 people pinned down``."""
    parts = [f"parley: {status.messages:,} message{'' if status.messages == 1 else 's'}"]
    if status.answered is not None:
        of = f" of {status.planned:,}" if status.planned is not None else ""
        parts.append(f"{status.answered:,}{of} queries answered")
    if status.pinned is not None:
        parts.append(f"{status.pinned:,} {'person' if status.pinned == 1 else 'people'} pinned down")
    if status.epsilon_spent is not None:
        limit = f" of {status.epsilon_limit:.4g}" if status.epsilon_limit is not None else ""
        parts.append(f"epsilon {status.epsilon_spent:.4g}{limit} spent")
    if status.eta_s is not None:
        parts.append(f"about {_duration(status.eta_s)} left")
    return ", ".join(parts)


class Display(Protocol):
    """Where a :class:`RunProgress` shows its status: :class:`StatusLine` on a terminal."""

    def due(self) -> bool: ...

    def show(self, text: str) -> None: ...

    def clear(self) -> None: ...


class StatusLine:
    """One line on a terminal, rewritten in place (carriage return, no scrolling) and erased at the end.

    Parameters
    ----------
    stream : text stream
        A terminal (``parley run`` passes stderr only when ``stderr.isatty()``).
    interval : float
        Fewest seconds between two drawings (:meth:`due`).
    clock : callable
        Monotonic seconds (a test passes its own).
    """

    def __init__(self, stream: TextIO, interval: float = INTERVAL, clock: Callable[[], float] = time.monotonic) -> None:
        self.stream = stream
        self.interval = interval
        self.clock = clock
        self._last: float | None = None
        self._shown = False

    def due(self) -> bool:
        """True when the line was never drawn or was drawn ``interval`` seconds ago or more."""
        return self._last is None or self.clock() - self._last >= self.interval

    def _width(self) -> int:
        try:
            columns = os.get_terminal_size(self.stream.fileno()).columns
        except (OSError, ValueError, AttributeError):
            columns = 0
        return columns or 80  # a terminal that reports no size (0 columns) gets the usual 80

    def show(self, text: str) -> None:
        """Draw ``text`` over the line, clipped to the terminal's width so that it never wraps."""
        self.stream.write("\r" + text[:max(1, self._width() - 1)] + ERASE)
        self.stream.flush()
        self._last, self._shown = self.clock(), True

    def clear(self) -> None:
        """Erase the line (if it was drawn), leaving the cursor at its start for what follows."""
        if self._shown:
            self.stream.write("\r" + ERASE)
            self.stream.flush()
            self._shown = False


class RunProgress:
    """The status source of one run: called with every envelope, it shows a :class:`Status` when ``display`` is due.

    Parameters
    ----------
    display : Display
        Where the status goes.
    spent : callable, optional
        The epsilon spent so far in the run's ledger (None without a ledger).
    limit : float, optional
        The budget's epsilon, if the scenario caps it.
    clock : callable
        Monotonic seconds, for the time left.
    """

    def __init__(self, display: Display, spent: Callable[[], float | None] | None = None,
                 limit: float | None = None, clock: Callable[[], float] = time.monotonic) -> None:
        self.display = display
        self.spent = spent
        self.limit = limit
        self.clock = clock
        self.messages = 0
        self._attack: Callable[[], Mapping[str, Any]] | None = None
        self._started = 0.0

    def watch(self, attack: Callable[[], Mapping[str, Any]]) -> None:
        """Follow an active attack from now on: ``attack()`` returns its ``answered``, ``pinned`` and ``planned``."""
        self._attack, self._started = attack, self.clock()

    def __call__(self, envelope: Any) -> None:
        """One more envelope is on the wire."""
        self.messages += 1
        if self.display.due():
            self.flush()

    def status(self) -> Status:
        """What the run has done so far (asks the polls)."""
        answered = planned = pinned = None
        eta = None
        if self._attack is not None:
            counts = self._attack()
            answered, planned, pinned = counts.get("answered"), counts.get("planned"), counts.get("pinned")
            # Time left from the attack's own plan, at the pace of the answers so far; nothing without a plan.
            if answered and planned is not None and answered < planned:
                eta = (self.clock() - self._started) / answered * (planned - answered)
        spent = self.spent() if self.spent is not None else None
        return Status(messages=self.messages, answered=answered, planned=planned, pinned=pinned,
                      epsilon_spent=spent, epsilon_limit=self.limit if spent is not None else None, eta_s=eta)

    def flush(self) -> None:
        """Show the status now, due or not (the run's last one before the line is erased)."""
        self.display.show(describe(self.status()))
