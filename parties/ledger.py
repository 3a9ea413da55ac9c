"""Persistent privacy accountant: one SQLite file of budgets and debits, idempotent answers.

The compliance party charges every costed answer here *before* the answer
leaves: :meth:`Ledger.charge` checks the querier's budget and records the debit
together with the answer payload in one transaction, and returns only after the
commit reached the disk. A query id is an idempotency key: the same querier
asking the same query again (a retry after a lost reply, or after the
compliance process crashed and was restarted on the same file) gets the stored
answer back, with the same noise and no second debit. Fresh noise on a retry
would let a querier average the noise away for free.

Durability
----------
* ``PRAGMA journal_mode=WAL``: readers never block the writer; the mode is
  stored in the file, so every later connection uses it too.
* ``PRAGMA synchronous=FULL``: in WAL mode each commit syncs the write-ahead log,
  so a committed debit survives a process crash *and* an OS crash or power loss
  (``NORMAL`` would survive only a process crash).
* ``BEGIN IMMEDIATE`` around check-and-insert: the write lock is taken before
  the spent total is read, so two ledgers (threads, processes, actors) on the
  same file serialize their charges and can never both squeeze into the last
  piece of a budget. Waiting writers retry for ``timeout`` seconds.

Integrity
---------
Every debit carries ``link`` = SHA-256 over the previous debit's link and this
debit's fields (:func:`chain_link`), so the debits form a hash chain, and after
every commit the chain's head (number of debits, last link, and every account's
cap) is written to a sidecar file next to the database, ``<ledger>-head``
(:data:`HEAD_SUFFIX`). Opening a ledger recomputes the chain and checks it
against the head: a debit edited in place, a debit deleted, a file truncated or
emptied, a file copied without its ``-wal`` journal (whose committed debits then
are missing), a file separated from its head, or a cap that is not the one the
head records raises :class:`LedgerIntegrityError` naming the file and what is
wrong. A database *ahead* of its head is accepted when the head is a link of its
chain: a process killed between the commit and the head write leaves exactly
that, and extra debits only mean more budget spent.

An open ledger also checks the file under it. Before every charge, budget change
and head write (under the write lock) it checks that the database still extends
the chain this ledger object last saw or wrote (debits appended since by another
ledger on the file must continue it link by link), that the charged account's
debits are the ones it recorded, and that the ``budgets`` table holds exactly the
caps the head records. A debit deleted or lowered, or a cap edited, behind its
back by another connection to the file is named there (:class:`LedgerTamperedError`:
:data:`TIP_CHANGED`, :data:`DEBITS_CHANGED`, :data:`BUDGET_EDITED`): the
charge is refused, no head is written over the change, so reopening names it
too, and the party keeps serving what needs no new debit (retries answered from
the ledger, free requests). Budgets are part of the head: :meth:`Ledger.set_budget`
writes the head naming the new cap (and the one it replaces) before its commit
and the head without the old cap after it, so a crash between the two is never
taken for an edit.

What this does not stop: the chain is not keyed, so someone who reads this code
and can write both files can delete a debit or raise a cap, recompute every link
and rewrite the head to match. The chain alone only turns an edit of the
database into an edit of two files; such an edit becomes detectable against an
adversary when the head is kept where that adversary cannot write (handed to the
auditor, or signed with a key the adversary does not hold), which parley does
not do for you. Deleting the database and its head together is not seen by the
ledger either (a new ledger starts): the run folder refuses a folder whose
transcript records charged answers without their ledger
(:func:`parley.scenarios.run_folder.claim`).

A querier here is an account name: the compliance party charges a querier's
queries to its name, or, under a per-purpose budget policy, to
``<querier>/<purpose>`` (:func:`parley.parties.compliance.account_of`); the
ledger treats every account alike, so each has its own budget row, and its
debits share the one chain.

Composition follows :func:`parley.protocols.budget.compose` (``sequential`` or
``advanced`` with slack delta') or :func:`parley.protocols.accounting.compose_zcdp`
(``zcdp``: the answers' recorded zCDP parameters composed by dp-accounting, read
back from ``answer_json`` on every opening). Advanced and zCDP composition spend delta', so a
ledger using them needs budgets with ``delta >= slack``; a pure-epsilon budget
cannot pay for an (epsilon, delta) cost and such a charge is refused.

Schema (``PRAGMA user_version`` = 2; a version-1 file is upgraded on open, its
debits chained as found)::

    budgets(querier TEXT PRIMARY KEY, epsilon REAL, delta REAL)   -- NULL, NULL: no cap (debits recorded)
    debits(query_id TEXT PRIMARY KEY, querier TEXT NOT NULL, epsilon REAL NOT NULL, delta REAL NOT NULL,
           answer_json TEXT NOT NULL, created_ns INTEGER NOT NULL, request TEXT, link TEXT)
    index debits_by_querier(querier, created_ns)

The head file (format ``parley-ledger-head/2``; a ``/1`` head, without caps, is
read and rewritten) is one JSON object: ``debits`` (number), ``head`` (last
link), ``budgets`` (account -> ``[epsilon, delta]``, nulls for no cap) and, while
a :meth:`Ledger.set_budget` is under way, ``pending`` (account -> the cap it
replaces, null if none).

``answer_json`` holds the answer payload in the transcript's JSON form
(:func:`parley.parties.wire.encode_payload`: arrays as dtype, shape and base64 bytes),
so a stored answer decodes to the same values, bit for bit, and the same payload
digest. ``request`` is the SHA-256 payload digest of the query that was
answered: a retry must carry the same query.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import sqlite3
import threading
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal, NoReturn

from parley.parties.wire import BUDGET_EXCEEDED, INTERNAL, INVALID_QUERY, decode_payload, encode_payload
from parley.protocols.accounting import RHO_KEY, compose_zcdp
from parley.protocols.budget import Budget, budget, compose, within
from parley.protocols.errors import ConfigError, ParleyError, WireError

__all__ = ["Ledger", "Debit", "DEFAULT_SLACK", "GENESIS", "HEAD_SUFFIX", "LedgerIntegrityError", "LedgerTamperedError",
           "SCHEMA_VERSION", "chain_link", "head_path"]

log = logging.getLogger(__name__)

SCHEMA_VERSION = 2
#: The sidecar file holding the chain's head: ``ledger.sqlite`` -> ``ledger.sqlite-head``.
HEAD_SUFFIX = "-head"
#: The link before the first debit.
GENESIS = hashlib.sha256(b"parley ledger chain v1").hexdigest()
#: v2 records every account's cap; a v1 head (no caps) is read, its caps taken as found, and rewritten as v2.
HEAD_FORMAT = "parley-ledger-head/2"
HEAD_FORMAT_V1 = "parley-ledger-head/1"
#: Default slack delta' of advanced composition.
DEFAULT_SLACK = 1e-6

# Message templates (tests match on these).
NO_BUDGET = "no budget for querier {querier!r}: it may not spend privacy budget here"
OVER_BUDGET = ("querier {querier!r} would exceed its budget: "
               "limit (epsilon={limit.epsilon:.6g}, delta={limit.delta:.6g}), "
               "spent (epsilon={spent.epsilon:.6g}, delta={spent.delta:.6g}) over {n} answers, "
               "this query costs (epsilon={cost.epsilon:.6g}, delta={cost.delta:.6g}); "
               "{method} composition would total (epsilon={total.epsilon:.6g}, delta={total.delta:.6g})")
MIXED_COST = ("querier {querier!r} has a pure epsilon budget (epsilon={limit.epsilon:.6g}, delta=0), which cannot pay "
              "for a total with delta={total.delta:.6g} ({why}); give the budget a delta")
ID_TAKEN = "query id {query_id!r} is already taken by another querier; use a fresh id"
ID_REUSED = ("query id {query_id!r} was already answered for a different query; a retry must resend the same "
             "query, a new query needs a fresh id")
BAD_METHOD = "composition must be 'sequential', 'advanced' or 'zcdp', got {method!r}"
BAD_SLACK = "slack (delta' of advanced composition) must be in (0, 1), got {slack!r}"
ADVANCED_NEEDS_DELTA = ("advanced composition spends a slack delta'={slack:g}: the budget of {querier!r} needs "
                        "delta >= {slack:g}, got {delta:g}")
ZCDP_NEEDS_DELTA = ("zcdp composition spends a slack delta'={slack:g}: the budget of {querier!r} needs "
                    "delta >= {slack:g}, got {delta:g}")
NOT_A_BUDGET = "{what} must be a parley.protocols.budget.Budget, got {value!r}"
BAD_ID = "{what} must be a non-empty string, got {value!r}"
NEWER_SCHEMA = "{path}: ledger schema version {found} is newer than this parley understands ({known})"
NOT_A_LEDGER = "{path}: not a parley ledger ({error})"
CANNOT_OPEN = "{path}: cannot open the ledger ({error})"
# Integrity (LedgerIntegrityError); tests match on these.
NO_HEAD = ("{path}: the ledger holds {n} debits but its head file {head} is missing: the ledger was copied or moved "
           "without it, or it was deleted; its spending cannot be checked")
DEBITS_MISSING = ("{path}: {n} debits on file, but its head {head} records {k}: debits were deleted, or the file was "
                  "copied without its -wal journal")
DEBIT_EDITED = ("{path}: debit {i} (query id {query_id!r}) does not match its chain link: it was edited, or a debit "
                "before it was deleted")
CHAIN_REWRITTEN = ("{path}: the first {k} debits do not lead to the head recorded in {head}: the ledger was rewritten "
                   "(debits edited or deleted and the chain recomputed)")
BAD_HEAD = "{path}: the ledger's head file {head} is unreadable ({error})"
TIP_CHANGED = ("{path}: the database no longer extends the chain this ledger last wrote ({count} debits, the last "
               "query id {query_id!r}): it holds {held} of those {count} debits and {total} in all, the last {last}; "
               "debits were deleted or replaced behind the ledger. Nothing more is charged and no head is written "
               "over it")
BUDGET_EDITED = ("{path}: the cap of account {querier!r} is {found} in the database, but the head {head} records "
                 "{anchored}: the budgets table was edited behind the ledger (caps change only through set_budget)")
HEAD_LOST = "{path}: its head file {head} was deleted while the ledger was open"
DEBITS_CHANGED = ("{path}: the debits of account {querier!r} are not the ones this ledger recorded: {what}; they were "
                  "edited behind the ledger")
#: The detail of the refusal a querier gets when a charge meets a tampered ledger (nothing about other accounts).
LEDGER_REFUSED = ("the compliance party's privacy ledger failed its integrity check; no answer that costs budget is "
                  "released until it is repaired")

_SCHEMA = """
CREATE TABLE IF NOT EXISTS budgets (
    querier TEXT PRIMARY KEY,
    epsilon REAL CHECK (epsilon IS NULL OR epsilon >= 0),
    delta   REAL CHECK (delta IS NULL OR (delta >= 0 AND delta < 1)),
    CHECK ((epsilon IS NULL) = (delta IS NULL))
);
CREATE TABLE IF NOT EXISTS debits (
    query_id    TEXT PRIMARY KEY,
    querier     TEXT NOT NULL,
    epsilon     REAL NOT NULL CHECK (epsilon >= 0),
    delta       REAL NOT NULL CHECK (delta >= 0 AND delta < 1),
    answer_json TEXT NOT NULL,
    created_ns  INTEGER NOT NULL,
    request     TEXT
);
CREATE INDEX IF NOT EXISTS debits_by_querier ON debits (querier, created_ns);
"""
_DEBIT_FIELDS = "query_id, querier, epsilon, delta, answer_json, created_ns, request"


class LedgerIntegrityError(ParleyError):
    """A ledger file was edited, truncated, lost debits, or was separated from its head or journal."""


class LedgerTamperedError(LedgerIntegrityError, WireError):
    """An open ledger's file was changed behind it (debits deleted, a cap edited, the head deleted).

    Its message names what changed. As a :class:`WireError` (``internal-error``, detail
    :data:`LEDGER_REFUSED`) it turns the charge into a signed refusal: the party keeps serving.
    """

    def __init__(self, message: str) -> None:
        ParleyError.__init__(self, message)
        self.reason = INTERNAL
        self.detail = LEDGER_REFUSED


#: An account's row of the budgets table: (epsilon, delta), (None, None) for no cap.
Cap = tuple[Any, Any]
#: A debit as an open ledger remembers it: query id, epsilon, delta, and rho (zcdp) or None.
_Entry = tuple[str, Any, Any, Any]


def _cost_text(cost: list[Any]) -> str:
    text = _cap_text((cost[0], cost[1]))
    return text if cost[2] is None else f"{text}, rho={cost[2]!r}"


@dataclass(frozen=True)
class _Head:
    """The head file: debits and last link; caps by account (None in a v1 head) and caps a set_budget replaces."""

    debits: int
    tip: str
    budgets: dict[str, Cap] | None
    pending: dict[str, Cap | None]


def _cap_text(cap: Cap | None) -> str:
    if cap is None:
        return "absent (no budget row)"
    if cap == (None, None):
        return "no cap"
    return ", ".join(f"{name}={v:.6g}" if isinstance(v, (int, float)) else f"{name}={v!r}"
                     for name, v in zip(("epsilon", "delta"), cap, strict=True))


def _cap_of(value: Any) -> Cap | None:
    """A cap read from a head file (a pair of numbers or nulls), or None if it is not one."""
    if (isinstance(value, list) and len(value) == 2
            and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in value)):
        return (value[0], value[1])
    return None


def head_path(path: str | Path) -> Path:
    """The head sidecar of the ledger file ``path``."""
    path = Path(path)
    return path.with_name(path.name + HEAD_SUFFIX)


def chain_link(previous: str, query_id: str, querier: str, epsilon: float, delta: float, answer_json: str,
               created_ns: int, request: str | None) -> str:
    """SHA-256 link of one debit: the previous link and every field (floats exactly, the answer by its digest)."""
    record = [previous, query_id, querier, float(epsilon).hex(), float(delta).hex(),
              hashlib.sha256(answer_json.encode()).hexdigest(), int(created_ns), request]
    return hashlib.sha256(json.dumps(record, separators=(",", ":")).encode()).hexdigest()


@dataclass(frozen=True)
class Debited:
    """One debit as composition reads it: its cost and the zCDP rho its answer recorded (None if none)."""

    cost: Budget
    rho: float | None = None


@dataclass(frozen=True)
class Debit:
    """One recorded charge: who asked, under which query id, what it cost, what was answered."""

    query_id: str
    querier: str
    cost: Budget
    answer: dict[str, Any]
    created_ns: int
    request: str | None = None


def _check_id(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value:
        raise ConfigError(BAD_ID.format(what=what, value=value))
    return value


class Ledger:
    """Budgets and debits of every querier, in one SQLite file.

    Parameters
    ----------
    path : str or Path
        The ledger file (created with its folder if missing; reopening restores
        every budget and debit). ``":memory:"`` keeps a ledger that dies with
        the object (no durability; for parties built without a file).
    method : {"sequential", "advanced", "zcdp"}
        How a querier's debits compose (:func:`parley.protocols.budget.compose`;
        ``zcdp``: :func:`parley.protocols.accounting.compose_zcdp`).
    slack : float
        delta' of advanced composition.
    timeout : float
        Seconds a charge waits for another writer on the same file.
    """

    def __init__(self, path: str | Path, method: Literal["sequential", "advanced", "zcdp"] = "sequential",
                 slack: float = DEFAULT_SLACK, timeout: float = 30.0) -> None:
        if method not in ("sequential", "advanced", "zcdp"):
            raise ConfigError(BAD_METHOD.format(method=method))
        if not (isinstance(slack, (int, float)) and 0.0 < slack < 1.0):
            raise ConfigError(BAD_SLACK.format(slack=slack))
        self.method = method
        self.slack = float(slack)
        self.path = path if str(path) == ":memory:" else Path(path)
        if isinstance(self.path, Path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
        # Autocommit mode (isolation_level=None): every transaction below is explicit.
        # One connection per Ledger, guarded by a lock, usable from any thread (Ray may call from several).
        self._lock = threading.RLock()
        # What this ledger last saw of the chain: (debits, last link, last rowid, last query id).
        self._seen: tuple[int, str, int, str | None] = (0, GENESIS, 0, None)
        self._charged: dict[str, list[_Entry]] = {}  # each account's debits as recorded (files only)
        self._anchored = False  # a head was read or written: from now on it must be there
        self._opened = False  # mid-run failures raise LedgerTamperedError (a refusal), at open LedgerIntegrityError
        self._conn = sqlite3.connect(str(self.path), timeout=timeout, isolation_level=None, check_same_thread=False)
        try:
            self.journal_mode = self._conn.execute("PRAGMA journal_mode=WAL").fetchone()[0]
            self._conn.execute("PRAGMA synchronous=FULL")
            migrated = False
            with self._transaction():
                version = self._conn.execute("PRAGMA user_version").fetchone()[0]
                if version > SCHEMA_VERSION:
                    raise ConfigError(NEWER_SCHEMA.format(path=self.path, found=version, known=SCHEMA_VERSION))
                for statement in _SCHEMA.split(";"):
                    if statement.strip():
                        self._conn.execute(statement)
                columns = [r[1] for r in self._conn.execute("PRAGMA table_info(debits)")]
                if "link" not in columns:  # a version-1 file: chain its debits as found
                    self._conn.execute("ALTER TABLE debits ADD COLUMN link TEXT")
                    migrated, previous = True, GENESIS
                    for rowid, *fields in self._conn.execute(
                            f"SELECT rowid, {_DEBIT_FIELDS} FROM debits ORDER BY rowid").fetchall():
                        previous = chain_link(previous, *fields)
                        self._conn.execute("UPDATE debits SET link = ? WHERE rowid = ?", (previous, rowid))
                self._conn.execute(f"PRAGMA user_version = {SCHEMA_VERSION}")
            if isinstance(self.path, Path):
                self._verify(trust_unanchored=migrated)
            self._opened = True
        except sqlite3.OperationalError as exc:  # locked for longer than timeout, unwritable folder, ...
            self._conn.close()
            raise ConfigError(CANNOT_OPEN.format(path=self.path, error=exc)) from None
        except sqlite3.DatabaseError as exc:  # "file is not a database"
            self._conn.close()
            raise ConfigError(NOT_A_LEDGER.format(path=self.path, error=exc)) from None
        except BaseException:
            self._conn.close()
            raise

    # ------------------------------------------------------------------ integrity
    @property
    def head_file(self) -> Path | None:
        """The head sidecar (None for an in-memory ledger)."""
        return head_path(self.path) if isinstance(self.path, Path) else None

    def _fail(self, message: str) -> NoReturn:
        """Raise ``message``: LedgerIntegrityError while opening, else LedgerTamperedError (logged: loud)."""
        if not self._opened:
            raise LedgerIntegrityError(message)
        log.error("%s", message)
        raise LedgerTamperedError(message)

    def _load_head(self) -> _Head | None:
        head = self.head_file
        assert head is not None
        try:
            data = json.loads(head.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return None
        except (OSError, ValueError) as exc:
            self._fail(BAD_HEAD.format(path=self.path, head=head, error=exc))
        if (not isinstance(data, dict) or data.get("format") not in (HEAD_FORMAT, HEAD_FORMAT_V1)
                or not isinstance(data.get("debits"), int) or data["debits"] < 0
                or not isinstance(data.get("head"), str)):
            self._fail(BAD_HEAD.format(path=self.path, head=head, error="not a parley ledger head"))
        if data["format"] == HEAD_FORMAT_V1:
            return _Head(data["debits"], data["head"], None, {})
        budgets, pending = data.get("budgets"), data.get("pending", {})
        if not isinstance(budgets, dict) or not isinstance(pending, dict):
            self._fail(BAD_HEAD.format(path=self.path, head=head, error="malformed caps"))
        caps = {q: c for q, c in ((q, _cap_of(v)) for q, v in budgets.items()) if c is not None}
        before = {q: None if v is None else _cap_of(v) for q, v in pending.items()}
        if len(caps) != len(budgets) or any(c is None and pending[q] is not None for q, c in before.items()):
            self._fail(BAD_HEAD.format(path=self.path, head=head, error="malformed caps"))
        return _Head(data["debits"], data["head"], caps, before)

    def _verify(self, trust_unanchored: bool = False) -> None:
        """Recompute the chain and check it and the caps against the head file; write the head of a new ledger.

        ``trust_unanchored``: a version-1 file just chained has no head yet; its debits are taken as found.
        """
        # The head first, then the debits: a head is written only after its debits were committed,
        # so a concurrent writer can make the database run ahead of the head read here, never behind.
        head = self._load_head()
        rows = self._read(f"SELECT rowid, {_DEBIT_FIELDS}, link FROM debits ORDER BY rowid")
        if head is None:
            if rows and not trust_unanchored:
                raise LedgerIntegrityError(NO_HEAD.format(path=self.path, n=len(rows), head=self.head_file))
        else:
            count, tip = head.debits, head.tip
            if count == 0 and tip != GENESIS:
                raise LedgerIntegrityError(CHAIN_REWRITTEN.format(path=self.path, k=0, head=self.head_file))
        previous = GENESIS
        for i, (_, *fields, link) in enumerate(rows, start=1):
            previous = chain_link(previous, *fields)
            if link != previous:
                raise LedgerIntegrityError(DEBIT_EDITED.format(path=self.path, i=i, query_id=fields[0]))
            if head is not None and i == head.debits and previous != head.tip:
                raise LedgerIntegrityError(CHAIN_REWRITTEN.format(path=self.path, k=head.debits, head=self.head_file))
        if head is not None and len(rows) < head.debits:
            raise LedgerIntegrityError(DEBITS_MISSING.format(path=self.path, n=len(rows), head=self.head_file,
                                                             k=head.debits))
        if rows:
            self._seen = (len(rows), previous, rows[-1][0], rows[-1][1])
        for _, qid, querier, eps, delta, answer_json, *_ in rows:
            self._record(querier, self._entry(qid, eps, delta, answer_json))
        if head is None:  # a new ledger (or a version-1 file): its caps are taken as found
            self._anchor()
            return
        self._anchored = True
        with self._transaction() as conn:  # the caps under the write lock: a set_budget elsewhere is whole
            head = self._check(conn)
        if head is not None and (head.budgets is None or head.pending):
            self._anchor()  # a v1 head gains the caps; a set_budget cut short is settled

    def _check(self, conn: sqlite3.Connection) -> _Head | None:
        """Under the write lock: the database extends what this ledger last saw, and holds the head's caps.

        Returns the head read (None in memory, or for a new file before its first head).
        """
        if self.head_file is None:
            return None
        head = self._load_head()
        if head is None:
            if self._anchored:
                self._fail(HEAD_LOST.format(path=self.path, head=self.head_file))
            return None
        self._advance(conn)
        if head.budgets is not None:
            found = self._caps(conn)
            for querier in sorted(set(found) | set(head.budgets)):
                got, want = found.get(querier), head.budgets.get(querier)
                if got != want and not (querier in head.pending and got == head.pending[querier]):
                    self._fail(BUDGET_EDITED.format(path=self.path, querier=querier, found=_cap_text(got),
                                                    head=self.head_file, anchored=_cap_text(want)))
        return head

    def _advance(self, conn: sqlite3.Connection) -> None:
        """Check that the chain this ledger last saw is still there; follow debits appended since, link by link."""
        count, tip, rowid, query_id = self._seen
        if rowid:
            at = conn.execute("SELECT link, (SELECT COUNT(*) FROM debits WHERE rowid <= ?1) FROM debits "
                              "WHERE rowid = ?1", (rowid,)).fetchone()
            if at is None or at[0] != tip or at[1] != count:
                held = conn.execute("SELECT COUNT(*) FROM debits WHERE rowid <= ?", (rowid,)).fetchone()[0]
                total = conn.execute("SELECT COUNT(*) FROM debits").fetchone()[0]
                last = conn.execute("SELECT query_id FROM debits ORDER BY rowid DESC LIMIT 1").fetchone()
                self._fail(TIP_CHANGED.format(path=self.path, count=count, query_id=query_id, held=held, total=total,
                                              last="none" if last is None else f"query id {last[0]!r}"))
        appended = []
        for row_id, *fields, link in conn.execute(f"SELECT rowid, {_DEBIT_FIELDS}, link FROM debits WHERE rowid > ? "
                                                  "ORDER BY rowid", (rowid,)).fetchall():
            tip = chain_link(tip, *fields)
            count += 1
            if link != tip:
                self._fail(DEBIT_EDITED.format(path=self.path, i=count, query_id=fields[0]))
            rowid, query_id = row_id, fields[0]
            appended.append((fields[1], self._entry(fields[0], fields[2], fields[3], fields[4])))
        for querier, entry in appended:
            self._record(querier, entry)
        self._seen = (count, tip, rowid, query_id)

    @staticmethod
    def _caps(conn: sqlite3.Connection) -> dict[str, Cap]:
        return {q: (e, d) for q, e, d in conn.execute("SELECT querier, epsilon, delta FROM budgets")}

    def _write_head(self, caps: Mapping[str, Cap], pending: Mapping[str, Cap | None] | None = None) -> None:
        """Write the head: the chain's tip as this ledger saw it, ``caps``, and ``pending`` (caps being replaced).

        Under the database's write lock, so heads are written in commit order. The new head is synced before it
        replaces the old one.
        """
        head = self.head_file
        assert head is not None
        count, tip = self._seen[:2]
        data: dict[str, Any] = {"format": HEAD_FORMAT, "debits": count, "head": tip,
                                "budgets": {q: list(c) for q, c in sorted(caps.items())}}
        if pending:
            data["pending"] = {q: None if c is None else list(c) for q, c in sorted(pending.items())}
        tmp = head.with_name(f"{head.name}.{os.getpid()}.{threading.get_ident()}.tmp")
        with open(tmp, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(data) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, head)
        self._anchored = True

    def _anchor(self) -> None:
        """Write the chain's current head and caps to the sidecar (after a commit; a no-op in memory).

        First checks (:meth:`_check`) that the database still extends what this ledger saw and holds the
        head's caps: a head is never written over a change made behind the ledger's back.
        """
        if self.head_file is None:
            return
        with self._transaction() as conn:
            self._check(conn)
            self._write_head(self._caps(conn))

    def head(self) -> dict[str, Any]:
        """The chain's current head in the database: number of debits and last link (what the sidecar records)."""
        rows = self._read("SELECT COUNT(*), (SELECT link FROM debits ORDER BY rowid DESC LIMIT 1) FROM debits")
        return {"debits": int(rows[0][0]), "head": rows[0][1] or GENESIS}

    # ------------------------------------------------------------------ plumbing
    @contextmanager
    def _transaction(self) -> Iterator[sqlite3.Connection]:
        """One write transaction; COMMIT on success (durable when it returns), ROLLBACK on error."""
        with self._lock:
            # IMMEDIATE takes the write lock before anything is read, so a
            # check-then-insert never interleaves with another writer's.
            self._conn.execute("BEGIN IMMEDIATE")
            try:
                yield self._conn
            except BaseException:
                self._conn.execute("ROLLBACK")
                raise
            try:
                # With synchronous=FULL, COMMIT returns once the WAL is synced to disk.
                self._conn.execute("COMMIT")
            except BaseException:
                if self._conn.in_transaction:  # e.g. disk full: nothing was recorded, leave no open transaction
                    self._conn.execute("ROLLBACK")
                raise

    def _read(self, sql: str, args: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
        with self._lock:
            return self._conn.execute(sql, args).fetchall()

    def close(self) -> None:
        """Close the file (every committed debit is already on disk)."""
        with self._lock:
            self._conn.close()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"Ledger({str(self.path)!r}, method={self.method!r})"

    # ------------------------------------------------------------------ budgets
    def set_budget(self, querier: str, limit: Budget | None) -> None:
        """Give ``querier`` the budget ``limit`` (replacing any earlier one); ``None``: record without a cap.

        Idempotent: setting the same budget again changes nothing, and a budget
        set once stays in the file for every later opening. The cap is recorded
        in the head, so a cap changed any other way is named (:data:`BUDGET_EDITED`).
        """
        _check_id(querier, "querier")
        if limit is not None:
            if not isinstance(limit, Budget):
                raise ConfigError(NOT_A_BUDGET.format(what="budget", value=limit))
            if self.method != "sequential" and limit.delta < self.slack:
                needs = ADVANCED_NEEDS_DELTA if self.method == "advanced" else ZCDP_NEEDS_DELTA
                raise ConfigError(needs.format(slack=self.slack, querier=querier, delta=limit.delta))
        cap: Cap = (None, None) if limit is None else (float(limit.epsilon), float(limit.delta))
        with self._transaction() as conn:
            self._check(conn)
            caps = self._caps(conn)
            if caps.get(querier) == cap:
                return
            if self.head_file is not None:
                # The head names the new cap before the commit, with the cap it replaces as pending: the
                # database matches the head whether or not the commit happens; the head after it drops the old cap.
                self._write_head({**caps, querier: cap}, pending={querier: caps.get(querier)})
            conn.execute("INSERT INTO budgets (querier, epsilon, delta) VALUES (?, ?, ?) "
                         "ON CONFLICT (querier) DO UPDATE SET epsilon = excluded.epsilon, delta = excluded.delta",
                         (querier, *cap))
        self._anchor()

    def has_budget(self, querier: str) -> bool:
        """Whether ``querier`` has a budget row (a cap, or ``None`` for no cap)."""
        return bool(self._read("SELECT 1 FROM budgets WHERE querier = ?", (querier,)))

    def budget_of(self, querier: str) -> Budget | None:
        """The cap of ``querier`` (``None`` if uncapped); a querier never given one raises budget-exceeded."""
        rows = self._read("SELECT epsilon, delta FROM budgets WHERE querier = ?", (querier,))
        if not rows:
            raise WireError(BUDGET_EXCEEDED, NO_BUDGET.format(querier=querier))
        eps, delta = rows[0]
        return None if eps is None else budget(eps, delta)

    # ------------------------------------------------------------------ spending
    def _costs(self, conn: sqlite3.Connection | None, querier: str) -> list[Debited]:
        """The querier's debits in order: cost and, for ``zcdp``, the answer's recorded rho (None if absent).

        Read under the write lock (``conn``) from a file, they must be the debits this ledger recorded
        (:data:`DEBITS_CHANGED`): a cost lowered behind the ledger never buys an answer.
        """
        answers = ", answer_json" if self.method == "zcdp" else ", NULL"
        sql, args = f"SELECT query_id, epsilon, delta{answers} FROM debits WHERE querier = ? ORDER BY rowid", (querier,)
        rows = conn.execute(sql, args).fetchall() if conn is not None else self._read(sql, args)
        entries = [self._entry(qid, eps, delta, answer) for qid, eps, delta, answer in rows]
        if conn is not None and self.head_file is not None:
            self._check_costs(querier, entries)
        return [Debited(budget(eps, delta), rho) for _, eps, delta, rho in entries]

    def _entry(self, query_id: str, epsilon: Any, delta: Any, answer_json: str | None) -> _Entry:
        rho = json.loads(answer_json).get(RHO_KEY) if self.method == "zcdp" and answer_json is not None else None
        return (query_id, epsilon, delta, rho)

    def _record(self, querier: str, entry: _Entry) -> None:
        self._charged.setdefault(querier, []).append(entry)

    def _check_costs(self, querier: str, found: list[_Entry]) -> None:
        """``found`` (the database's debits of ``querier``) must be the ones this ledger recorded."""
        known = self._charged.get(querier, [])
        if found == known:
            return
        for (qid, *got), (kid, *had) in zip(found, known, strict=False):
            if qid != kid:
                what = f"debit {kid!r} is not where it was charged (found {qid!r})"
                break
            if got != had:
                what = f"debit {qid!r} reads {_cost_text(got)} in the database, it was charged {_cost_text(had)}"
                break
        else:
            what = (f"debit {known[len(found)][0]!r} is gone" if len(found) < len(known)
                    else f"debit {found[len(known)][0]!r} was added to it")
        self._fail(DEBITS_CHANGED.format(path=self.path, querier=querier, what=what))

    def _compose(self, costs: list[Debited]) -> Budget:
        if self.method == "zcdp":
            return compose_zcdp([c.cost for c in costs], [c.rho for c in costs], slack=self.slack)
        return compose([c.cost for c in costs], method=self.method, slack=self.slack)

    def spent(self, querier: str) -> Budget:
        """What ``querier`` has spent: its debits composed with the ledger's method."""
        return self._compose(self._costs(None, querier))

    def total(self) -> dict[str, Budget]:
        """Spent budget of every querier with a budget row or a debit."""
        names = [r[0] for r in self._read("SELECT querier FROM budgets UNION SELECT querier FROM debits ORDER BY 1")]
        return {name: self.spent(name) for name in names}

    def charge(self, querier: str, query_id: str, cost: Budget, answer: Mapping[str, Any],
               *, request: str | None = None) -> dict[str, Any]:
        """Debit ``cost`` to ``querier`` and store ``answer`` under ``query_id``, or refuse.

        In one ``BEGIN IMMEDIATE`` transaction: if ``query_id`` is already
        recorded for this querier (and the same ``request``), nothing is
        debited and the stored answer is returned; otherwise the querier's
        budget is checked with ``within(compose(spent + [cost]), limit)`` and
        the debit is inserted together with the answer. Returns after the
        commit is on disk, with the answer now on record (release exactly that).

        Before the budget is read, the file is checked (:meth:`_check`): a
        debit deleted or a cap edited behind this ledger refuses the charge.

        Raises
        ------
        WireError
            ``budget-exceeded`` (no budget for this querier, or the cost does
            not fit: the detail names querier, limit, spent and cost), or
            ``invalid-query`` (the id belongs to another querier or query).
        LedgerTamperedError
            The file changed behind the ledger (a WireError too, ``internal-error``).
        """
        _check_id(querier, "querier")
        _check_id(query_id, "query_id")
        if not isinstance(cost, Budget):
            raise ConfigError(NOT_A_BUDGET.format(what="cost", value=cost))
        encoded = json.dumps(encode_payload(dict(answer)), separators=(",", ":"))
        with self._lock:  # the transaction and what this ledger then knows of it, as one step
            with self._transaction() as conn:
                stored = self._recorded(conn, querier, query_id, request)
                if stored is not None:
                    return stored
                self._check(conn)
                rows = conn.execute("SELECT epsilon, delta FROM budgets WHERE querier = ?", (querier,)).fetchall()
                if not rows:
                    raise WireError(BUDGET_EXCEEDED, NO_BUDGET.format(querier=querier))
                if rows[0][0] is not None:
                    limit = budget(*rows[0])
                    costs = self._costs(conn, querier)
                    total = self._compose(costs + [Debited(cost, answer.get(RHO_KEY))])
                    if limit.pure and not total.pure:
                        why = ("the cost has a delta" if not cost.pure
                               else f"{self.method} composition adds a slack delta'")
                        raise WireError(BUDGET_EXCEEDED,
                                        MIXED_COST.format(querier=querier, limit=limit, total=total, why=why))
                    if not within(total, limit):
                        raise WireError(BUDGET_EXCEEDED, OVER_BUDGET.format(
                            querier=querier, limit=limit, spent=self._compose(costs), n=len(costs), cost=cost,
                            method=self.method, total=total))
                count, tip = self._seen[:2]  # the tip _check just found (in memory: the one this ledger wrote)
                fields = (query_id, querier, float(cost.epsilon), float(cost.delta), encoded, time.time_ns(), request)
                link = chain_link(tip, *fields)
                rowid = conn.execute(f"INSERT INTO debits ({_DEBIT_FIELDS}, link) VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
                                     (*fields, link)).lastrowid
            self._seen = (count + 1, link, rowid or 0, query_id)  # committed
            if self.head_file is not None:
                self._record(querier, self._entry(query_id, fields[2], fields[3], encoded))
        self._anchor()
        recorded: dict[str, Any] = decode_payload(json.loads(encoded))
        return recorded

    # ------------------------------------------------------------------ answers on record
    def _recorded(self, conn: sqlite3.Connection, querier: str, query_id: str, request: str | None
                  ) -> dict[str, Any] | None:
        rows = conn.execute("SELECT querier, answer_json, request FROM debits WHERE query_id = ?",
                            (query_id,)).fetchall()
        if not rows:
            return None
        owner, answer_json, stored_request = rows[0]
        if owner != querier:
            raise WireError(INVALID_QUERY, ID_TAKEN.format(query_id=query_id))
        if request is not None and stored_request is not None and request != stored_request:
            raise WireError(INVALID_QUERY, ID_REUSED.format(query_id=query_id))
        answer: dict[str, Any] = decode_payload(json.loads(answer_json))
        return answer

    def recorded(self, querier: str, query_id: str, request: str | None = None) -> dict[str, Any] | None:
        """The stored answer of ``querier``'s query ``query_id`` (None if never charged).

        Raises :class:`WireError` (``invalid-query``) if the id was charged to
        another querier or, when both digests are known, for another request.
        """
        with self._lock:
            return self._recorded(self._conn, querier, query_id, request)

    def answer_for(self, query_id: str) -> dict[str, Any] | None:
        """The stored answer payload of ``query_id`` (arrays decoded), or None."""
        rows = self._read("SELECT answer_json FROM debits WHERE query_id = ?", (query_id,))
        return decode_payload(json.loads(rows[0][0])) if rows else None

    def debit(self, query_id: str) -> Debit | None:
        """The full record of ``query_id``, or None."""
        rows = self._read("SELECT query_id, querier, epsilon, delta, answer_json, created_ns, request "
                          "FROM debits WHERE query_id = ?", (query_id,))
        if not rows:
            return None
        qid, querier, eps, delta, answer_json, created, request = rows[0]
        return Debit(qid, querier, budget(eps, delta), decode_payload(json.loads(answer_json)), created, request)

    def entries(self) -> list[dict[str, Any]]:
        """Every debit in the order charged: query id, querier, epsilon, delta, metric, time (no answer values)."""
        rows = self._read("SELECT query_id, querier, epsilon, delta, answer_json, created_ns "
                          "FROM debits ORDER BY rowid")
        out = []
        for qid, querier, eps, delta, answer_json, created in rows:
            metric = json.loads(answer_json).get("metric")
            out.append({"query_id": qid, "querier": querier, "epsilon": eps, "delta": delta, "metric": metric,
                        "created_ns": created})
        return out

    def summary(self) -> dict[str, Any]:
        """Per-querier limit, spent and number of debits, for ``result.json`` (no answers, no timestamps).

        The file is checked first (:meth:`_check`): a summary never reports a cap or a spend changed behind
        the ledger (:class:`LedgerTamperedError`).
        """
        with self._transaction() as conn:
            self._check(conn)
            limits = {q: (None if e is None else {"epsilon": e, "delta": d}) for q, (e, d) in self._caps(conn).items()}
            counts = dict(conn.execute("SELECT querier, COUNT(*) FROM debits GROUP BY querier").fetchall())
            names = {r[0] for r in conn.execute("SELECT querier FROM budgets UNION SELECT querier FROM debits")}
            total = {name: self._compose(self._costs(conn, name)) for name in sorted({*names, *self._charged})}
        queriers = {}
        for name, spent in total.items():
            queriers[name] = {"limit": limits.get(name), "spent": {"epsilon": spent.epsilon, "delta": spent.delta},
                              "debits": int(counts.get(name, 0))}
        out: dict[str, Any] = {"composition": self.method, "queriers": queriers}
        if self.method != "sequential":
            out["slack"] = self.slack
        return out
