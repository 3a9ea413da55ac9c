"""The privacy ledger.

Budgets enforced, answers idempotent by query id, durable across crashes, safe under concurrency.
"""

from __future__ import annotations

import json
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from parley import protocols
from parley.parties import wire
from parley.parties.compliance import DECLARED_NONE, UNDECLARED, UNKNOWN_PURPOSE, Compliance, account_of
from parley.parties.ledger import ADVANCED_NEEDS_DELTA, ID_REUSED, ID_TAKEN, NO_BUDGET, OVER_BUDGET, Ledger
from parley.parties.network import LocalDeployment
from parley.parties.party import REFUSAL, check_reply
from parley.parties.transcript import read_transcript
from parley.protocols.base import AuditSet
from parley.protocols.budget import ApproxDP, PureDP, compose
from parley.protocols.errors import ConfigError, WireError
from parley.protocols.metrics import statistical_parity_difference
from parley.scenarios.run_folder import LedgerInFolderError
from parley.scenarios.runner import LEDGER_FILE, run
from parley.scenarios.spec import BAD_PURPOSE, BUDGET_NEEDS_CAP, BUDGET_TWO_POLICIES, NO_AUDIT_PURPOSE, Scenario
from tests.fixed_secrets import party_secret
from tests.ledger_world import NoisyProtocol, noisy
from tests.party_world import query

ROOT = Path(__file__).resolve().parents[3]
DC = "data-center"


def _answer(values, query_id="q", metric="sp") -> dict:
    return {"metric": metric, "query_id": query_id, "values": np.asarray(values, dtype=np.float64), "epsilon": 0.25}


@pytest.fixture
def ledger(tmp_path) -> Ledger:
    with Ledger(tmp_path / "ledger.sqlite") as led:
        yield led


# --------------------------------------------------------------------------- file and pragmas
def test_schema_and_durability_pragmas(ledger, tmp_path):
    assert ledger.journal_mode == "wal"
    assert ledger._conn.execute("PRAGMA synchronous").fetchone()[0] == 2  # FULL
    raw = sqlite3.connect(tmp_path / "ledger.sqlite")
    columns = {t: [r[1] for r in raw.execute(f"PRAGMA table_info({t})")] for t in ("budgets", "debits")}
    assert columns["budgets"] == ["querier", "epsilon", "delta"]
    assert columns["debits"][:6] == ["query_id", "querier", "epsilon", "delta", "answer_json", "created_ns"]
    assert [r[5] for r in raw.execute("PRAGMA table_info(debits)") if r[1] == "query_id"] == [1]  # the primary key
    assert raw.execute("PRAGMA journal_mode").fetchone()[0] == "wal"  # stored in the file for every opener
    raw.close()


def test_a_file_that_is_not_a_ledger_is_named(tmp_path):
    bogus = tmp_path / "notes.sqlite"
    bogus.write_bytes(b"this is not a database at all, " * 100)
    with pytest.raises(ConfigError, match="not a parley ledger"):
        Ledger(bogus)


@pytest.mark.parametrize(("kwargs", "message"), [
    ({"method": "parallel"}, "composition must be 'sequential', 'advanced' or 'zcdp', got 'parallel'"),
    ({"slack": 0.0}, "slack (delta' of advanced composition) must be in (0, 1), got 0.0"),
])
def test_bad_settings_are_named(tmp_path, kwargs, message):
    with pytest.raises(ConfigError) as exc:
        Ledger(tmp_path / "l.sqlite", **kwargs)
    assert str(exc.value) == message


# --------------------------------------------------------------------------- enforcement
def test_budget_is_enforced_and_the_refusal_names_everything(ledger):
    ledger.set_budget(DC, PureDP(epsilon=1.0))
    for i in range(4):
        ledger.charge(DC, f"q{i}", PureDP(epsilon=0.25), _answer([0.1 * i], f"q{i}"))
    with pytest.raises(WireError) as exc:
        ledger.charge(DC, "q4", PureDP(epsilon=0.25), _answer([0.5], "q4"))
    assert exc.value.reason == wire.BUDGET_EXCEEDED == "budget-exceeded"
    assert wire.BUDGET_EXCEEDED in wire.REFUSAL_REASONS
    detail = exc.value.detail
    assert detail.startswith("querier 'data-center' would exceed its budget")
    for part in ("limit (epsilon=1, delta=0)", "spent (epsilon=1, delta=0) over 4 answers",
                 "this query costs (epsilon=0.25, delta=0)", "total (epsilon=1.25, delta=0)"):
        assert part in detail, part
    assert ledger.answer_for("q4") is None and len(ledger.entries()) == 4  # a refusal debits nothing
    assert ledger.spent(DC) == PureDP(epsilon=1.0)


def test_a_querier_without_a_budget_is_refused(ledger):
    with pytest.raises(WireError) as exc:
        ledger.charge("stranger", "q", PureDP(epsilon=0.01), _answer([0.0]))
    assert exc.value.reason == wire.BUDGET_EXCEEDED
    assert exc.value.detail == NO_BUDGET.format(querier="stranger")
    assert "no budget for querier 'stranger'" in exc.value.detail
    assert ledger.entries() == []


def test_an_uncapped_querier_is_recorded_not_limited(ledger):
    ledger.set_budget(DC, None)
    for i in range(50):
        ledger.charge(DC, f"q{i}", PureDP(epsilon=1.0), _answer([i], f"q{i}"))
    assert ledger.spent(DC) == PureDP(epsilon=50.0) and ledger.budget_of(DC) is None
    assert ledger.summary()["queriers"][DC] == {"limit": None, "spent": {"epsilon": 50.0, "delta": 0.0}, "debits": 50}


def test_a_pure_budget_cannot_pay_a_delta(ledger):
    ledger.set_budget(DC, PureDP(epsilon=10.0))
    with pytest.raises(WireError) as exc:
        ledger.charge(DC, "q", ApproxDP(epsilon=0.1, delta=1e-6), _answer([0.0]))
    assert exc.value.reason == wire.BUDGET_EXCEEDED and "pure epsilon budget" in exc.value.detail
    assert "give the budget a delta" in exc.value.detail


def test_approximate_budgets_cap_delta_too(ledger):
    ledger.set_budget(DC, ApproxDP(epsilon=10.0, delta=1e-5))
    for i in range(5):
        ledger.charge(DC, f"q{i}", ApproxDP(epsilon=0.1, delta=2e-6), _answer([0.0], f"q{i}"))
    with pytest.raises(WireError, match="budget-exceeded"):  # epsilon is plentiful, delta is not
        ledger.charge(DC, "q5", ApproxDP(epsilon=0.1, delta=2e-6), _answer([0.0], "q5"))
    assert ledger.spent(DC).delta == pytest.approx(1e-5)


def test_a_querier_cannot_spend_another_queriers_budget(ledger):
    ledger.set_budget("alice", PureDP(epsilon=1.0))
    ledger.set_budget("bob", PureDP(epsilon=0.5))
    for i in range(4):
        ledger.charge("alice", f"a{i}", PureDP(epsilon=0.25), _answer([i], f"a{i}"))
    with pytest.raises(WireError, match="querier 'alice' would exceed"):
        ledger.charge("alice", "a4", PureDP(epsilon=0.25), _answer([0], "a4"))
    ledger.charge("bob", "b0", PureDP(epsilon=0.5), _answer([0], "b0"))  # alice's spending is not bob's
    with pytest.raises(WireError, match="querier 'bob' would exceed"):
        ledger.charge("bob", "b1", PureDP(epsilon=0.25), _answer([0], "b1"))
    assert ledger.total() == {"alice": PureDP(epsilon=1.0), "bob": PureDP(epsilon=0.5)}
    # ... nor collect another querier's answer by naming its query id
    with pytest.raises(WireError) as exc:
        ledger.charge("bob", "a0", PureDP(epsilon=0.0), _answer([7], "a0"))
    assert exc.value.reason == wire.INVALID_QUERY and exc.value.detail == ID_TAKEN.format(query_id="a0")
    with pytest.raises(WireError, match="already taken by another querier"):
        ledger.recorded("bob", "a0")


def test_advanced_composition_admits_more_queries_than_sequential_at_the_same_limit(tmp_path):
    limit, cost = ApproxDP(epsilon=1.0, delta=1e-5), PureDP(epsilon=0.01)
    admitted = {}
    for method in ("sequential", "advanced"):
        with Ledger(tmp_path / f"{method}.sqlite", method=method) as led:
            led.set_budget(DC, limit)
            n = 0
            while True:
                try:
                    led.charge(DC, f"q{n}", cost, _answer([0.0], f"q{n}"))
                except WireError:
                    break
                n += 1
            admitted[method] = n
            spent = led.spent(DC)
            assert spent == compose([cost] * n, method=method) and spent.epsilon <= 1.0 + 1e-9
    assert admitted["sequential"] == 100
    # sqrt(2 ln(1/1e-6) k) 0.01 + k 0.01 (e^0.01 - 1) <= 1  <=>  k <= 337 (k = 338 gives 1.00037)
    assert admitted["advanced"] == 337


def test_advanced_composition_needs_a_budget_that_can_pay_its_slack(tmp_path):
    with Ledger(tmp_path / "l.sqlite", method="advanced") as led, pytest.raises(ConfigError) as exc:
        led.set_budget(DC, PureDP(epsilon=1.0))
    assert str(exc.value) == ADVANCED_NEEDS_DELTA.format(slack=1e-6, querier=DC, delta=0.0)


# --------------------------------------------------------------------------- idempotent answers
def test_a_retried_query_id_gets_the_stored_answer_and_no_second_debit(ledger):
    ledger.set_budget(DC, PureDP(epsilon=1.0))
    first = _answer(np.random.default_rng(1).normal(size=3), "q1")
    stored = ledger.charge(DC, "q1", PureDP(epsilon=0.25), first, request="digest-1")
    fresh_noise = _answer(np.random.default_rng(2).normal(size=3), "q1")
    again = ledger.charge(DC, "q1", PureDP(epsilon=0.25), fresh_noise, request="digest-1")
    for got in (stored, again, ledger.answer_for("q1"), ledger.recorded(DC, "q1", "digest-1")):
        assert got["values"].tobytes() == first["values"].tobytes()  # bit for bit, not merely close
        assert wire.payload_digest(got) == wire.payload_digest(first)  # same payload, same signed digest
    assert len(ledger.entries()) == 1 and ledger.spent(DC) == PureDP(epsilon=0.25)
    with pytest.raises(WireError) as exc:  # the same id for another query is not a retry
        ledger.charge(DC, "q1", PureDP(epsilon=0.25), fresh_noise, request="digest-2")
    assert exc.value.reason == wire.INVALID_QUERY and exc.value.detail == ID_REUSED.format(query_id="q1")
    assert ledger.recorded(DC, "never") is None and ledger.answer_for("never") is None


def test_entries_and_summary_hold_no_answer_values(ledger):
    ledger.set_budget(DC, PureDP(epsilon=2.0))
    ledger.charge(DC, "q1", PureDP(epsilon=0.5), _answer([0.123456789], "q1"))
    ledger.charge(DC, "q2", PureDP(epsilon=0.25), _answer([0.987654321], "q2", metric="eo"))
    entries = ledger.entries()
    assert [(e["query_id"], e["querier"], e["epsilon"], e["delta"], e["metric"]) for e in entries] == [
        ("q1", DC, 0.5, 0.0, "sp"), ("q2", DC, 0.25, 0.0, "eo")]
    assert all(isinstance(e["created_ns"], int) for e in entries)
    summary = ledger.summary()
    assert summary == {"composition": "sequential", "queriers": {
        DC: {"limit": {"epsilon": 2.0, "delta": 0.0}, "spent": {"epsilon": 0.75, "delta": 0.0}, "debits": 2}}}
    text = json.dumps([entries, summary])
    assert "0.123456789" not in text and "values" not in text


# --------------------------------------------------------------------------- durability
def test_budgets_and_debits_survive_an_object_dropped_without_close(tmp_path):
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    led.set_budget(DC, PureDP(epsilon=1.0))
    answer = _answer([0.31], "q1")
    led.charge(DC, "q1", PureDP(epsilon=0.75), answer)
    del led  # no close(): only what was committed survives
    reopened = Ledger(path)
    assert reopened.budget_of(DC) == PureDP(epsilon=1.0)  # the file's budget, without set_budget
    assert reopened.spent(DC) == PureDP(epsilon=0.75)
    assert reopened.answer_for("q1")["values"].tobytes() == answer["values"].tobytes()
    with pytest.raises(WireError, match="budget-exceeded"):
        reopened.charge(DC, "q2", PureDP(epsilon=0.5), _answer([0.0], "q2"))
    reopened.set_budget(DC, PureDP(epsilon=1.0))  # idempotent
    assert reopened.total() == {DC: PureDP(epsilon=0.75)}
    reopened.close()


def test_a_debit_survives_the_process_being_killed(tmp_path):
    """SIGKILL right after charge() returns: no atexit, no close, no flush; the reopened file has the debit."""
    path = tmp_path / "ledger.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        from parley.parties.ledger import Ledger
        from parley.protocols.budget import PureDP
        led = Ledger({str(path)!r})
        led.set_budget("data-center", PureDP(epsilon=1.0))
        led.charge("data-center", "q1", PureDP(epsilon=0.5), {{"query_id": "q1", "values": np.array([0.25, 0.5])}})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with Ledger(path) as led:
        assert led.spent(DC) == PureDP(epsilon=0.5)
        np.testing.assert_array_equal(led.answer_for("q1")["values"], [0.25, 0.5])


# --------------------------------------------------------------------------- concurrency
LIMIT = PureDP(epsilon=2.0)
COST = PureDP(epsilon=1 / 128)  # exact in binary: exactly 256 charges fit


def _charge_many(path: Path, prefix: str, n: int, admitted: list) -> None:
    led = Ledger(path)
    try:
        for i in range(n):
            try:
                led.charge(DC, f"{prefix}-{i}", COST, _answer([float(i)], f"{prefix}-{i}"))
                admitted.append(f"{prefix}-{i}")
            except WireError as exc:
                assert exc.reason == wire.BUDGET_EXCEEDED
    finally:
        led.close()


def _check_concurrent_outcome(path: Path, admitted: list[str]) -> None:
    with Ledger(path) as led:
        ids = [e["query_id"] for e in led.entries()]
        assert sorted(ids) == sorted(admitted)  # what each writer was told it got is exactly what is on record
        assert len(ids) == 256  # the budget was used up, and not one charge beyond it
        assert led.spent(DC) == LIMIT
        assert led.spent(DC).epsilon == sum(e["epsilon"] for e in led.entries())
        assert {i.split("-")[0] for i in ids} == {"a", "b"}  # both writers got in


def test_two_ledgers_in_threads_never_overspend(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.set_budget(DC, LIMIT)
    admitted: list[str] = []
    threads = [threading.Thread(target=_charge_many, args=(path, p, 200, admitted)) for p in ("a", "b")]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert not any(t.is_alive() for t in threads)
    _check_concurrent_outcome(path, admitted)


def test_two_processes_never_overspend(tmp_path):
    path, go = tmp_path / "ledger.sqlite", tmp_path / "go"
    with Ledger(path) as led:
        led.set_budget(DC, LIMIT)
    script = textwrap.dedent(f"""
        import sys, time
        from pathlib import Path
        from tests.unit.parties.test_ledger import _charge_many
        while not Path({str(go)!r}).exists():
            time.sleep(0.01)
        admitted = []
        _charge_many(Path({str(path)!r}), sys.argv[1], 200, admitted)
        print("\\n".join(admitted))
    """)
    procs = [subprocess.Popen([sys.executable, "-c", script, p], cwd=ROOT, stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, text=True) for p in ("a", "b")]
    go.touch()
    admitted = []
    for proc in procs:
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, err
        admitted += out.split()
    _check_concurrent_outcome(path, admitted)


# --------------------------------------------------------------------------- the compliance party
def _compliance(identities, keyring, audit_arrays, path, budgets=None, protocol=None, seed=0, slot="compliance",
                purposes=None):
    a, y = audit_arrays
    world = LocalDeployment()
    world.add(slot, Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), protocol or noisy(0.25),
              [DC], party_secret(seed), ledger_path=path, budgets=budgets, purposes=purposes)
    return world


def _ask(world, identities, keyring, query_id, H=None, purpose=None):
    H = np.full((1, 40), 0.5) if H is None else H
    if purpose is None:
        return world.call("compliance", "receive", query(identities[DC], H, query_id=query_id))
    payload = {"metric": "sp", "predictions": H, "query_id": query_id, "purpose": purpose}
    return world.call("compliance", "receive", identities[DC].seal("compliance", "metric-query", "raw", payload))


def test_compliance_charges_answers_retries_from_the_ledger_and_refuses_over_budget(identities, keyring, audit_arrays,
                                                                                     tmp_path):
    path = tmp_path / LEDGER_FILE
    world = _compliance(identities, keyring, audit_arrays, path, budgets={DC: PureDP(epsilon=1.0)})
    H = np.vstack([np.linspace(0, 1, 40), np.full(40, 0.5)])
    first = check_reply(_ask(world, identities, keyring, "q0", H), keyring, DC, "metric-answer")
    exact = statistical_parity_difference(H, audit_arrays[0])
    assert not np.allclose(first.payload["values"], exact)  # noisy
    retry = check_reply(_ask(world, identities, keyring, "q0", H), keyring, DC, "metric-answer")
    assert retry.id != first.id and retry.digest == first.digest  # a new envelope around the same answer
    assert retry.payload["values"].tobytes() == first.payload["values"].tobytes()
    for i in range(1, 4):
        check_reply(_ask(world, identities, keyring, f"q{i}"), keyring, DC, "metric-answer")
    refusal = _ask(world, identities, keyring, "q4")
    assert refusal.kind == REFUSAL and refusal.payload["reason"] == wire.BUDGET_EXCEEDED
    assert "querier 'data-center' would exceed its budget" in refusal.payload["detail"]
    # it keeps serving: answers already paid for are still given out
    again = check_reply(_ask(world, identities, keyring, "q2"), keyring, DC, "metric-answer")
    assert again.payload["values"].tobytes() == Ledger(path).answer_for("q2")["values"].tobytes()
    stats = world.call("compliance", "stats")
    assert stats == {"models_answered": 2 + 3, "requests_answered": 0, "answers_replayed": 2, "refusals_sent": 1,
                     "budget_refusals": 1, "epsilon_spent": {DC: 1.0}, "delta_spent": {DC: 0.0}}


def test_a_new_compliance_on_the_same_file_carries_on(identities, keyring, audit_arrays, tmp_path):
    path = tmp_path / LEDGER_FILE
    budgets = {DC: PureDP(epsilon=0.5)}
    old = _compliance(identities, keyring, audit_arrays, path, budgets)
    first = check_reply(_ask(old, identities, keyring, "q0"), keyring, DC, "metric-answer")
    # a restarted party: same constructor arguments, fresh memory (and a generator that would draw other noise)
    new = _compliance(identities, keyring, audit_arrays, path, budgets, seed=99)
    retry = check_reply(_ask(new, identities, keyring, "q0"), keyring, DC, "metric-answer")
    assert retry.payload["values"].tobytes() == first.payload["values"].tobytes()
    check_reply(_ask(new, identities, keyring, "q1"), keyring, DC, "metric-answer")
    assert _ask(new, identities, keyring, "q2").payload["reason"] == wire.BUDGET_EXCEEDED
    assert new.call("compliance", "stats")["epsilon_spent"] == {DC: 0.5}


def test_a_retry_with_another_query_under_the_same_id_is_refused(identities, keyring, audit_arrays, tmp_path):
    world = _compliance(identities, keyring, audit_arrays, tmp_path / LEDGER_FILE)
    check_reply(_ask(world, identities, keyring, "q0", np.full((1, 40), 0.5)), keyring, DC, "metric-answer")
    reply = _ask(world, identities, keyring, "q0", np.full((1, 40), 0.25))
    assert reply.kind == REFUSAL and reply.payload["reason"] == wire.INVALID_QUERY
    assert reply.payload["detail"] == ID_REUSED.format(query_id="q0")


def test_compliance_without_budgets_caps_nothing_and_a_budget_map_refuses_the_unlisted(identities, keyring,
                                                                                       audit_arrays, tmp_path):
    open_world = _compliance(identities, keyring, audit_arrays, tmp_path / "open.sqlite")
    for i in range(12):  # 12 x 0.25 = 3 epsilon: no cap
        check_reply(_ask(open_world, identities, keyring, f"q{i}"), keyring, DC, "metric-answer")
    assert open_world.call("compliance", "stats")["epsilon_spent"] == {DC: 3.0}
    closed = _compliance(identities, keyring, audit_arrays, tmp_path / "closed.sqlite",
                         budgets={"someone-else": PureDP(epsilon=9)})
    reply = _ask(closed, identities, keyring, "q")
    assert reply.payload["reason"] == wire.BUDGET_EXCEEDED
    assert reply.payload["detail"] == NO_BUDGET.format(querier=DC)


def test_raw_needs_no_ledger_and_a_costed_protocol_without_a_file_is_accounted_in_memory(identities, keyring,
                                                                                           audit_arrays):
    raw = _compliance(identities, keyring, audit_arrays, None, protocol=protocols.get_protocol("raw")())
    assert raw.parties["compliance"].ledger is None
    check_reply(_ask(raw, identities, keyring, "q"), keyring, DC, "metric-answer")
    assert raw.call("compliance", "stats")["epsilon_spent"] == {}
    memory = _compliance(identities, keyring, audit_arrays, None, budgets={DC: PureDP(epsilon=0.25)})
    check_reply(_ask(memory, identities, keyring, "q0"), keyring, DC, "metric-answer")
    assert _ask(memory, identities, keyring, "q1").payload["reason"] == wire.BUDGET_EXCEEDED


# --------------------------------------------------------------------------- per-purpose accounts
AUDIT, EXPLORE = account_of(DC, "audit"), account_of(DC, UNDECLARED)
PURPOSE_BUDGETS = {AUDIT: PureDP(epsilon=0.5), EXPLORE: PureDP(epsilon=0.75)}  # 2 and 3 answers at 0.25


def _purposes(identities, keyring, audit_arrays, path, seed=0):
    return _compliance(identities, keyring, audit_arrays, path, dict(PURPOSE_BUDGETS), seed=seed,
                       purposes=("audit", UNDECLARED))


def _answered(reply, keyring):
    return check_reply(reply, keyring, DC, "metric-answer")


def test_exploration_exhausting_its_budget_never_blocks_the_audit(identities, keyring, audit_arrays, tmp_path):
    world = _purposes(identities, keyring, audit_arrays, tmp_path / LEDGER_FILE)
    _answered(_ask(world, identities, keyring, "a0", purpose="audit"), keyring)
    for i in range(3):  # a query declaring no purpose is exploratory
        _answered(_ask(world, identities, keyring, f"x{i}"), keyring)
    refusal = _ask(world, identities, keyring, "x3", purpose=UNDECLARED)
    assert refusal.kind == REFUSAL and refusal.payload["reason"] == wire.BUDGET_EXCEEDED
    # the refusal names the account and its budget, and what it has spent
    assert refusal.payload["detail"] == OVER_BUDGET.format(
        querier=EXPLORE, limit=PureDP(epsilon=0.75), spent=PureDP(epsilon=0.75), n=3, cost=PureDP(epsilon=0.25),
        method="sequential", total=PureDP(epsilon=1.0))
    # exploration is spent; the audit account still answers, up to its own cap and no further
    _answered(_ask(world, identities, keyring, "a1", purpose="audit"), keyring)
    over = _ask(world, identities, keyring, "a2", purpose="audit")
    assert over.payload["reason"] == wire.BUDGET_EXCEEDED
    assert over.payload["detail"].startswith(f"querier {AUDIT!r} would exceed its budget: limit (epsilon=0.5, ")
    stats = world.call("compliance", "stats")
    assert stats["epsilon_spent"] == {AUDIT: 0.5, EXPLORE: 0.75} and stats["budget_refusals"] == 2
    summary = world.call("compliance", "ledger_summary")["queriers"]
    assert summary[AUDIT] == {"limit": {"epsilon": 0.5, "delta": 0.0}, "spent": {"epsilon": 0.5, "delta": 0.0},
                              "debits": 2}
    assert summary[EXPLORE]["debits"] == 3 and summary[EXPLORE]["limit"] == {"epsilon": 0.75, "delta": 0.0}


def test_a_purpose_outside_the_policy_is_refused_and_an_id_stays_with_its_account(identities, keyring, audit_arrays,
                                                                                  tmp_path):
    world = _purposes(identities, keyring, audit_arrays, tmp_path / LEDGER_FILE)
    for bad in ("marketing", 7):
        reply = _ask(world, identities, keyring, "m0", purpose=bad)
        assert reply.kind == REFUSAL and reply.payload["reason"] == wire.BUDGET_EXCEEDED
        assert reply.payload["detail"] == UNKNOWN_PURPOSE.format(sender=DC, purpose=bad, how="",
                                                                 known="audit, exploratory", undeclared=UNDECLARED)
    assert world.call("compliance", "stats")["budget_refusals"] == 2
    first = _answered(_ask(world, identities, keyring, "x0"), keyring)
    # the same id under the audit purpose cannot pull exploration's answer, nor be charged twice
    moved = _ask(world, identities, keyring, "x0", purpose="audit")
    assert moved.payload["reason"] == wire.INVALID_QUERY and moved.payload["detail"] == ID_TAKEN.format(query_id="x0")
    again = _answered(_ask(world, identities, keyring, "x0"), keyring)
    assert again.payload["values"].tobytes() == first.payload["values"].tobytes()
    assert world.call("compliance", "stats")["epsilon_spent"] == {AUDIT: 0.0, EXPLORE: 0.25}


def test_per_purpose_accounts_survive_a_restart_and_never_spend_twice(identities, keyring, audit_arrays, tmp_path):
    path = tmp_path / LEDGER_FILE
    old = _purposes(identities, keyring, audit_arrays, path)
    answers = {qid: _answered(_ask(old, identities, keyring, qid, purpose=p), keyring).payload["values"].tobytes()
               for qid, p in (("x0", None), ("a0", "audit"), ("x1", None), ("x2", None))}
    head = Ledger(path).head()
    # a restarted party on the same file, with a generator that would draw other noise
    new = _purposes(identities, keyring, audit_arrays, path, seed=99)
    for qid, p in (("x0", None), ("a0", "audit"), ("x2", None)):  # retries: the stored answers, no debit
        assert _answered(_ask(new, identities, keyring, qid, purpose=p), keyring).payload["values"].tobytes() == \
            answers[qid]
    assert _ask(new, identities, keyring, "x3").payload["reason"] == wire.BUDGET_EXCEEDED  # still spent
    _answered(_ask(new, identities, keyring, "a1", purpose="audit"), keyring)
    assert new.call("compliance", "stats")["epsilon_spent"] == {AUDIT: 0.5, EXPLORE: 0.75}
    with Ledger(path) as led:  # reopening verifies the chain across both accounts' debits
        assert [e["querier"] for e in led.entries()] == [EXPLORE, AUDIT, EXPLORE, EXPLORE, AUDIT]
        assert led.head()["debits"] == head["debits"] + 1


def test_per_purpose_debits_survive_the_process_being_killed(tmp_path):
    """SIGKILL after exploration is spent and the audit charged once: every account reopens as it was."""
    path = tmp_path / "ledger.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        from parley.parties.ledger import Ledger
        from parley.protocols.budget import PureDP
        led = Ledger({str(path)!r})
        led.set_budget({AUDIT!r}, PureDP(epsilon=0.5))
        led.set_budget({EXPLORE!r}, PureDP(epsilon=0.5))
        for i in range(2):
            led.charge({EXPLORE!r}, f"x{{i}}", PureDP(epsilon=0.25), {{"query_id": f"x{{i}}", "values": np.array([i])}})
        led.charge({AUDIT!r}, "a0", PureDP(epsilon=0.25), {{"query_id": "a0", "values": np.array([0.5])}})
        os.kill(os.getpid(), signal.SIGKILL)
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    with Ledger(path) as led:
        assert led.spent(EXPLORE) == PureDP(epsilon=0.5) and led.spent(AUDIT) == PureDP(epsilon=0.25)
        with pytest.raises(WireError) as exc:  # exploration stays spent
            led.charge(EXPLORE, "x2", PureDP(epsilon=0.25), _answer([2.0], "x2"))
        assert exc.value.reason == wire.BUDGET_EXCEEDED and EXPLORE in str(exc.value)
        replay = led.charge(AUDIT, "a0", PureDP(epsilon=0.25), _answer([9.0], "a0"))  # a retry: no second debit
        np.testing.assert_array_equal(replay["values"], [0.5])
        led.charge(AUDIT, "a1", PureDP(epsilon=0.25), _answer([1.0], "a1"))  # the audit's last piece
        assert led.spent(AUDIT) == PureDP(epsilon=0.5) and len(led.entries()) == 4


# --------------------------------------------------------------------------- scenario and runner
BASE = {"dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 500},
        "attack": {"name": "single-query", "targets": 5}, "backend": "local"}


@pytest.fixture
def noisy_registered(monkeypatch):
    monkeypatch.setitem(protocols.PROTOCOLS, NoisyProtocol.name, NoisyProtocol)


@pytest.mark.parametrize(("change", "message"), [
    ({"budget": {"epsilon": 0}}, "budget.epsilon: Input should be greater than 0 (got 0)"),
    ({"budget": {"epsilon": 1, "delta": 1}}, "budget.delta: Input should be less than 1 (got 1)"),
    ({"budget": {"eps": 1}}, "unknown key 'budget.eps'; allowed keys: delta, epsilon, purposes"),
    ({"budget": {}}, BUDGET_NEEDS_CAP),
    ({"budget": {"purposes": {}}}, BUDGET_NEEDS_CAP),
    ({"budget": {"epsilon": 1, "purposes": {"audit": {"epsilon": 1}}}}, BUDGET_TWO_POLICIES),
    ({"budget": {"purposes": {"a/b": {"epsilon": 1}}}}, BAD_PURPOSE.format(name="a/b")),
    ({"budget": {"purposes": {"exploratory": {"epsilon": 1}}}}, NO_AUDIT_PURPOSE.format(names="exploratory")),
    ({"budget": {"purposes": {"audit": {"epsilon": -1}}}},
     "budget.purposes.audit.epsilon: Input should be greater than 0 (got -1)"),
    ({"composition": "zcdp", "budget": {"purposes": {"audit": {"epsilon": 1, "delta": 1e-5}, "x": {"epsilon": 1}}}},
     "composition 'zcdp' spends a slack delta'=1e-06: budget.delta must be at least 1e-06, got 0.0"),
    ({"budget": 3}, "budget must be a table"),
    ({"composition": "parallel"}, "composition: Input should be 'sequential', 'advanced' or 'zcdp' (got 'parallel')"),
    ({"composition": "advanced", "budget": {"epsilon": 1}},
     "composition 'advanced' spends a slack delta'=1e-06: budget.delta must be at least 1e-06, got 0.0"),
])
def test_budget_mistakes_are_named(change, message):
    with pytest.raises(ConfigError) as exc:
        Scenario.from_dict({**BASE, **change})
    assert message in str(exc.value)


def test_budget_round_trips_and_epsilon_is_an_alias_of_protocol_epsilon(noisy_registered):
    plain = Scenario.from_dict(BASE)
    assert plain.budget is None and "budget" not in plain.to_dict() and "composition" not in plain.to_dict()
    scenario = Scenario.from_dict({**BASE, "protocol": {"name": "test-noisy"}, "budget": {"epsilon": 2.0}})
    assert scenario.budget.to_budget() == PureDP(epsilon=2.0) and scenario.composition == "sequential"
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    changed = scenario.with_overrides(["epsilon=1", "budget.delta=1e-5", "composition=advanced"])
    assert changed.protocol.params.epsilon == 1.0 and changed.budget.epsilon == 2.0  # the alias leaves the budget
    assert changed.budget.to_budget() == ApproxDP(epsilon=2.0, delta=1e-5) and changed.composition == "advanced"
    with pytest.raises(ConfigError, match="epsilon is an alias of protocol.epsilon: give one of them, not both"):
        scenario.with_values({"epsilon": 1, "protocol.epsilon": 2})
    with pytest.raises(ConfigError, match=r"unknown key 'protocol.epsilon'.*alias of protocol.epsilon, which "
                                          r"protocol 'raw' does not take"):
        plain.with_overrides(["epsilon=1"])


def test_run_without_budget_records_what_was_spent(noisy_registered, tmp_path):
    # exact answers at a price: the exact attack completes, the ledger counts every answer
    scenario = Scenario.from_dict({**BASE, "protocol": {"name": "test-noisy", "epsilon": 0.5, "scale": 0.0}})
    result = run(scenario, out=tmp_path)
    m = result.metrics
    assert m["leakage"] == 100.0 and m["queries"] == 5
    queries = 1 + m["queries"]  # the honest audit query, then the attack
    assert m["epsilon_spent"] == pytest.approx(0.5 * queries) and m["delta_spent"] == 0.0
    assert m["budget_refusals"] == 0 and m["refusals"] == 0
    assert (tmp_path / LEDGER_FILE).is_file()
    assert result.record["ledger"] == {"file": LEDGER_FILE, "composition": "sequential", "queriers": {
        DC: {"limit": None, "spent": {"epsilon": m["epsilon_spent"], "delta": 0.0}, "debits": queries}}}
    with Ledger(tmp_path / LEDGER_FILE) as led:
        assert len(led.entries()) == queries
    # a rerun into the same folder is refused (the budget stays spent); asked to start fresh, it does
    with pytest.raises(LedgerInFolderError, match="re-run with --fresh"):
        run(scenario, out=tmp_path)
    with Ledger(tmp_path / LEDGER_FILE) as led:
        assert len(led.entries()) == queries  # the refusal left the ledger as it was
    again = run(scenario, out=tmp_path, fresh=True)
    assert again.metrics["epsilon_spent"] == m["epsilon_spent"] and again.record["ledger"] == result.record["ledger"]


def test_run_with_budget_stops_the_attack_and_reports_the_refusal(noisy_registered, tmp_path):
    scenario = Scenario.from_dict({**BASE, "protocol": {"name": "test-noisy", "epsilon": 0.5},
                                   "budget": {"epsilon": 1.0}})
    m = run(scenario, out=tmp_path).metrics
    assert m["budget_refusals"] == 1 and m["refusals"] == 1
    assert m["epsilon_spent"] == 1.0 and m["delta_spent"] == 0.0  # the audit query and one attack query
    assert m["attack_stopped"] == "budget-exceeded" and m["attacked"] == 0 and m["leakage"] is None
    assert m["queries"] == 1
    record = json.loads((tmp_path / "result.json").read_text())
    assert record["ledger"]["queriers"][DC]["limit"] == {"epsilon": 1.0, "delta": 0.0}
    assert record["spec"]["budget"] == {"epsilon": 1.0, "delta": 0.0}
    raw = run(Scenario.from_dict({**BASE, "budget": {"epsilon": 1.0}}), out=tmp_path / "raw").metrics
    assert raw["epsilon_spent"] is None and raw["budget_refusals"] == 0  # raw spends nothing: no ledger
    assert not (tmp_path / "raw" / LEDGER_FILE).exists()


POLICY = {"purposes": {"audit": {"epsilon": 0.5}, "exploratory": {"epsilon": 1.0}}}


def test_run_with_purposes_keeps_the_audit_apart_and_reports_each_account(noisy_registered, tmp_path):
    scenario = Scenario.from_dict({**BASE, "protocol": {"name": "test-noisy", "epsilon": 0.5}, "budget": POLICY})
    assert Scenario.from_dict(scenario.to_dict()) == scenario
    assert scenario.budget.to_budget() == PureDP(epsilon=1.5)  # what the querier may spend over all purposes
    result = run(scenario, out=tmp_path)
    m = result.metrics
    # the honest query is charged to the audit account; the attack's (declaring none) to exploration, whose
    # refusal after two answers stops the attack
    assert m["budget_refusals"] == 1 and m["attack_stopped"] == "budget-exceeded" and m["queries"] == 2
    assert m["epsilon_spent"] == 1.5 and m["delta_spent"] == 0.0  # the sum over the data center's accounts
    assert result.record["ledger"]["queriers"] == {
        AUDIT: {"limit": {"epsilon": 0.5, "delta": 0.0}, "spent": {"epsilon": 0.5, "delta": 0.0}, "debits": 1},
        EXPLORE: {"limit": {"epsilon": 1.0, "delta": 0.0}, "spent": {"epsilon": 1.0, "delta": 0.0}, "debits": 2}}
    report = (tmp_path / "report.md").read_text(encoding="utf-8")
    assert f"| {AUDIT} | 0.5 | 0 | 0.5 | 0 | 1 |" in report and f"| {EXPLORE} | 1 | 0 | 1 | 0 | 2 |" in report
    # a policy without exploration refuses the attack's first query; the honest audit is still answered
    audit_only = scenario.with_values({"budget.purposes": {"audit": {"epsilon": 0.5}}})
    m = run(audit_only, out=tmp_path / "audit-only").metrics
    assert m["epsilon_spent"] == 0.5 and m["budget_refusals"] == 1 and m["queries"] == 0 and "base_sp" in m
    with Ledger(tmp_path / "audit-only" / LEDGER_FILE) as led:
        assert led.summary()["queriers"] == {AUDIT: {"limit": {"epsilon": 0.5, "delta": 0.0},
                                                     "spent": {"epsilon": 0.5, "delta": 0.0}, "debits": 1}}
    refusals = [e.payload["detail"] for e in read_transcript(tmp_path / "audit-only" / "transcript.jsonl")
                if e.kind == REFUSAL]
    assert refusals == [UNKNOWN_PURPOSE.format(sender=DC, purpose=UNDECLARED, how=DECLARED_NONE, known="audit",
                                               undeclared=UNDECLARED)]
