"""Whose results an output folder holds, so that ``--out`` never mixes two scenarios' or studies' results.

A run folder is known by its ``result.json`` (its ``scenario``), a study folder by
:data:`STUDY_MARKER` (``study.json``: the study's name and its spec fingerprint, written by
:func:`parley.scenarios.study.engine.run_study`), or, for a folder an older parley wrote, by its
``results.csv`` or ``summary.md`` (whose title names the study). ``parley run`` and ``parley
study`` call :func:`check_out` before anything runs:

* the same scenario (by name) into its own run folder, or the same study into its own study
  folder, goes on as it always did (a run replaces its results, a study resumes);
* anything else (another scenario's results, another study's, a study where a run's results
  are, a run where a study's are) is refused with :class:`ForeignFolderError`, one line naming
  the folder, what it holds and ``--replace``; nothing in the folder is touched;
* with ``--replace`` the earlier results are deleted first (:func:`clear`): every file parley
  wrote for them, nothing else.

A folder whose owner cannot be named (a ``result.json`` without a scenario, a study folder of an
older parley without ``summary.md``) is treated as the same kind's own: it was written by that
kind of command and cannot be shown to be another's.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from parley.parties.ledger import HEAD_SUFFIX
from parley.protocols.errors import ConfigError
from parley.scenarios.run_folder import FOLDER_BUSY, LOCK_FILE, RunFolderBusyError
from parley.scenarios.world import LEDGER_FILE

__all__ = ["FOREIGN_FOLDER", "STUDY_MARKER", "ForeignFolderError", "Holding", "check_out", "clear", "holding",
           "study_fingerprint", "write_study_marker"]

#: The file that names a study folder's study.
STUDY_MARKER = "study.json"
FOREIGN_FOLDER = ("{folder} {path} holds {holds}; {new} would be mixed with them: choose another --out, or add "
                  "--replace to delete them first")
CANNOT_CLEAR = "cannot delete {path} for --replace: {reason}"

Kind = Literal["run", "study"]
#: What a run writes into its folder (its ledger's side files included).
RUN_FILES = ("result.json", "report.md", "report.html", "transcript.jsonl", LEDGER_FILE, LEDGER_FILE + "-wal",
             LEDGER_FILE + "-shm", LEDGER_FILE + HEAD_SUFFIX)
#: What a study writes into its folder, besides its plots (``*.png``) and ``cells/``.
STUDY_FILES = (STUDY_MARKER, "results.csv", "results-stale.csv", "summary.md")
#: The title line of an older study folder's summary.md (:func:`parley.scenarios.study.report.write_outputs`).
STUDY_TITLE = "# Study "


class ForeignFolderError(ConfigError):
    """``--out`` holds another scenario's or study's results, and ``--replace`` was not given."""


@dataclass(frozen=True)
class Holding:
    """The results a folder holds: a run's or a study's, of the scenario or study ``name`` (None if unknown)."""

    kind: Kind
    name: str | None
    files: tuple[str, ...]

    def describe(self) -> str:
        owner = "scenario" if self.kind == "run" else "study"
        whose = f"of {owner} {self.name!r}" if self.name is not None else f"of an unnamed {owner}"
        return f"the results {whose} ({', '.join(self.files)})"


def _read_json(path: Path) -> dict[str, Any]:
    try:
        value = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError, RecursionError):
        return {}
    return value if isinstance(value, dict) else {}


def _study_files(folder: Path) -> tuple[str, ...]:
    found = [name for name in STUDY_FILES if (folder / name).is_file()]
    found += sorted(path.name for path in folder.glob("*.png") if path.is_file())
    return (*found, "cells/") if (folder / "cells").is_dir() else tuple(found)


def holding(folder: Path) -> Holding | None:
    """Whose results ``folder`` holds; None for a folder without any (missing, empty, or not parley's)."""
    if not folder.is_dir():
        return None
    if (folder / STUDY_MARKER).is_file():
        name = _read_json(folder / STUDY_MARKER).get("study")
        return Holding("study", name if isinstance(name, str) else None, _study_files(folder))
    if (folder / "results.csv").is_file() or (folder / "summary.md").is_file():  # an older parley's study folder
        name = None
        try:
            with open(folder / "summary.md", encoding="utf-8") as summary:
                title = summary.readline().strip()
            name = title.removeprefix(STUDY_TITLE) if title.startswith(STUDY_TITLE) else None
        except (OSError, ValueError):
            pass
        return Holding("study", name, _study_files(folder))
    if (folder / "result.json").is_file():
        name = _read_json(folder / "result.json").get("scenario")
        files = tuple(n for n in RUN_FILES if (folder / n).is_file())
        return Holding("run", name if isinstance(name, str) else None, files)
    return None


def check_out(folder: Path, kind: Kind, name: str, replace: bool = False) -> Holding | None:
    """Refuse ``folder`` as the ``--out`` of a ``kind`` named ``name`` if it holds another's results.

    Returns
    -------
    Holding or None
        What :func:`clear` must delete before the command writes (``replace`` given and the folder holds
        another's results); None when the folder can be used as it is.

    Raises
    ------
    ForeignFolderError
        ``folder`` holds another scenario's or study's results and ``replace`` is False.
    """
    held = holding(folder)
    if held is None or (held.kind == kind and held.name in (name, None)):
        return None
    if not replace:
        new = f"the results of scenario {name!r}" if kind == "run" else f"the results of study {name!r}"
        raise ForeignFolderError(FOREIGN_FOLDER.format(folder=f"{kind} folder", path=folder, holds=held.describe(),
                                                       new=new))
    return held


def clear(folder: Path, held: Holding) -> None:
    """Delete the results ``held`` describes from ``folder`` (``--replace``); nothing else in it.

    A run folder is cleared under the run lock (:data:`parley.scenarios.run_folder.LOCK_FILE`), so a
    run still writing there is refused (:class:`RunFolderBusyError`), never pulled from under it.
    """
    fd = None
    if held.kind == "run" and (folder / LOCK_FILE).is_file():
        fd = os.open(folder / LOCK_FILE, os.O_RDWR)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            os.close(fd)
            raise RunFolderBusyError(FOLDER_BUSY.format(path=folder, pid=holder)) from None
    try:
        for name in held.files:
            path = folder / name.rstrip("/")
            try:
                if name.endswith("/"):
                    shutil.rmtree(path)
                else:
                    path.unlink(missing_ok=True)
            except OSError as exc:
                raise ConfigError(CANNOT_CLEAR.format(path=path, reason=exc.strerror or exc)) from None
    finally:
        if fd is not None:
            os.close(fd)


def study_fingerprint(spec: dict[str, Any]) -> str:
    """SHA-256 of a study's spec in canonical JSON: which version of the study last wrote the folder."""
    return hashlib.sha256(json.dumps(spec, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def write_study_marker(folder: Path, name: str, spec: dict[str, Any]) -> Path:
    """Write :data:`STUDY_MARKER` into ``folder``: the study's name and its spec fingerprint."""
    path = folder / STUDY_MARKER
    path.write_text(json.dumps({"study": name, "fingerprint": study_fingerprint(spec)}, indent=2) + "\n",
                    encoding="utf-8")
    return path
