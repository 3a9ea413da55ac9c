"""Whose results an output folder holds, so that ``--out`` never mixes two scenarios' or studies' results.

A run folder is known by its ``result.json`` (its ``scenario``; for a run that failed or was
interrupted, its ``status.json``), a study folder by
:data:`STUDY_MARKER` (``study.json``: the study's name, its spec fingerprint and its plot files,
written by :func:`parley.scenarios.study.engine.run_study`), or, for a folder an older parley
wrote, by a ``results.csv`` with a study's columns beside a ``summary.md`` whose title names the
study. ``parley run`` and ``parley study`` call :func:`check_out` before anything runs:

* the same scenario (by name) into its own run folder, or the same study into its own study
  folder, goes on as it always did (a run replaces its results, a study resumes);
* anything else (another scenario's results, another study's, a study where a run's results
  are, a run where a study's are) is refused with :class:`ForeignFolderError`, one line naming
  the folder, what it holds and ``--replace``; nothing in the folder is touched;
* with ``--replace`` the earlier results are deleted first (:func:`clear`): every file parley
  wrote for them, nothing else (a study's plots only as its marker lists them).

Files that only look like parley's (a ``summary.md`` or ``results.csv`` of the user's own, a
``result.json`` that names no scenario) are not results: a run goes ahead beside them, a study,
which would write over such a file, is refused (:data:`NOT_OURS`) even with ``--replace``.
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
from parley.scenarios.run_folder import FOLDER_BUSY, KEPT_TRANSCRIPT, LOCK_FILE, STATUS_FILE, RunFolderBusyError
from parley.scenarios.world import LEDGER_FILE

__all__ = ["FOREIGN_FOLDER", "STUDY_MARKER", "ForeignFolderError", "Holding", "check_out", "clear", "holding",
           "study_fingerprint", "write_study_marker"]

#: The file that names a study folder's study.
STUDY_MARKER = "study.json"
FOREIGN_FOLDER = ("{folder} {path} holds {holds}; {new} would be mixed with them: choose another --out, or add "
                  "--replace to delete them first")
CANNOT_CLEAR = "cannot delete {path} for --replace: {reason}"
NOT_OURS = ("study folder {path} holds {files}, which no parley study wrote; a study would write over them: "
            "choose another --out")

Kind = Literal["run", "study"]
#: What a run writes into its folder (its ledger's side files, the mark of a run that did not complete, and
#: the charged transcript a run that spends nothing keeps, included).
RUN_FILES = ("result.json", "report.md", "report.html", "transcript.jsonl", "transcript.jsonl.blobs", LEDGER_FILE,
             LEDGER_FILE + "-wal", LEDGER_FILE + "-shm", LEDGER_FILE + HEAD_SUFFIX, STATUS_FILE, KEPT_TRANSCRIPT,
             KEPT_TRANSCRIPT + ".blobs")
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


#: The first columns of an older parley's study ``results.csv`` (:data:`parley.scenarios.study.plan.ROW_FIELDS`).
STUDY_COLUMNS = "cell,repeat,seed,status"


def _first_line(path: Path) -> str:
    try:
        with open(path, encoding="utf-8") as file:
            return file.readline().strip()
    except (OSError, ValueError):
        return ""


def _study_files(folder: Path, plots: list[Any]) -> tuple[str, ...]:
    """The files a study wrote: its own files, the plots its marker lists, and ``cells/``."""
    found = [name for name in STUDY_FILES if (folder / name).is_file()]
    found += sorted(name for name in plots if isinstance(name, str) and "/" not in name and name.endswith(".png")
                    and (folder / name).is_file())
    return (*found, "cells/") if (folder / "cells").is_dir() else tuple(found)


def holding(folder: Path) -> Holding | None:
    """Whose results ``folder`` holds; None for a folder without any (missing, empty, or not parley's).

    Only what parley provably wrote counts: a study folder by its marker (or, from an older parley, a
    ``results.csv`` with a study's columns beside a ``summary.md`` titled ``# Study NAME``), a run
    folder by a ``result.json`` that names its scenario. A user's own ``summary.md`` or figures are
    never taken for a study's, so ``--replace`` never deletes them.
    """
    if not folder.is_dir():
        return None
    if (folder / STUDY_MARKER).is_file():
        marker = _read_json(folder / STUDY_MARKER)
        name, plots = marker.get("study"), marker.get("plots")
        return Holding("study", name if isinstance(name, str) else None,
                       _study_files(folder, plots if isinstance(plots, list) else []))
    title = _first_line(folder / "summary.md")
    if title.startswith(STUDY_TITLE) and _first_line(folder / "results.csv").startswith(STUDY_COLUMNS):
        return Holding("study", title.removeprefix(STUDY_TITLE), _study_files(folder, []))
    name = _read_json(folder / "result.json").get("scenario") if (folder / "result.json").is_file() else None
    if name is None and (folder / STATUS_FILE).is_file():  # a run that failed or was interrupted
        name = _read_json(folder / STATUS_FILE).get("scenario")
    if isinstance(name, str):
        return Holding("run", name, tuple(n for n in RUN_FILES if (folder / n).is_file()))
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
    if held is None and kind == "study":
        strangers = tuple(n for n in STUDY_FILES if (folder / n).exists())
        if strangers:  # files a study writes, but not a parley study's: never overwritten, --replace or not
            raise ForeignFolderError(NOT_OURS.format(path=folder, files=", ".join(strangers)))
    if held is None or (held.kind == kind and held.name == name):
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
    """Write :data:`STUDY_MARKER` into ``folder``: the study's name, its spec fingerprint and its plot files.

    The plots are listed so that ``--replace`` deletes the study's figures and no other image.
    """
    path = folder / STUDY_MARKER
    plots = [plot.get("file") for plot in spec.get("outputs", {}).get("plots", []) if isinstance(plot, dict)]
    path.write_text(json.dumps({"study": name, "fingerprint": study_fingerprint(spec), "plots": plots}, indent=2)
                    + "\n", encoding="utf-8")
    return path
