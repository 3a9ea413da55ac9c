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
  holds nothing to lose and is replaced. A folder whose ``transcript.jsonl`` records
  charged answers (:func:`charged_answer`) is refused the same way when its ledger
  files are gone or hold no debits: deleting the ledger does not reset the budget,
  and the earlier transcript is kept. ``fresh=True`` deletes that transcript too.
* **Nothing outside the folder.** Every file a run writes is resolved (symbolic
  links followed) and must lie inside the resolved folder
  (:func:`inside`), else :class:`RunFolderError`.
"""

from __future__ import annotations

import fcntl
import json
import os
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from parley.parties.ledger import HEAD_SUFFIX, Ledger
from parley.parties.party import REFUSAL
from parley.parties.transcript import blob_path
from parley.protocols.errors import ParleyError

__all__ = ["LOCK_FILE", "TRANSCRIPT_FILE", "LedgerInFolderError", "RunFolderBusyError", "RunFolderError",
           "charged_answer", "claim", "inside"]

#: The lock file a run holds an exclusive ``flock`` on while it runs.
LOCK_FILE = ".parley-run.lock"
#: The run's transcript, read for charged answers when its ledger is gone.
TRANSCRIPT_FILE = "transcript.jsonl"
#: The role whose replies the ledger charges.
COMPLIANCE_ROLE = "compliance"
#: The payload field in which a priced reply records its epsilon (read where a protocol's parameters decide).
COST_FIELD = "epsilon"
#: The most of a transcript's first line (its keyring) read.
KEYRING_CHARS = 1 << 20

FOLDER_BUSY = ("run folder {path} is in use by another parley run (process {pid}); wait for it to finish or choose "
               "another --out")
LEDGER_IN_FOLDER = ("run folder {path} holds the privacy ledger of an earlier run ({spent}); that budget stays spent: "
                    "re-run with --fresh to discard the ledger and start a fresh one, or choose a new --out")
#: ``spent`` of :data:`LEDGER_IN_FOLDER` for a transcript with charged answers and no ledger debits.
CHARGED_IN_TRANSCRIPT = ("{transcript} records answers charged to {recipient!r} under protocol {protocol!r}, the "
                         "first on line {line}, but the ledger that counted them is gone")
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


def _charges(protocol: str, payload: Any) -> bool:
    """Was a reply of ``protocol`` (a name from the transcript) charged, as the run decided (``has_costs``)?

    A protocol whose class prices answers (it overrides ``cost`` or ``request_cost`` and leaves
    ``charges`` alone) charged every answer; one whose parameters decide (it overrides ``charges``)
    charged the replies that record their epsilon; an unknown one may have: counted as charged.
    """
    from parley.protocols import PROTOCOLS, Protocol

    if protocol not in PROTOCOLS:
        return True
    cls = PROTOCOLS[protocol]
    if cls.charges is Protocol.charges:
        return cls.cost is not Protocol.cost or cls.request_cost is not Protocol.request_cost
    return isinstance(payload, dict) and COST_FIELD in payload


def charged_answer(transcript: Path) -> str | None:
    """Where ``transcript`` records its first charged answer (:data:`CHARGED_IN_TRANSCRIPT`), or None.

    Streams the file line by line and stops at the first reply of the compliance party that its
    protocol charged (:func:`_charges`); a line that does not name that party as its sender is not
    parsed. Unverified: it asks what an earlier run spent, not whether its transcript is intact (a
    missing or unreadable file, one that is not a regular file, or one that is not a transcript,
    records nothing).
    """
    try:
        fd = os.open(transcript, os.O_RDONLY | os.O_NONBLOCK)  # a FIFO in its place must not block the run
    except OSError:
        return None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        return None
    with os.fdopen(fd, "rb") as fh:
        try:
            keyring = json.loads(fh.readline(KEYRING_CHARS))["record"]["keys"]
            names = [entry["name"] for entry in keyring.values() if entry.get("role") == COMPLIANCE_ROLE]
        except (ValueError, KeyError, TypeError, AttributeError):
            return None
        needles = [b'"sender":' + json.dumps(name).encode() for name in names]
        for number, raw in enumerate(fh, start=2):
            if not any(needle in raw for needle in needles):  # a query's predictions are never parsed
                continue
            try:
                record = json.loads(raw)["record"]
                kind, protocol, payload = record["kind"], record["protocol"], record["payload"]
                replied = record.get("type") == "envelope" and record["sender"] in names and kind != REFUSAL
            except (ValueError, KeyError, TypeError):
                continue  # a line cut short by a kill, or not an envelope
            if replied and isinstance(protocol, str) and _charges(protocol, payload):
                return CHARGED_IN_TRANSCRIPT.format(transcript=transcript.name, recipient=record.get("recipient"),
                                                    protocol=protocol, line=number)
    return None


@contextmanager
def claim(folder: Path, ledger: str, stale: tuple[str, ...], fresh: bool = False,
          written: tuple[str, ...] = (), transcript: str = TRANSCRIPT_FILE) -> Iterator[Path]:
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
        Delete an earlier run's ledger and transcript (its spending is forgotten: the caller asked for it).
    written : tuple of str
        Further files the run will write (checked to resolve inside ``folder``, not deleted).
    transcript : str
        File name of the run's transcript inside ``folder``: one recording charged answers is the
        earlier run's spending when its ledger is gone.

    Raises
    ------
    RunFolderBusyError
        Another run holds the folder.
    LedgerInFolderError
        The folder holds a ledger with debits, or a transcript with charged answers, and ``fresh`` is False.
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
        transcripts = (transcript, blob_path(transcript).name)
        for name in (*files, *stale, *written, *transcripts):
            inside(folder, name)
        if not fresh:
            if any((folder / name).exists() for name in files):
                with Ledger(folder / ledger) as earlier:
                    debits, spent = _spent(earlier)
                if debits:
                    raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=spent))
            # No ledger debits: the transcript is what is left of an earlier run's spending (ledger files deleted).
            charged = charged_answer(folder / transcript)
            if charged is not None:
                raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=charged))
        for name in (*files, *stale, *(transcripts if fresh else ())):
            (folder / name).unlink(missing_ok=True)
        yield folder
    finally:
        os.close(fd)  # releases the lock
