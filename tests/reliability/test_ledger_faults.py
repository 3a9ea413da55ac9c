"""Ledger faults: budgets survive the run folder; kills, concurrent runs, hostile names and edited ledgers.

The campaign (``-m reliability``) drives real ``parley run`` processes. A budgeted Laplace run
(1/256 per answer against 1.5, at the lowest CPU priority) is stopped at a chosen spend: the test
polls the run's ledger file read-only and, once it shows the spend, stops the process
(``SIGSTOP``), waits for the kernel to report it stopped and reads the committed spend again;
then it kills it (``SIGKILL``) or keeps it paused while a second run tries the folder. A run that
outruns the poll (its whole budget spent before the poll saw the target) is run again, so the
outcome never depends on timing. Every measured fault is then tried:

* re-running into the folder of a killed run (refused, spend kept; ``--fresh`` starts afresh),
* a second run into the folder of a running one (refused as busy, the first completes alone),
* ``--set name=../../victim`` and a study named the same, and output files that are symbolic
  links out of the folder (refused, the victim's files byte for byte as they were),
* the killed run's ledger edited: debits deleted, a debit edited, a debit deleted and the
  chain recomputed, copied without its ``-wal`` journal, copied without its head, emptied,
  truncated, deleted with its head left (each refused naming the file and what is wrong).

Each case is counted as tried and caught; the table is printed (``-s``). One case is tried
and is *not* caught, as docs/reliability.md says: an adversary who rewrites the database and
its head consistently. The tests outside the campaign run in the default run (in-process).
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import sqlite3
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

from parley import protocols
from parley.parties.compliance import account_of
from parley.parties.ledger import (
    CHAIN_REWRITTEN,
    DEBIT_EDITED,
    DEBITS_MISSING,
    GENESIS,
    HEAD_SUFFIX,
    NO_HEAD,
    NOT_A_LEDGER,
    Ledger,
    LedgerIntegrityError,
    chain_link,
    head_path,
)
from parley.parties.transcript import read_transcript, verify_transcript
from parley.protocols.budget import PureDP
from parley.protocols.errors import ConfigError
from parley.scenarios.run_folder import (
    CHARGED_IN_TRANSCRIPT,
    FOLDER_BUSY,
    LEDGER_IN_FOLDER,
    LOCK_FILE,
    OUTSIDE,
    LedgerInFolderError,
    RunFolderBusyError,
    RunFolderError,
    claim,
)
from parley.scenarios.runner import run
from parley.scenarios.spec import BAD_NAME, Scenario
from parley.scenarios.study import Study
from tests.ledger_world import NoisyProtocol

ROOT = Path(__file__).resolve().parents[2]
DC = "data-center"
LEDGER = "ledger.sqlite"
#: 1/256 per answer is exact in binary: 384 answers spend exactly the budget of 1.5.
COST, LIMIT, KILL_AT = 1 / 256, 1.5, 1.1
RUN = ["run", "adult-raw-single-query", "--set", "protocol.name=laplace", "--set", f"protocol.epsilon={COST}",
       "--set", f"budget.epsilon={LIMIT}", "--set", "backend=local", "--set", "attack.targets=400"]


def _fixed(template: str) -> list[str]:
    """Every fixed piece of a message template (between its fields), for matching a formatted message."""
    import string

    return [text.strip() for text, *_ in string.Formatter().parse(template) if text.strip()]


def _matches(template: str, text: str) -> bool:
    return all(piece in text for piece in _fixed(template))


# --------------------------------------------------------------------------- real processes
def _parley(*args: str, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "parley.scenarios.cli", *args], cwd=cwd, capture_output=True,
                          text=True, timeout=600, env={**os.environ, "PYTHONPATH": str(ROOT)})


_STARTED: list[subprocess.Popen] = []


def _start(out: Path, cwd: Path) -> subprocess.Popen:
    """A budgeted run in the background, at the lowest CPU priority (so the poll that stops it keeps up)."""
    return _track(subprocess.Popen([sys.executable, "-m", "parley.scenarios.cli", *RUN, "--out", str(out)], cwd=cwd,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env={**os.environ, "PYTHONPATH": str(ROOT)}, preexec_fn=lambda: os.nice(19)))


def _track(proc: subprocess.Popen) -> subprocess.Popen:
    _STARTED.append(proc)
    return proc


@pytest.fixture
def no_orphans() -> Iterator[None]:
    """Kill every run the test started that is still there (a stopped one included) when it ends."""
    yield
    while _STARTED:
        proc = _STARTED.pop()
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=120)


def _spent(path: Path) -> tuple[float, int]:
    """(epsilon spent, debits) read straight from a ledger file with SQLite, no parley code (0, 0: no table)."""
    conn = sqlite3.connect(path)
    try:
        if not conn.execute("SELECT 1 FROM sqlite_master WHERE name = 'debits'").fetchall():
            return 0.0, 0  # even the schema was only in the journal
        eps, n = conn.execute("SELECT COALESCE(SUM(epsilon), 0), COUNT(*) FROM debits").fetchone()
    finally:
        conn.close()
    return float(eps), int(n)


def _state(pid: int) -> str:
    """The process state letter from /proc (``T``: stopped)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]


def _stop_at(out: Path, proc: subprocess.Popen, target: float) -> float | None:
    """Stop (``SIGSTOP``) the run in ``out`` once its ledger shows ``target`` spent; the spend then, or None.

    Polls the ledger file read-only (a WAL reader never blocks the run). Once a read shows at least
    ``target``, the run is stopped and the test waits until the kernel reports it stopped, then reads
    the committed spend again: nothing more can be charged. None if the run had already spent its
    whole budget by then (it outran the poll on a loaded machine): the caller runs it again.
    """
    while not head_path(out / LEDGER).exists():  # the run has opened (and created) its ledger
        assert proc.poll() is None, f"the run ended before opening its ledger: {proc.communicate()[1][-2000:]}"
        time.sleep(0.01)
    conn = sqlite3.connect(f"file:{out / LEDGER}?mode=ro", uri=True)
    try:
        while conn.execute("SELECT COALESCE(SUM(epsilon), 0) FROM debits").fetchone()[0] < target:
            assert proc.poll() is None, f"the run ended before spending {target}: {proc.communicate()[1][-2000:]}"
            time.sleep(0.001)
        proc.send_signal(signal.SIGSTOP)
        while _state(proc.pid) != "T":
            time.sleep(0.001)
        spent = float(conn.execute("SELECT COALESCE(SUM(epsilon), 0) FROM debits").fetchone()[0])
    finally:
        conn.close()
    return spent if spent < LIMIT else None


def _started_and_stopped(out: Path, cwd: Path, target: float) -> tuple[subprocess.Popen, float, int]:
    """A run into ``out`` stopped at ``target`` spent or more (within the budget); (process, spend, attempts)."""
    for attempt in range(1, 6):
        shutil.rmtree(out, ignore_errors=True)
        proc = _start(out, cwd)
        spent = _stop_at(out, proc, target)
        if spent is not None:
            return proc, spent, attempt
        proc.kill()
        proc.wait(timeout=120)
    raise AssertionError(f"five runs outran the poll before it saw {target} spent")


def _digests(folder: Path) -> dict[str, str]:
    return {p.name: hashlib.sha256(p.read_bytes()).hexdigest() for p in sorted(folder.iterdir()) if p.is_file()}


class Tally:
    """Cases tried and caught, printed as a table at the end of the campaign."""

    def __init__(self) -> None:
        self.rows: list[tuple[str, str, bool]] = []

    def case(self, name: str, caught: bool, how: str) -> None:
        self.rows.append((name, how, caught))

    def report(self) -> str:
        lines = ["| case | outcome | caught |", "|---|---|---|"]
        lines += [f"| {name} | {how} | {'yes' if caught else 'no'} |" for name, how, caught in self.rows]
        caught = sum(c for *_, c in self.rows)
        return "\n".join(lines) + f"\n{len(self.rows)} cases tried, {caught} caught"


def _refused(proc: subprocess.CompletedProcess, template: str) -> bool:
    """Exit 2 with one ``parley: error:`` line carrying ``template``'s text, and no traceback."""
    lines = [line for line in proc.stderr.splitlines() if line.startswith("parley: error:")]
    return (proc.returncode == 2 and len(lines) == 1 and _matches(template, lines[0])
            and "Traceback" not in proc.stderr)


# --------------------------------------------------------------------------- the campaign
#: What each integrity message says, for the campaign's table.
LABELS = {DEBITS_MISSING: "fewer debits than the head records", DEBIT_EDITED: "a debit does not match its link",
          CHAIN_REWRITTEN: "the chain does not lead to the head", NO_HEAD: "debits without a head file",
          NOT_A_LEDGER: "not a parley ledger (malformed database)"}


def _tamper_cases(killed: Path) -> dict[str, tuple]:
    """name -> (how to damage a copy of the killed run's folder, message template expected)."""

    def sql(folder: Path, *statements: str) -> None:
        conn = sqlite3.connect(folder / LEDGER, isolation_level=None)
        for statement in statements:
            conn.execute(statement)
        conn.close()

    def recompute(folder: Path) -> None:  # the adversary who read parley's code redoes the chain
        conn = sqlite3.connect(folder / LEDGER, isolation_level=None)
        previous = GENESIS
        rows = conn.execute("SELECT rowid, query_id, querier, epsilon, delta, answer_json, created_ns, request "
                            "FROM debits ORDER BY rowid").fetchall()
        for rowid, *fields in rows:
            previous = chain_link(previous, *fields)
            conn.execute("UPDATE debits SET link = ? WHERE rowid = ?", (previous, rowid))
        conn.close()

    def without_wal(folder: Path) -> None:  # copy the database and its head, not the journal
        for side in ("-wal", "-shm"):
            (folder / (LEDGER + side)).unlink()

    def checkpoint_then_truncate(folder: Path) -> None:
        conn = sqlite3.connect(folder / LEDGER, isolation_level=None)
        conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        conn.close()
        size = (folder / LEDGER).stat().st_size
        with open(folder / LEDGER, "r+b") as fh:
            fh.truncate(size // 2)

    def emptied(folder: Path) -> None:
        without_wal(folder)
        (folder / LEDGER).write_bytes(b"")

    def deleted(folder: Path) -> None:
        without_wal(folder)
        (folder / LEDGER).unlink()

    return {
        "last 10 debits deleted": (lambda f: sql(f, "DELETE FROM debits WHERE rowid IN "
                                                    "(SELECT rowid FROM debits ORDER BY rowid DESC LIMIT 10)"),
                                   DEBITS_MISSING),
        "every debit deleted": (lambda f: sql(f, "DELETE FROM debits"), DEBITS_MISSING),
        "a debit's epsilon edited to 0": (lambda f: sql(f, "UPDATE debits SET epsilon = 0 WHERE rowid = 5"),
                                          DEBIT_EDITED),
        "a middle debit deleted": (lambda f: sql(f, "DELETE FROM debits WHERE rowid = 5"), DEBIT_EDITED),
        "debits deleted, chain recomputed": (lambda f: (sql(f, "DELETE FROM debits WHERE rowid % 2 = 0"),
                                                        recompute(f)), DEBITS_MISSING),
        "epsilons lowered, chain recomputed": (lambda f: (sql(f, "UPDATE debits SET epsilon = 0 WHERE rowid > 2"),
                                                          recompute(f)), CHAIN_REWRITTEN),
        "copied without its -wal journal": (without_wal, DEBITS_MISSING),
        "copied without its head": (lambda f: (f / (LEDGER + HEAD_SUFFIX)).unlink(), NO_HEAD),
        "emptied to 0 bytes": (emptied, DEBITS_MISSING),
        "truncated to half (after a checkpoint)": (checkpoint_then_truncate, NOT_A_LEDGER),
        "deleted, head left": (deleted, DEBITS_MISSING),
    }


@pytest.mark.reliability
@pytest.mark.slow
def test_ledger_fault_campaign(tmp_path, no_orphans):
    tally = Tally()
    work = tmp_path / "work"
    work.mkdir()

    # 1. kill -9 at a chosen spend, then re-run into the same folder
    killed = tmp_path / "killed"
    proc, at_kill, attempts = _started_and_stopped(killed, work, KILL_AT)
    proc.kill()  # SIGKILL, to a run stopped with its spend read
    proc.wait(timeout=120)
    assert proc.returncode == -signal.SIGKILL
    snapshot = tmp_path / "killed-copy"
    shutil.copytree(killed, snapshot)  # as the kill left them, -wal included, for the tamper cases
    before = _spent(killed / LEDGER)
    assert before[0] == at_kill >= KILL_AT
    wal_debits = before[1]
    again = _parley(*RUN, "--out", str(killed), cwd=work)
    after = _spent(killed / LEDGER)
    caught = _refused(again, LEDGER_IN_FOLDER) and after == before and f"epsilon={at_kill:.6g}" in again.stderr
    tally.case(f"re-run into the folder of a run killed with kill -9 at epsilon {at_kill:.4g} of {LIMIT} "
               f"(attempt {attempts})", caught,
               "refused: earlier ledger named with its spend, left as it was, lock not stale")
    assert caught, again.stderr

    fresh = _parley(*RUN, "--out", str(killed), "--fresh", cwd=work)
    assert fresh.returncode == 0, fresh.stderr
    record = json.loads((killed / "result.json").read_text())
    spent_fresh = record["metrics"]["epsilon_spent"]
    caught = spent_fresh <= LIMIT and _spent(killed / LEDGER)[0] == spent_fresh
    tally.case("the same re-run with --fresh", caught, f"runs on a new ledger (spent {spent_fresh} of {LIMIT})")
    assert caught

    # 2. a second run into the folder of a running one
    shared = tmp_path / "shared"
    first, at_pause, _ = _started_and_stopped(shared, work, 0.5)  # stopped mid-run, holding its folder
    try:
        second = _parley(*RUN, "--out", str(shared), cwd=work)
    finally:
        first.send_signal(signal.SIGCONT)
    out, err = first.communicate(timeout=600)
    assert first.returncode == 0, err
    record = json.loads((shared / "result.json").read_text())
    eps, debits = _spent(shared / LEDGER)
    answers = [env for env in read_transcript(shared / "transcript.jsonl", verify=False) if env.kind == "metric-answer"]
    verify_transcript(shared / "transcript.jsonl")
    caught = (_refused(second, FOLDER_BUSY) and f"process {first.pid}" in second.stderr
              and eps == record["metrics"]["epsilon_spent"] <= LIMIT and debits == len(answers))
    tally.case("a second run into the folder of a running one", caught,
               f"refused as busy (holder pid named); the first completed alone: {debits} debits, "
               f"{len(answers)} answers in its transcript, epsilon {eps} <= {LIMIT}")
    assert caught, second.stderr

    # 3. names and paths that leave the folder
    nested = work / "a"
    nested.mkdir()
    victim = work / "victim"  # where runs/../../victim lands from work/a
    victim.mkdir()
    for name in ("report.md", "result.json", LEDGER, "transcript.jsonl"):
        (victim / name).write_text(f"the victim's own {name}\n")
    kept = _digests(victim)
    assert (nested / "runs" / "../../victim").resolve() == victim.resolve()
    hostile = _parley(*RUN, "--set", "name=../../victim", cwd=nested)  # default out: runs/<name>
    caught = _refused(hostile, BAD_NAME) and _digests(victim) == kept
    tally.case("--set name=../../victim (default --out runs/<name>)", caught, "refused; victim's files unchanged")
    assert caught, hostile.stderr
    study_file = work / "hostile-study.toml"
    study_file.write_text('name = "../../victim"\nscenario = "adult-raw-single-query"\n')
    hostile = _parley("study", str(study_file), cwd=nested)
    caught = _refused(hostile, BAD_NAME) and _digests(victim) == kept
    tally.case("a study named ../../victim", caught, "refused; victim's files unchanged")
    assert caught, hostile.stderr
    for name in ("result.json", LEDGER, "transcript.jsonl"):
        linked = tmp_path / f"linked-{name}"
        linked.mkdir()
        (linked / name).symlink_to(victim / name)
        hostile = _parley(*RUN, "--out", str(linked), cwd=work)
        caught = _refused(hostile, OUTSIDE) and _digests(victim) == kept and (linked / name).is_symlink()
        tally.case(f"{name} in the run folder a symbolic link to another folder", caught,
                   "refused; victim's files unchanged")
        assert caught, hostile.stderr

    # 4. the killed run's ledger damaged, then re-run into
    for name, (damage, template) in _tamper_cases(snapshot).items():
        folder = tmp_path / ("tampered-" + hashlib.sha256(name.encode()).hexdigest()[:8])
        shutil.copytree(snapshot, folder)
        damage(folder)
        if name == "copied without its -wal journal":  # the journal did hold committed debits
            assert _spent(folder / LEDGER)[1] < wal_debits
        hostile = _parley(*RUN, "--out", str(folder), cwd=work)
        caught = _refused(hostile, template) and str(folder / LEDGER) in hostile.stderr
        tally.case(f"ledger {name}", caught, f"refused: {LABELS[template]}, naming the file")
        assert caught, (name, hostile.stderr)

    # 5. the documented limit: database and head rewritten together
    folder = tmp_path / "rewritten"
    shutil.copytree(snapshot, folder)
    _tamper_cases(snapshot)["debits deleted, chain recomputed"][0](folder)
    conn = sqlite3.connect(folder / LEDGER)
    n, tip = conn.execute("SELECT COUNT(*), (SELECT link FROM debits ORDER BY rowid DESC LIMIT 1) "
                          "FROM debits").fetchone()
    conn.close()
    head_path(folder / LEDGER).write_text(json.dumps({"format": "parley-ledger-head/1", "debits": n, "head": tip}))
    hostile = _parley(*RUN, "--out", str(folder), cwd=work)
    tally.case("ledger and head rewritten together by someone who read the code", False,
               "not caught (documented: the head is not keyed); the folder is still refused as holding a ledger, "
               f"with the lowered spend {_spent(folder / LEDGER)[0]:.4g}")
    assert _refused(hostile, LEDGER_IN_FOLDER), hostile.stderr

    print("\n" + tally.report())
    assert sum(c for *_, c in tally.rows) == len(tally.rows) - 1


# --------------------------------------------------------------------------- fast, in-process (default run)
def _answer(i: int) -> dict:
    return {"metric": "sp", "query_id": f"q{i}", "values": np.array([0.1 * i])}


def _ledger_with_debits(path: Path, n: int = 6) -> None:
    with Ledger(path) as led:
        led.set_budget(DC, PureDP(epsilon=10.0))
        for i in range(n):
            led.charge(DC, f"q{i}", PureDP(epsilon=0.5), _answer(i))


def _edit(path: Path, statement: str) -> None:
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute(statement)
    conn.close()


@pytest.mark.parametrize(("damage", "template"), [
    ("DELETE FROM debits WHERE rowid = (SELECT MAX(rowid) FROM debits)", DEBITS_MISSING),
    ("UPDATE debits SET epsilon = 0.25 WHERE rowid = 2", DEBIT_EDITED),
    ("UPDATE debits SET answer_json = replace(answer_json, 'sp', 'eo') WHERE rowid = 3", DEBIT_EDITED),
    ("DELETE FROM debits WHERE rowid = 2", DEBIT_EDITED),
])
def test_an_edited_ledger_is_named_on_open(tmp_path, damage, template):
    path = tmp_path / LEDGER
    _ledger_with_debits(path)
    _edit(path, damage)
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(path)
    assert _matches(template, str(info.value)) and str(path) in str(info.value)


def test_a_debit_moved_between_purpose_accounts_is_named_on_open(tmp_path):
    """Charging exploration to the audit account after the fact (or back) breaks the chain: named on open."""
    path = tmp_path / LEDGER
    audit, explore = account_of(DC, "audit"), account_of(DC, "exploratory")
    with Ledger(path) as led:
        led.set_budget(audit, PureDP(epsilon=1.0))
        led.set_budget(explore, PureDP(epsilon=1.0))
        for i in range(4):
            led.charge(explore if i % 2 else audit, f"q{i}", PureDP(epsilon=0.5), _answer(i))
    with Ledger(path) as led:  # as charged, it verifies; each account is full
        assert led.spent(audit) == led.spent(explore) == PureDP(epsilon=1.0)
    _edit(path, f"UPDATE debits SET querier = '{audit}' WHERE rowid = 2")  # exploration's debit moved to audit
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(path)
    assert _matches(DEBIT_EDITED, str(info.value)) and "query id 'q1'" in str(info.value)


def test_a_recomputed_chain_does_not_meet_the_head_and_a_lagging_head_is_accepted(tmp_path):
    path = tmp_path / LEDGER
    _ledger_with_debits(path)
    head = head_path(path).read_text()
    _ledger_with_debits(path, 0)  # reopen: verifies
    conn = sqlite3.connect(path, isolation_level=None)
    conn.execute("UPDATE debits SET epsilon = 0 WHERE rowid <= 3")  # spending lowered, every link redone
    previous = GENESIS
    for rowid, *fields in conn.execute("SELECT rowid, query_id, querier, epsilon, delta, answer_json, created_ns, "
                                       "request FROM debits ORDER BY rowid").fetchall():
        previous = chain_link(previous, *fields)
        conn.execute("UPDATE debits SET link = ? WHERE rowid = ?", (previous, rowid))
    conn.close()
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(path)
    assert _matches(CHAIN_REWRITTEN, str(info.value))
    # A head one debit behind (a process killed between its commit and its head write) is not an alarm.
    other = tmp_path / "lag.sqlite"
    _ledger_with_debits(other, 3)
    behind = head_path(other).read_text()
    with Ledger(other) as led:
        led.charge(DC, "q9", PureDP(epsilon=0.5), _answer(9))
    head_path(other).write_text(behind)
    with Ledger(other) as led:
        assert led.spent(DC) == PureDP(epsilon=2.0)
    assert head != behind


def test_a_ledger_without_its_head_or_journal_is_named(tmp_path):
    path = tmp_path / LEDGER
    led = Ledger(path)
    led.set_budget(DC, PureDP(epsilon=10.0))
    for i in range(4):
        led.charge(DC, f"q{i}", PureDP(epsilon=0.5), _answer(i))
    # copied while open: the debits are in the -wal journal, not yet in the database file
    copy = tmp_path / "copy"
    copy.mkdir()
    shutil.copy(path, copy / LEDGER)
    shutil.copy(head_path(path), head_path(copy / LEDGER))
    led.close()
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(copy / LEDGER)
    assert _matches(DEBITS_MISSING, str(info.value))
    head_path(path).unlink()
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(path)
    assert _matches(NO_HEAD, str(info.value))


def test_a_version_1_ledger_is_chained_as_found(tmp_path):
    path = tmp_path / LEDGER
    conn = sqlite3.connect(path, isolation_level=None)
    conn.executescript("""
        CREATE TABLE budgets (querier TEXT PRIMARY KEY, epsilon REAL, delta REAL);
        CREATE TABLE debits (query_id TEXT PRIMARY KEY, querier TEXT NOT NULL, epsilon REAL NOT NULL,
                             delta REAL NOT NULL, answer_json TEXT NOT NULL, created_ns INTEGER NOT NULL, request TEXT);
        INSERT INTO budgets VALUES ('data-center', 1.0, 0.0);
        INSERT INTO debits VALUES ('q0', 'data-center', 0.5, 0.0, '{"metric":"sp"}', 1, NULL);
        PRAGMA user_version = 1;
    """)
    conn.close()
    with Ledger(path) as led:
        assert led.spent(DC) == PureDP(epsilon=0.5) and led.head()["debits"] == 1
    _edit(path, "DELETE FROM debits")
    with pytest.raises(LedgerIntegrityError):
        Ledger(path)


def test_a_second_claim_on_a_folder_is_refused_while_the_first_holds_it(tmp_path):
    with claim(tmp_path, LEDGER, ()):
        assert (tmp_path / LOCK_FILE).read_text().strip() == str(os.getpid())
        errors: list[Exception] = []

        def second() -> None:
            try:
                with claim(tmp_path, LEDGER, ()):
                    pass
            except RunFolderBusyError as exc:
                errors.append(exc)

        thread = threading.Thread(target=second)
        thread.start()
        thread.join(timeout=60)
        assert len(errors) == 1 and _matches(FOLDER_BUSY, str(errors[0])) and f"process {os.getpid()}" in str(errors[0])
    with claim(tmp_path, LEDGER, ()):  # released when the first run ended
        pass


def test_a_folder_with_an_earlier_ledger_is_refused_unless_fresh(tmp_path):
    _ledger_with_debits(tmp_path / LEDGER, 3)
    with pytest.raises(LedgerInFolderError) as info, claim(tmp_path, LEDGER, ()):
        pass
    assert _matches(LEDGER_IN_FOLDER, str(info.value)) and "epsilon=1.5" in str(info.value)
    assert "--fresh" in str(info.value) and "--out" in str(info.value)
    assert _spent(tmp_path / LEDGER) == (1.5, 3)
    with claim(tmp_path, LEDGER, (), fresh=True):
        assert not (tmp_path / LEDGER).exists() and not head_path(tmp_path / LEDGER).exists()
    # a ledger without debits holds nothing to lose: replaced without asking
    with Ledger(tmp_path / LEDGER) as led:
        led.set_budget(DC, PureDP(epsilon=1.0))
    with claim(tmp_path, LEDGER, ()):
        assert not (tmp_path / LEDGER).exists()


SMALL = {"dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 500},
         "attack": {"name": "single-query", "targets": 5}, "backend": "local"}


def test_deleting_the_ledger_files_does_not_reset_the_folders_budget(tmp_path, monkeypatch):
    """The four ledger.sqlite* files deleted: the transcript's charged answers refuse a re-run; --fresh starts anew."""
    monkeypatch.setitem(protocols.PROTOCOLS, NoisyProtocol.name, NoisyProtocol)
    scenario = Scenario.from_dict({**SMALL, "protocol": {"name": "test-noisy", "epsilon": 0.5, "scale": 0.0}})
    spent = run(scenario, out=tmp_path).metrics["epsilon_spent"]
    assert spent > 0
    first = next(i for i, env in enumerate(read_transcript(tmp_path / "transcript.jsonl", verify=False), start=2)
                 if env.sender == "compliance" and env.kind == "metric-answer")  # line 1 is the keyring
    kept = _digests(tmp_path)
    for side in ("", "-wal", "-shm", HEAD_SUFFIX):
        (tmp_path / (LEDGER + side)).unlink(missing_ok=True)
    assert not list(tmp_path.glob(LEDGER + "*"))
    with pytest.raises(LedgerInFolderError) as info:
        run(scenario, out=tmp_path)
    assert str(info.value) == LEDGER_IN_FOLDER.format(path=tmp_path, spent=CHARGED_IN_TRANSCRIPT.format(
        transcript="transcript.jsonl", recipient=DC, protocol=NoisyProtocol.name, line=first))
    assert _digests(tmp_path) == {k: v for k, v in kept.items() if not k.startswith(LEDGER)}  # nothing overwritten
    # an empty ledger put back in their place changes nothing: the transcript still tells
    Ledger(tmp_path / LEDGER).close()
    with pytest.raises(LedgerInFolderError, match="re-run with --fresh"):
        run(scenario, out=tmp_path)
    again = run(scenario, out=tmp_path, fresh=True)  # the way out, asked for
    assert again.metrics["epsilon_spent"] == spent and _spent(tmp_path / LEDGER)[0] == spent
    # a protocol that charges nothing leaves nothing to refuse: its folder re-runs as before
    raw = Scenario.from_dict({**SMALL, "protocol": {"name": "raw"}})
    run(raw, out=tmp_path / "raw")
    run(raw, out=tmp_path / "raw")


def test_outputs_that_resolve_outside_the_folder_are_refused(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "result.json").write_text("the victim's\n")
    run_dir = tmp_path / "run"
    run_dir.mkdir()
    (run_dir / "result.json").symlink_to(victim / "result.json")
    with pytest.raises(RunFolderError) as info, claim(run_dir, LEDGER, ("result.json",)):
        pass
    assert _matches(OUTSIDE, str(info.value))
    assert (victim / "result.json").read_text() == "the victim's\n"


@pytest.mark.parametrize("name", ["../../victim", "a/b", "/etc", ".hidden", "..", "", "x" * 101, "a\\b"])
def test_unsafe_scenario_and_study_names_are_refused(name):
    base = {"dataset": {"name": "synthetic", "audit_size": 100, "minority": 20}, "protocol": {"name": "raw"},
            "attack": {"name": "single-query", "targets": 2}}
    with pytest.raises(ConfigError) as info:
        Scenario.from_dict({**base, "name": name})
    assert str(info.value) == BAD_NAME.format(name=name)
    with pytest.raises(ConfigError, match="name must be"):
        Study.from_dict({"name": name, "scenario": base})
    assert Scenario.from_dict({**base, "name": "ok-name_1.2"}).name == "ok-name_1.2"
