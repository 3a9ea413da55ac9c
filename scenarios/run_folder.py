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
* **A run that spends no budget is never refused because of a ledger** (``spends=False``): an
  earlier run's ledger stays as it is, and a transcript recording charged answers is kept as
  :data:`KEPT_TRANSCRIPT` (the evidence of that spending outlives the new run's transcript).

Run identity (:func:`new_run_folder`, :func:`point_latest`): without ``--out`` every run gets a
folder of its own, ``runs/NAME/<run-id>`` (its UTC start time and the ``--set`` overrides, or a
short hash of them), created exclusively, so no run overwrites another; ``runs/NAME/latest``
points at the newest completed one. A run that fails or is interrupted leaves its folder marked
(:data:`STATUS_FILE`, :func:`mark`). A compliance party that outlives one run is a named ledger
(:func:`ledger_path`, :func:`claim_ledger`): ``runs/ledgers/NAME.sqlite``, shared by the runs that
name it, reset only when asked, and its deletion is detected from the transcripts of the runs
that charged it (its journal, :data:`JOURNAL_SUFFIX`).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
import re
import stat
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import Any

from parley.parties.ledger import HEAD_SUFFIX, Ledger
from parley.parties.party import REFUSAL
from parley.parties.transcript import blob_path
from parley.protocols.errors import ParleyError

__all__ = ["KEPT_TRANSCRIPT", "LATEST", "LEDGERS", "LOCK_FILE", "RUNS", "STATUS_FILE", "TRANSCRIPT_FILE",
           "LedgerInFolderError", "RunFolderBusyError", "RunFolderError", "charged_answer", "claim", "claim_ledger",
           "inside", "ledger_path", "mark", "new_run_folder", "point_latest", "run_id"]

#: The lock file a run holds an exclusive ``flock`` on while it runs.
LOCK_FILE = ".parley-run.lock"
#: The run's transcript, read for charged answers when its ledger is gone.
TRANSCRIPT_FILE = "transcript.jsonl"
#: Where a charged transcript goes when a run that spends nothing reuses its folder (kept as evidence).
KEPT_TRANSCRIPT = "transcript.spent.jsonl"
#: Marks a run that did not complete: ``{"status": "interrupted" | "failed", "scenario": ..., "error": ...}``.
STATUS_FILE = "status.json"
#: The default root of run folders, and the names inside it.
RUNS = Path("runs")
#: ``runs/NAME/latest``: the newest completed run of scenario NAME (a symlink, else a text file naming it).
LATEST = "latest"
#: ``runs/ledgers/``: the named, persistent ledgers (``--ledger NAME``).
LEDGERS = "ledgers"
#: Beside a named ledger: one line per run that used it (its transcript), to detect the ledger's deletion.
JOURNAL_SUFFIX = ".runs"
#: The longest readable run-id suffix; longer override lists are named by a short hash.
SUFFIX_CHARS = 48
#: A ledger name (``--ledger NAME``) rather than a path.
LEDGER_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
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
LEDGER_BUSY = ("ledger {path} is in use by another parley run (process {pid}); runs that share a ledger take "
               "turns: wait for it to finish")
LEDGER_GONE = ("ledger {path} is gone, but {charged} (a run that used it: {transcript}); that budget stays spent: "
               "re-run with --fresh to start the ledger anew, or name another --ledger")
OUTSIDE = "{what} {path} resolves to {target}, outside the run folder {folder}; a run writes only inside its folder"
NOT_A_FOLDER = "run folder {path} is not a directory"
CANNOT_CREATE = ("cannot create the run folder {path}: {reason}; run parley where it can write runs/, or name a "
                 "folder with --out")


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
          written: tuple[str, ...] = (), transcript: str = TRANSCRIPT_FILE, spends: bool = True) -> Iterator[Path]:
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
    spends : bool
        Does the run spend privacy budget in ``folder``'s ledger? A run that does not is never refused
        because of a ledger: the earlier ledger is left as it is, and a transcript that records charged
        answers is kept as :data:`KEPT_TRANSCRIPT` instead of being overwritten.

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
        kept = (KEPT_TRANSCRIPT, blob_path(KEPT_TRANSCRIPT).name)
        for name in (*files, *stale, *written, *transcripts, *kept):
            inside(folder, name)
        if not spends and not fresh:
            # Nothing to refuse: this run charges no ledger. The evidence of earlier spending stays.
            if charged_answer(folder / transcript) is not None and charged_answer(folder / KEPT_TRANSCRIPT) is None:
                for name, keep in zip(transcripts, kept, strict=True):
                    if (folder / name).exists():
                        os.replace(folder / name, folder / keep)
            files = ()
        elif not fresh:
            if any((folder / name).exists() for name in files):
                with Ledger(folder / ledger) as earlier:
                    debits, spent = _spent(earlier)
                if debits:
                    raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=spent))
            # No ledger debits: a transcript is what is left of an earlier run's spending (ledger files deleted).
            for name in (transcript, KEPT_TRANSCRIPT):
                charged = charged_answer(folder / name)
                if charged is not None:
                    raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=charged))
        for name in (*files, *stale, *((*transcripts, *kept) if fresh else ())):
            (folder / name).unlink(missing_ok=True)
        yield folder
    finally:
        os.close(fd)  # releases the lock


def run_id(overrides: Sequence[str] = (), now: float | None = None) -> str:
    """A run's folder name: its UTC start time, then the ``--set`` overrides (or a short hash of them).

    ``20261127T210455Z`` for the scenario as it is; ``20261127T210455Z-protocol.name=laplace+protocol.epsilon=1``
    for a variant; an override list longer than :data:`SUFFIX_CHARS` is named by the first characters and
    an 8-digit hash of all of it. Names sort by start time.
    """
    stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(time.time() if now is None else now))
    if not overrides:
        return stamp
    slug = re.sub(r"[^A-Za-z0-9._=,+-]+", "_", "+".join(overrides)).strip("._")
    if len(slug) > SUFFIX_CHARS:
        digest = hashlib.sha256("\n".join(overrides).encode()).hexdigest()[:8]
        slug = f"{slug[:SUFFIX_CHARS - 9].rstrip('._+')}~{digest}"
    return f"{stamp}-{slug}"


def new_run_folder(name: str, overrides: Sequence[str] = (), root: Path = RUNS) -> Path:
    """Create and return ``root/name/<run-id>``, a folder no other run has (created exclusively).

    Two runs started in the same second with the same overrides get ``<run-id>`` and ``<run-id>-2``.
    """
    parent = root / name
    base = run_id(overrides)
    for attempt in range(1, 1000):
        folder = parent / (base if attempt == 1 else f"{base}-{attempt}")
        try:
            parent.mkdir(parents=True, exist_ok=True)
            folder.mkdir()
        except FileExistsError:
            if not parent.is_dir():
                raise RunFolderError(CANNOT_CREATE.format(path=folder, reason="a file is in the way")) from None
            continue
        except OSError as exc:
            raise RunFolderError(CANNOT_CREATE.format(path=folder, reason=exc.strerror or exc)) from None
        return folder
    raise RunFolderError(f"cannot find a free run folder name under {parent} for {base}")


def point_latest(folder: Path) -> Path:
    """Point ``folder.parent / latest`` at ``folder`` (a completed run); return the pointer's path.

    A relative symbolic link, swapped in atomically; where symbolic links cannot be made, a text file
    holding the run folder's name. A ``latest`` that is a real folder (not parley's) is left alone.
    """
    pointer = folder.parent / LATEST
    if pointer.is_dir() and not pointer.is_symlink():
        return pointer
    scratch = folder.parent / f".{LATEST}.{os.getpid()}"
    scratch.unlink(missing_ok=True)
    try:
        os.symlink(folder.name, scratch, target_is_directory=True)
    except (OSError, NotImplementedError):
        scratch.write_text(folder.name + "\n", encoding="utf-8")
    os.replace(scratch, pointer)
    return pointer


def mark(folder: Path, status: str, scenario: str, error: BaseException | None = None,
         overrides: Sequence[str] = ()) -> None:
    """Mark ``folder`` as a run that did not complete (``status``: ``interrupted`` or ``failed``).

    Best effort: a folder that cannot be written keeps what it has (the run's error goes on either way).
    """
    record = {"status": status, "scenario": scenario, "overrides": list(overrides),
              "error": None if error is None else (str(error) or type(error).__name__)}
    with suppress(OSError, RunFolderError):
        inside(folder, STATUS_FILE).write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")


def ledger_path(spec: str | Path, root: Path = RUNS) -> Path:
    """``--ledger NAME`` is ``root/ledgers/NAME.sqlite``; anything with a slash or a suffix is a path."""
    text = str(spec)
    if LEDGER_NAME.fullmatch(text) and not text.endswith(".sqlite"):
        return root / LEDGERS / f"{text}.sqlite"
    return Path(text)


def _journal(path: Path) -> Path:
    return path.with_name(path.name + JOURNAL_SUFFIX)


def _gone(path: Path) -> str | None:
    """A run in ``path``'s journal whose transcript records charged answers, as LEDGER_GONE's text, or None."""
    try:
        lines = _journal(path).read_text(encoding="utf-8").splitlines()
    except OSError:
        return None
    for line in lines:
        transcript = Path(line.strip())
        if line.strip():
            for name in (transcript, transcript.with_name(KEPT_TRANSCRIPT)):
                charged = charged_answer(name)
                if charged is not None:
                    return LEDGER_GONE.format(path=path, charged=charged, transcript=name)
    return None


@contextmanager
def claim_ledger(path: Path, transcript: Path, fresh: bool = False) -> Iterator[tuple[int, str]]:
    """Hold the named ledger ``path`` for one run writing ``transcript``; yield (debits, what was spent).

    The ledger is a compliance party that outlives one run: opened as it is (checked: a ledger tampered
    with is named, :class:`parley.parties.ledger.LedgerIntegrityError`), never reset unless ``fresh``.
    Runs that share it take turns (an exclusive lock beside it). Each run is recorded in its journal
    before it starts, so a ledger deleted behind the party's back is detected from the transcripts that
    recorded its charged answers (:class:`LedgerInFolderError`, :data:`LEDGER_GONE`).
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path.with_name(path.name + ".lock"), os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunFolderBusyError(LEDGER_BUSY.format(path=path, pid=holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        files = [path.with_name(name) for name in _ledger_files(path.name)]
        if fresh:
            for name in (*files, _journal(path)):
                name.unlink(missing_ok=True)
        debits, spent = 0, "no debits"
        if any(name.exists() for name in files):
            with Ledger(path) as ledger:
                debits, spent = _spent(ledger)
        if not debits:
            gone = _gone(path)
            if gone is not None:
                raise LedgerInFolderError(gone)
        with open(_journal(path), "a", encoding="utf-8") as journal:
            journal.write(f"{transcript.resolve()}\n")
        yield debits, spent
    finally:
        os.close(fd)
