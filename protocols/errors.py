"""The one error hierarchy every parley layer raises.

It lives in ``protocols`` because that is the bottom layer: ``parties`` and
``scenarios`` import it from here. Messages are built from the module-level
templates below so tests match on the same text the code raises (the fairlearn
convention).
"""

from __future__ import annotations

__all__ = [
    "ParleyError",
    "ConfigError",
    "DatasetError",
    "PluginError",
    "QueryError",
    "EmptyGroupError",
    "WireError",
    "RefusedError",
    "AttackError",
    "IncompleteTranscriptError",
    "TranscriptError",
    "InternalError",
]


class ParleyError(Exception):
    """Root of every error parley raises on purpose (user mistakes and refusals)."""


class ConfigError(ParleyError, ValueError):
    """A scenario, study or command-line value is not acceptable."""


class DatasetError(ParleyError):
    """A data set is missing, altered, or lacks the columns a spec names."""


class PluginError(ParleyError):
    """An installed plug-in (an entry point of another distribution) cannot be registered.

    The message names the distribution and the entry point, and what was wrong: it failed
    to import, is not a plug-in class of its family, or takes a name already taken.
    """


class QueryError(ParleyError, ValueError):
    """A fairness query is malformed (shape, range, NaN, size, unknown metric)."""


class EmptyGroupError(QueryError):
    """A metric would divide by an empty group (or an empty slice of one)."""


class WireError(ParleyError):
    """An envelope failed verification; ``reason`` is the refusal code sent back.

    Parameters
    ----------
    reason : str
        One of the codes in :data:`parley.parties.wire.REFUSAL_REASONS`.
    detail : str
        Human-readable explanation naming what was wrong.
    """

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"{reason}: {detail}")
        self.reason = reason
        self.detail = detail


class RefusedError(ParleyError):
    """The party we wrote to answered with a signed refusal."""

    def __init__(self, reason: str, detail: str) -> None:
        super().__init__(f"refused ({reason}): {detail}")
        self.reason = reason
        self.detail = detail


class AttackError(ParleyError):
    """An attack cannot decide from what it has (e.g. too few answers)."""


class TranscriptError(ParleyError):
    """A transcript line fails verification; ``line`` is 1-based."""

    def __init__(self, line: int, detail: str) -> None:
        super().__init__(f"line {line}: {detail}")
        self.line = line
        self.detail = detail


class IncompleteTranscriptError(TranscriptError):
    """Every line present verifies, but no end record signed by the parties follows: the run was interrupted.

    ``messages`` envelopes verified; ``head`` is the hash of the last line read.
    """

    def __init__(self, line: int, detail: str, messages: int, head: str) -> None:
        super().__init__(line, detail)
        self.messages = messages
        self.head = head


class InternalError(ParleyError):
    """An invariant parley relies on was broken: this is a bug, please report it."""

    def __init__(self, detail: str) -> None:
        super().__init__(f"internal error (a bug in parley, please report it): {detail}")
