"""A run's output folder: one run at a time, every file inside it, no ledger reset unless asked.

:func:`claim` is what :func:`parley.scenarios.runner.run` does before it writes anything:

* **One run at a time.** The run takes an exclusive ``fcntl.flock`` on
  :data:`LOCK_FILE` in the folder and holds it until it returns. A second run
  into the same folder (another process, or another thread of this one) is
  refused with :class:`RunFolderBusyError` at once. The kernel drops the lock
  when the process dies, ``kill -9`` included, so a killed run leaves no stale
  lock behind (the lock file stays; only the lock matters).
* **A ledger is never reset silently.** A folder that holds a privacy ledger with
  debits (an earlier run's, finished or killed) is refused with
  :class:`LedgerInFolderError`, one line naming what was spent and how to start
  fresh: ``fresh=True`` (``parley run --fresh``) deletes that ledger and its side
  files, or a new output folder starts a new ledger. Before refusing, the ledger
  is opened, so a ledger that was tampered with is named as such
  (:class:`parley.parties.ledger.LedgerIntegrityError`). A ledger without debits
  holds nothing to lose and is replaced.
* **Nothing outside the folder.** Every file a run writes is resolved (symbolic
  links followed) and must lie inside the resolved folder
  (:func:`inside`), else :class:`RunFolderError`.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from parley.parties.ledger import HEAD_SUFFIX, Ledger
from parley.protocols.errors import ParleyError

__all__ = ["LOCK_FILE", "LedgerInFolderError", "RunFolderBusyError", "RunFolderError", "claim", "inside"]

#: The lock file a run holds an exclusive ``flock`` on while it runs.
LOCK_FILE = ".parley-run.lock"

FOLDER_BUSY = ("run folder {path} is in use by another parley run (process {pid}); wait for it to finish or choose "
               "another --out")
LEDGER_IN_FOLDER = ("run folder {path} holds the privacy ledger of an earlier run ({spent}); that budget stays spent: "
                    "re-run with --fresh to discard the ledger and start a fresh one, or choose a new --out")
OUTSIDE = "{what} {path} resolves to {target}, outside the run folder {folder}; a run writes only inside its folder"
NOT_A_FOLDER = "run folder {path} is not a directory"


class RunFolderError(ParleyError):
    """A run's output folder cannot be used as asked (a file would land outside it, ...)."""


class RunFolderBusyError(RunFolderError):
    """Another run holds the output folder's lock."""


class LedgerInFolderError(RunFolderError):
    """The output folder holds an earlier run's ledger with debits, and no fresh start was asked for."""


def inside(folder: Path, name: str, what: str = "output file") -> Path:
    """``folder / name``, after checking that it resolves (links followed) to a path inside ``folder``."""
    path = folder / name
    root, target = folder.resolve(), path.resolve()
    if not target.is_relative_to(root) or target == root:
        raise RunFolderError(OUTSIDE.format(what=what, path=path, target=target, folder=root))
    return path


def _ledger_files(ledger: str) -> tuple[str, ...]:
    return (ledger, ledger + "-wal", ledger + "-shm", ledger + HEAD_SUFFIX)


def _spent(ledger: Ledger) -> tuple[int, str]:
    """(number of debits, what each querier spent against its limit) of an existing ledger."""
    parts, debits = [], 0
    for querier, entry in ledger.summary()["queriers"].items():
        debits += entry["debits"]
        limit = entry["limit"]
        spent = entry["spent"]
        text = f"{querier} spent epsilon={spent['epsilon']:.6g}, delta={spent['delta']:.6g}"
        if limit is not None:
            text += f" of epsilon={limit['epsilon']:.6g}, delta={limit['delta']:.6g}"
        parts.append(f"{text} over {entry['debits']} debits")
    return debits, "; ".join(parts) or "no debits"


@contextmanager
def claim(folder: Path, ledger: str, stale: tuple[str, ...], fresh: bool = False,
          written: tuple[str, ...] = ()) -> Iterator[Path]:
    """Lock ``folder`` for one run, settle its ledger file ``ledger``, remove ``stale`` outputs; yield the folder.

    Parameters
    ----------
    folder : Path
        The run folder (created).
    ledger : str
        File name of the run's ledger inside ``folder``.
    stale : tuple of str
        Outputs of an earlier run to delete (a failed run must not leave an older run's results behind).
    fresh : bool
        Delete an earlier run's ledger (its spending is forgotten: the caller asked for it).
    written : tuple of str
        Further files the run will write (checked to resolve inside ``folder``, not deleted).

    Raises
    ------
    RunFolderBusyError
        Another run holds the folder.
    LedgerInFolderError
        The folder holds a ledger with debits and ``fresh`` is False.
    LedgerIntegrityError
        The folder's ledger was tampered with (and ``fresh`` is False).
    RunFolderError
        An output would resolve outside the folder.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if not folder.is_dir():
        raise RunFolderError(NOT_A_FOLDER.format(path=folder))
    lock_path = inside(folder, LOCK_FILE, "lock file")
    # O_CLOEXEC (Python's default): no child process inherits the descriptor, so the lock dies with this process.
    fd = os.open(lock_path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunFolderBusyError(FOLDER_BUSY.format(path=folder, pid=holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        files = _ledger_files(ledger)
        for name in (*files, *stale, *written):
            inside(folder, name)
        if any((folder / name).exists() for name in files) and not fresh:
            with Ledger(folder / ledger) as earlier:
                debits, spent = _spent(earlier)
            if debits:
                raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=spent))
        for name in (*files, *stale):
            (folder / name).unlink(missing_ok=True)
        yield folder
    finally:
        os.close(fd)  # releases the lock
