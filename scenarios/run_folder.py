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
  and the earlier transcript is kept. ``fresh=True`` deletes that transcript too, but never one
  whose answers a named ledger charged.
* **Which ledger charged a transcript** is recorded in the folder (:data:`CHARGES_FILE`,
  :func:`record_charges` before the run, :func:`settle_charges` after it: what the ledger held and
  the transcript's head). A transcript charged to a named ledger is that ledger's evidence: kept
  (:func:`_kept_name`) when a later run reuses the folder, never counted against the folder's own
  ledger, and, when that named ledger is gone, a spending run into the folder is refused
  (:data:`FOREIGN_LEDGER_GONE`).
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
name it, reset only when asked, and its deletion is detected from the runs that charged it: the
folders its journal names (:data:`JOURNAL_SUFFIX`) and every run folder under its runs root, by their
:data:`CHARGES_FILE` (so deleting the journal with the ledger hides nothing). The limit: whoever
deletes every file (the ledger, its journal and the run folders that charged it) starts over; parley
never resets or forgets on its own, and names a deletion at the next run that can see it.
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
from typing import TYPE_CHECKING, Any

from parley.parties.ledger import HEAD_SUFFIX, Ledger, head_path
from parley.parties.party import REFUSAL
from parley.parties.transcript import blob_path
from parley.protocols.errors import ParleyError

if TYPE_CHECKING:
    from parley.scenarios.spec import Scenario

__all__ = ["CHARGES_FILE", "KEPT_TRANSCRIPT", "LATEST", "LEDGERS", "LOCK_FILE", "RUNS", "STATUS_FILE",
           "TRANSCRIPT_FILE", "LedgerInFolderError", "RunFolderBusyError", "RunFolderError", "charged_answer", "claim",
           "claim_ledger", "inside", "ledger_debits", "ledger_path", "mark", "new_run_folder", "point_latest",
           "record_charges", "run_id", "settle_charges", "spends_budget"]

#: The lock file a run holds an exclusive ``flock`` on while it runs.
LOCK_FILE = ".parley-run.lock"
#: The run's transcript, read for charged answers when its ledger is gone.
TRANSCRIPT_FILE = "transcript.jsonl"
#: Where a charged transcript goes when a run that spends nothing reuses its folder (kept as evidence).
KEPT_TRANSCRIPT = "transcript.spent.jsonl"
#: Which ledger charged each transcript of the folder (:func:`record_charges`): the evidence a named ledger's
#: spending leaves in the run folders that used it, kept apart from the ledger's own files.
CHARGES_FILE = "charges.json"
CHARGES_FORMAT = "parley-charges/1"
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
#: ``charged`` of :data:`LEDGER_GONE` from a run folder's :data:`CHARGES_FILE` alone (its transcript deleted too).
CHARGED_IN_RECORD = ("{record} records that the ledger held {debits} debits after the run that wrote {transcript} "
                     "(transcript head {head})")
#: A spending run into a folder whose transcript was charged to a named ledger that is gone.
FOREIGN_LEDGER_GONE = ("run folder {folder} holds the transcript of a run charged to the ledger {path}, which is "
                       "gone: {charged} ({transcript}); that budget stays spent: start that ledger anew with "
                       "--ledger {path} --fresh, or choose a new --out")
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


@contextmanager
def _locked(path: Path, busy: str, what: Path) -> Iterator[None]:
    """Hold an exclusive ``flock`` on ``path`` (its holder's pid written in it), else RunFolderBusyError(``busy``)."""
    # O_CLOEXEC (Python's default): no child process inherits the descriptor, so the lock dies with this process.
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = os.pread(fd, 32, 0).decode(errors="replace").strip() or "unknown"
            raise RunFolderBusyError(busy.format(path=what, pid=holder)) from None
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode(), 0)
        yield
    finally:
        os.close(fd)  # releases the lock


def ledger_debits(path: Path) -> tuple[int, str]:
    """(number of debits, what each querier spent against its limit) of the ledger file ``path``.

    ``(0, "no debits")`` when none of its files exist; otherwise the ledger is opened, so a ledger
    that was tampered with raises :class:`parley.parties.ledger.LedgerIntegrityError`.
    """
    if not any(path.with_name(name).exists() for name in _ledger_files(path.name)):
        return 0, "no debits"
    with Ledger(path) as ledger:
        return _spent(ledger)


def spends_budget(scenario: Scenario) -> bool:
    """Does ``scenario``'s protocol spend privacy budget (so that its run charges a ledger)?"""
    from parley.parties.compliance import has_costs
    from parley.protocols import get_protocol

    return has_costs(get_protocol(scenario.protocol.name)(scenario.protocol.params))


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
          written: tuple[str, ...] = (), transcript: str = TRANSCRIPT_FILE, spends: bool = True,
          shared: Path | None = None) -> Iterator[Path]:
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
        Delete the folder's own ledger and the transcripts it charged (its spending is forgotten: the caller
        asked for it). A transcript whose answers were charged to a named ledger (:data:`CHARGES_FILE`) is
        never deleted: it is that ledger's evidence, not the folder's.
    written : tuple of str
        Further files the run will write (checked to resolve inside ``folder``, not deleted).
    transcript : str
        File name of the run's transcript inside ``folder``: one recording charged answers is the
        earlier run's spending when its ledger is gone.
    spends : bool
        Does the run spend privacy budget? A run that does not is never refused because of a ledger: the
        earlier ledger is left as it is, and a transcript that records charged answers is kept (as
        :data:`KEPT_TRANSCRIPT`, or, charged to a named ledger, as :func:`_kept_name`) instead of being
        overwritten.
    shared : Path, optional
        The named ledger a spending run charges instead of the folder's own (whose files are then left
        alone; the named ledger is :func:`claim_ledger`'s).

    Raises
    ------
    RunFolderBusyError
        Another run holds the folder.
    LedgerInFolderError
        The folder holds a ledger with debits, or a transcript with charged answers, and ``fresh`` is False;
        or (a spending run) a transcript charged to another named ledger that is gone
        (:data:`FOREIGN_LEDGER_GONE`, whatever ``fresh``).
    LedgerIntegrityError
        The folder's ledger was tampered with (and ``fresh`` is False).
    RunFolderError
        An output would resolve outside the folder.
    """
    folder.mkdir(parents=True, exist_ok=True)
    if not folder.is_dir():
        raise RunFolderError(NOT_A_FOLDER.format(path=folder))
    with _locked(inside(folder, LOCK_FILE, "lock file"), FOLDER_BUSY, folder):
        files = _ledger_files(ledger)
        kept = (KEPT_TRANSCRIPT, blob_path(KEPT_TRANSCRIPT).name)
        for name in (*files, *stale, *written, transcript, blob_path(transcript).name, *kept, CHARGES_FILE):
            inside(folder, name)
        charges = _read_charges(folder)
        if spends:  # a named ledger that charged this folder's transcripts and is gone is named here
            _check_foreign(folder, charges, shared)
        own = [name for name in (transcript, KEPT_TRANSCRIPT) if _ledger_of(charges, name) is None]
        if (not spends or shared is not None) and not fresh:
            files = ()  # this run charges no ledger of this folder: the folder's ledger stays as it is
        elif not fresh:
            debits, spent = ledger_debits(folder / ledger)
            if debits:
                raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=spent))
            # No ledger debits: a transcript is what is left of an earlier run's spending (ledger files deleted).
            for name in own:
                charged = charged_answer(folder / name)
                if charged is not None:
                    raise LedgerInFolderError(LEDGER_IN_FOLDER.format(path=folder, spent=charged))
        # The transcript this run replaces: the evidence of a named ledger's spending is always kept; the
        # evidence of the folder's own, unless the folder's ledger is discarded (fresh) or this run charges it.
        foreign = _ledger_of(charges, transcript)
        if foreign is not None:
            if _evidence(folder, transcript, charges.get(transcript, {})) is not None:
                _move(folder, transcript, _kept_name(foreign), charges)
        elif not fresh and (not spends or shared is not None) and charged_answer(folder / transcript) is not None:
            _move(folder, transcript, KEPT_TRANSCRIPT, charges)
        for name in (*files, *stale, *((*own, *(blob_path(name).name for name in own)) if fresh else ())):
            (folder / name).unlink(missing_ok=True)
            charges.pop(name, None)
        if not spends:  # the transcript this run writes is charged to no ledger (record_charges names a spender's)
            charges.pop(transcript, None)
        _write_charges(folder, charges)
        yield folder


def _ledger_of(charges: dict[str, dict[str, Any]], name: str) -> str | None:
    """The named ledger (resolved path) that charged the transcript ``name``; None: the folder's own."""
    ledger = charges.get(name, {}).get("ledger")
    return ledger if isinstance(ledger, str) else None


def _kept_name(ledger: str) -> str:
    """Where a transcript charged to the named ledger ``ledger`` is kept when a later run reuses its folder."""
    return f"transcript.spent-{hashlib.sha256(ledger.encode()).hexdigest()[:8]}.jsonl"


def _move(folder: Path, name: str, to: str, charges: dict[str, dict[str, Any]]) -> None:
    """Move transcript ``name`` (and its blob file) to ``to`` inside ``folder``; its charges record goes along."""
    for src, dst in ((name, to), (blob_path(name).name, blob_path(to).name)):
        target = inside(folder, dst)
        if (folder / src).exists():
            os.replace(folder / src, target)
        else:
            target.unlink(missing_ok=True)
    charges.pop(to, None)
    if name in charges:
        charges[to] = charges.pop(name)


def _read_charges(folder: Path) -> dict[str, dict[str, Any]]:
    """``folder``'s :data:`CHARGES_FILE`: transcript name -> its record (empty if none or unreadable)."""
    try:
        data = json.loads((folder / CHARGES_FILE).read_text(encoding="utf-8"))
        entries = data["transcripts"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}
    if not isinstance(entries, dict):
        return {}
    return {name: entry for name, entry in entries.items() if isinstance(name, str) and isinstance(entry, dict)}


def _write_charges(folder: Path, charges: dict[str, dict[str, Any]]) -> None:
    path = inside(folder, CHARGES_FILE)
    if not charges:
        path.unlink(missing_ok=True)
        return
    scratch = inside(folder, f".{CHARGES_FILE}.{os.getpid()}")
    scratch.write_text(json.dumps({"format": CHARGES_FORMAT, "transcripts": charges}, indent=2) + "\n",
                       encoding="utf-8")
    os.replace(scratch, path)


def record_charges(folder: Path, ledger: Path | None, anew: bool = False, transcript: str = TRANSCRIPT_FILE) -> None:
    """Record, before the run starts, which ledger charges ``folder``'s ``transcript`` (None: the folder's own).

    ``anew``: the run starts the named ledger anew (``--fresh``): the records of earlier runs that charged it
    are no longer evidence of its spending. Called under :func:`claim`'s lock.
    """
    charges = _read_charges(folder)
    charges[transcript] = {"ledger": None if ledger is None else str(ledger.resolve()), "started_ns": time.time_ns(),
                           "fresh": bool(anew)}
    _write_charges(folder, charges)


def settle_charges(folder: Path, ledger: Path, head: str | None, transcript: str = TRANSCRIPT_FILE) -> None:
    """After a completed run: record what ``ledger`` held (its head file's debits and link) and the transcript's head.

    So the folder keeps the evidence of that ledger's spending even if its transcript is deleted with the ledger.
    """
    charges = _read_charges(folder)
    entry = charges.get(transcript)
    if entry is None:
        return
    try:
        anchor = json.loads(head_path(ledger).read_text(encoding="utf-8"))
        entry["ledger_head"] = {"debits": int(anchor["debits"]), "head": str(anchor["head"])}
    except (OSError, ValueError, KeyError, TypeError):
        pass
    entry["transcript_head"] = head
    _write_charges(folder, charges)


def _evidence(folder: Path, name: str, entry: dict[str, Any]) -> str | None:
    """What the transcript ``name`` of ``folder`` (or, without it, its charges record) says was charged, or None."""
    charged = charged_answer(folder / name)
    if charged is not None:
        return charged
    anchor = entry.get("ledger_head")
    if isinstance(anchor, dict) and isinstance(anchor.get("debits"), int) and anchor["debits"] > 0:
        return CHARGED_IN_RECORD.format(record=CHARGES_FILE, debits=anchor["debits"], transcript=name,
                                        head=entry.get("transcript_head"))
    return None


def _check_foreign(folder: Path, charges: dict[str, dict[str, Any]], shared: Path | None) -> None:
    """Refuse when a transcript of ``folder`` was charged to a named ledger (not ``shared``) that is gone.

    A ledger that still holds debits is opened (so one that was tampered with is named) and its answers in
    this folder are its own business; one without debits is gone unless it was started anew since.
    """
    mine = None if shared is None else str(shared.resolve())
    named = {ledger for ledger in (_ledger_of(charges, name) for name in charges) if ledger is not None}
    for ledger in sorted(named - {mine} if mine is not None else named):
        if ledger_debits(Path(ledger))[0]:
            continue
        gone = _gone(Path(ledger), (folder,))
        if gone is not None:
            charged, where = gone
            raise LedgerInFolderError(FOREIGN_LEDGER_GONE.format(folder=folder, path=ledger, charged=charged,
                                                                 transcript=where))


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


def _scanned(path: Path) -> list[Path]:
    """The run folders under the runs root of the named ledger ``path`` (``ROOT/ledgers/NAME.sqlite``) with records.

    ``ROOT/*/*`` (``runs/NAME/<run-id>``): where parley's own run folders are, whatever the ledger's journal says.
    """
    if path.parent.name != LEDGERS:
        return []
    return sorted(record.parent for record in path.parent.parent.glob(f"*/*/{CHARGES_FILE}"))


def _gone(path: Path, folders: Sequence[Path] = ()) -> tuple[str, Path] | None:
    """Evidence that the named ledger ``path`` charged answers since it was last started anew, or None.

    Looked for in ``folders``, in the run folders its journal names, and in the run folders under its runs
    root (:func:`_scanned`), so deleting the ledger with its journal does not hide it. In each folder its
    :data:`CHARGES_FILE` says which transcripts that ledger charged (a record of a run that started the
    ledger anew, ``fresh``, forgives the records before it); a journal entry whose folder has no record
    (an older parley's) is read as before: its transcript and :data:`KEPT_TRANSCRIPT` beside it.
    Returns (what was charged, the transcript or record that says so).
    """
    target = str(path.resolve())
    try:
        lines = [line.strip() for line in _journal(path).read_text(encoding="utf-8").splitlines()]
    except OSError:
        lines = []
    journal = [Path(line) for line in lines if line]
    seen: set[Path] = set()
    found: list[tuple[int, bool, Path, str, dict[str, Any]]] = []
    recorded: set[Path] = set()
    for folder in (*folders, *(transcript.parent for transcript in journal), *_scanned(path)):
        key = folder.resolve()
        if key in seen:
            continue
        seen.add(key)
        charges = _read_charges(folder)
        if charges:
            recorded.add(key)
        for name, entry in charges.items():
            if _ledger_of(charges, name) == target:
                started = entry.get("started_ns")
                found.append((started if isinstance(started, int) else 0, entry.get("fresh") is True, folder, name,
                              entry))
    since = max((started for started, anew, *_ in found if anew), default=-1)
    for started, _, folder, name, entry in sorted(found, key=lambda item: item[0]):
        if started >= since:
            charged = _evidence(folder, name, entry)
            if charged is not None:
                return charged, folder / (name if (folder / name).exists() else CHARGES_FILE)
    for transcript in journal:
        if transcript.parent.resolve() in recorded:
            continue
        for candidate in (transcript, transcript.with_name(KEPT_TRANSCRIPT)):
            charged = charged_answer(candidate)
            if charged is not None:
                return charged, candidate
    return None


@contextmanager
def claim_ledger(path: Path, transcript: Path, fresh: bool = False) -> Iterator[tuple[int, str]]:
    """Hold the named ledger ``path`` for one run writing ``transcript``; yield (debits, what was spent).

    The ledger is a compliance party that outlives one run: opened as it is (checked: a ledger tampered
    with is named, :class:`parley.parties.ledger.LedgerIntegrityError`), never reset unless ``fresh``.
    Runs that share it take turns (an exclusive lock beside it). Each run is recorded in its journal
    before it starts, and in its run folder's :data:`CHARGES_FILE` (:func:`record_charges`), so a ledger
    deleted behind the party's back is detected from the runs that it charged (:func:`_gone`,
    :class:`LedgerInFolderError`, :data:`LEDGER_GONE`), even when its journal was deleted with it.
    """
    path.parent.mkdir(parents=True, exist_ok=True)
    with _locked(path.with_name(path.name + ".lock"), LEDGER_BUSY, path):
        if fresh:
            for name in (*(path.with_name(name) for name in _ledger_files(path.name)), _journal(path)):
                name.unlink(missing_ok=True)
        debits, spent = ledger_debits(path)
        if not debits and not fresh:
            gone = _gone(path)
            if gone is not None:
                raise LedgerInFolderError(LEDGER_GONE.format(path=path, charged=gone[0], transcript=gone[1]))
        with open(_journal(path), "a", encoding="utf-8") as journal:
            journal.write(f"{transcript.resolve()}\n")
        yield debits, spent
