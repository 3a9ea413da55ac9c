"""An open ledger against another writer on its file: debits deleted, costs lowered, caps raised, head deleted.

Each test plays the change as an adversary who read ``parties/ledger.py`` would: a second sqlite3
connection to the real ledger file edits it while the compliance party (or a ``Ledger``) has it open.
The change is named at the next charge (refused, nothing debited, no head written over it) and again
when the file is reopened; the party keeps serving what needs no new debit.
"""

from __future__ import annotations

import json
import logging
import signal
import sqlite3
import subprocess
import sys
import textwrap
import threading
from pathlib import Path

import numpy as np
import pytest

from parley.parties import wire
from parley.parties.compliance import Compliance
from parley.parties.ledger import (
    BUDGET_EDITED,
    DEBITS_CHANGED,
    DEBITS_MISSING,
    HEAD_LOST,
    LEDGER_REFUSED,
    TIP_CHANGED,
    Ledger,
    LedgerIntegrityError,
    LedgerTamperedError,
    head_path,
)
from parley.parties.network import LocalDeployment
from parley.parties.party import REFUSAL, check_reply
from parley.protocols.base import AuditSet
from parley.protocols.budget import PureDP
from parley.protocols.errors import WireError
from tests.fixed_secrets import party_secret
from tests.ledger_world import noisy
from tests.party_world import query

ROOT = Path(__file__).resolve().parents[3]
DC = "data-center"
COST = PureDP(epsilon=0.25)
LOGGER = "parley.parties.ledger"


def _answer(i: int) -> dict:
    return {"metric": "sp", "query_id": f"q{i}", "values": np.array([0.1 * i])}


def _sql(path: Path, statement: str) -> None:
    """Another writer: a second connection to the real ledger file."""
    conn = sqlite3.connect(path, isolation_level=None)
    try:
        conn.execute(statement)
    finally:
        conn.close()


def _debits(path: Path) -> int:
    conn = sqlite3.connect(path)
    try:
        return conn.execute("SELECT COUNT(*) FROM debits").fetchone()[0]
    finally:
        conn.close()


def _party(identities, keyring, audit_arrays, path, budgets):
    a, y = audit_arrays
    world = LocalDeployment()
    world.add("compliance", Compliance, identities["compliance"], keyring, AuditSet(a=a, y=y), noisy(0.25), [DC],
              party_secret(0), ledger_path=path, budgets=budgets)
    return world


def _ask(world, identities, query_id: str):
    return world.call("compliance", "receive", query(identities[DC], np.full((1, 40), 0.5), query_id=query_id))


def _refused_as_tampered(reply) -> bool:
    return (reply.kind == REFUSAL and reply.payload["reason"] == wire.INTERNAL
            and reply.payload["detail"] == LEDGER_REFUSED)


# --------------------------------------------------------------------------- 1. debits deleted mid-run
def test_debits_deleted_while_the_party_runs_are_named_at_the_next_charge_and_on_reopen(
        identities, keyring, audit_arrays, tmp_path, caplog):
    path = tmp_path / "ledger.sqlite"
    world = _party(identities, keyring, audit_arrays, path, {DC: PureDP(epsilon=1.0)})
    answers = [check_reply(_ask(world, identities, f"q{i}"), keyring, DC, "metric-answer") for i in range(4)]
    assert _ask(world, identities, "q4").payload["reason"] == wire.BUDGET_EXCEEDED  # 1.0 of 1.0 spent
    _sql(path, "DELETE FROM debits WHERE rowid > 1")  # the last three debits: the file now shows 0.25 spent
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        replies = [_ask(world, identities, f"q{i}") for i in range(5, 8)]
    assert all(_refused_as_tampered(r) for r in replies)  # not one more answer: budget is never spent twice
    message = TIP_CHANGED.format(path=path, count=4, query_id="q3", held=1, total=1, last="query id 'q0'")
    assert message in caplog.text
    assert _debits(path) == 1 and json.loads(head_path(path).read_text())["debits"] == 4  # no head over the cut
    # the party keeps serving: an answer on record is given again, at no cost
    again = check_reply(_ask(world, identities, "q0"), keyring, DC, "metric-answer")
    assert again.payload["values"].tobytes() == answers[0].payload["values"].tobytes()
    with pytest.raises(LedgerTamperedError) as info:  # nor does the run's summary report the lowered spend
        world.call("compliance", "ledger_summary")
    assert str(info.value) == message
    world.call("compliance", "close")
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(path)
    assert str(info.value) == DEBITS_MISSING.format(path=path, n=1, head=head_path(path), k=4)


def test_a_ledger_refuses_to_charge_on_a_chain_cut_behind_it(tmp_path):
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    led.set_budget(DC, None)  # no cap: only the chain can tell
    for i in range(4):
        led.charge(DC, f"q{i}", COST, _answer(i))
    _sql(path, "DELETE FROM debits WHERE rowid > 2")
    with pytest.raises(LedgerTamperedError) as info:
        led.charge(DC, "q4", COST, _answer(4))
    assert str(info.value) == TIP_CHANGED.format(path=path, count=4, query_id="q3", held=2, total=2,
                                                 last="query id 'q1'")
    assert isinstance(info.value, WireError) and (info.value.reason, info.value.detail) == (wire.INTERNAL,
                                                                                            LEDGER_REFUSED)
    with pytest.raises(LedgerTamperedError):  # the same at every later charge: nothing is ever anchored over it
        led.charge(DC, "q5", COST, _answer(5))
    assert _debits(path) == 2 and json.loads(head_path(path).read_text())["debits"] == 4
    led.close()
    with pytest.raises(LedgerIntegrityError, match="debits were deleted"):
        Ledger(path)


def test_a_cost_lowered_while_the_ledger_is_open_is_named_at_the_next_charge(tmp_path):
    path = tmp_path / "ledger.sqlite"
    led = Ledger(path)
    led.set_budget(DC, PureDP(epsilon=1.0))
    for i in range(4):
        led.charge(DC, f"q{i}", COST, _answer(i))
    _sql(path, "UPDATE debits SET epsilon = 0 WHERE query_id = 'q1'")  # would free 0.25 for one more answer
    with pytest.raises(LedgerTamperedError) as info:
        led.charge(DC, "q4", COST, _answer(4))
    assert str(info.value) == DEBITS_CHANGED.format(
        path=path, querier=DC, what="debit 'q1' reads epsilon=0, delta=0 in the database, it was charged "
                                    "epsilon=0.25, delta=0")
    assert _debits(path) == 4
    led.close()
    with pytest.raises(LedgerIntegrityError, match="does not match its chain link"):
        Ledger(path)


def test_a_head_deleted_while_the_ledger_is_open_is_named(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.set_budget(DC, None)
        led.charge(DC, "q0", COST, _answer(0))
        head_path(path).unlink()
        with pytest.raises(LedgerTamperedError) as info:
            led.charge(DC, "q1", COST, _answer(1))
    assert str(info.value) == HEAD_LOST.format(path=path, head=head_path(path))


def test_another_ledger_on_the_same_file_is_followed_not_accused(tmp_path):
    """Debits and caps written through another Ledger object are the file's own: no alarm, both count them."""
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as a, Ledger(path) as b:
        a.set_budget(DC, PureDP(epsilon=0.5))
        a.charge(DC, "q0", COST, _answer(0))
        b.charge(DC, "q1", COST, _answer(1))
        with pytest.raises(WireError, match="budget-exceeded"):
            a.charge(DC, "q2", COST, _answer(2))
        b.set_budget(DC, PureDP(epsilon=1.0))
        a.charge(DC, "q2", COST, _answer(2))
        b.charge(DC, "q3", COST, _answer(3))
        assert a.summary() == b.summary()
        assert a.summary()["queriers"][DC] == {"limit": {"epsilon": 1.0, "delta": 0.0},
                                               "spent": {"epsilon": 1.0, "delta": 0.0}, "debits": 4}
    with Ledger(path) as led:
        assert led.spent(DC) == PureDP(epsilon=1.0)


def test_one_ledger_shared_by_threads_beside_another_never_accuses_itself_nor_overspends(tmp_path):
    """What a ledger knows of its own commits is updated under its lock: no thread takes another's debit for a
    stranger's, and the budget is used up exactly."""
    path = tmp_path / "ledger.sqlite"
    shared, other = Ledger(path), Ledger(path)
    shared.set_budget(DC, PureDP(epsilon=0.5))  # 64 charges of 1/128
    errors: list[Exception] = []

    def charge(led: Ledger, prefix: str) -> None:
        for i in range(40):
            try:
                led.charge(DC, f"{prefix}{i}", PureDP(epsilon=1 / 128), _answer(i))
            except WireError as exc:
                if exc.reason != wire.BUDGET_EXCEEDED:
                    errors.append(exc)

    threads = [threading.Thread(target=charge, args=(shared if k < 3 else other, f"t{k}-")) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=300)
    assert errors == [] and not any(t.is_alive() for t in threads)
    assert shared.summary() == other.summary() and _debits(path) == 64
    shared.close()
    other.close()
    with Ledger(path) as led:
        assert led.spent(DC) == PureDP(epsilon=0.5)


# --------------------------------------------------------------------------- 2. caps edited mid-run
def test_a_cap_raised_while_the_party_runs_is_named_at_the_next_charge_and_on_reopen(
        identities, keyring, audit_arrays, tmp_path, caplog):
    path = tmp_path / "ledger.sqlite"
    world = _party(identities, keyring, audit_arrays, path, {DC: PureDP(epsilon=0.5)})
    for i in range(2):
        check_reply(_ask(world, identities, f"q{i}"), keyring, DC, "metric-answer")
    assert _ask(world, identities, "q2").payload["reason"] == wire.BUDGET_EXCEEDED
    _sql(path, "UPDATE budgets SET epsilon = 1000")
    with caplog.at_level(logging.ERROR, logger=LOGGER):
        replies = [_ask(world, identities, f"q{i}") for i in range(3, 11)]
    assert all(_refused_as_tampered(r) for r in replies)  # none of the 8 is answered
    message = BUDGET_EDITED.format(path=path, querier=DC, found="epsilon=1000, delta=0", head=head_path(path),
                                   anchored="epsilon=0.5, delta=0")
    assert message in caplog.text
    assert _debits(path) == 2
    with pytest.raises(LedgerTamperedError) as info:  # the summary never reports the edited cap
        world.call("compliance", "ledger_summary")
    assert str(info.value) == message
    world.call("compliance", "close")
    with pytest.raises(LedgerIntegrityError) as info:
        Ledger(path)
    assert str(info.value) == message
    with pytest.raises(LedgerIntegrityError) as info:  # nor does a compliance party start on it
        _party(identities, keyring, audit_arrays, path, {DC: PureDP(epsilon=0.5)})
    assert str(info.value) == message


def test_a_cap_given_behind_the_ledger_to_an_account_without_one_is_named(tmp_path):
    path = tmp_path / "ledger.sqlite"
    with Ledger(path) as led:
        led.set_budget(DC, PureDP(epsilon=0.25))
        _sql(path, "INSERT INTO budgets VALUES ('intruder', 5.0, 0.0)")
        with pytest.raises(LedgerTamperedError) as info:
            led.charge(DC, "q0", COST, _answer(0))
    assert str(info.value) == BUDGET_EDITED.format(path=path, querier="intruder", found="epsilon=5, delta=0",
                                                   head=head_path(path), anchored="absent (no budget row)")


def test_caps_set_through_the_api_are_in_the_head_and_a_new_party_may_replace_them(identities, keyring,
                                                                                     audit_arrays, tmp_path):
    path = tmp_path / "ledger.sqlite"
    world = _party(identities, keyring, audit_arrays, path, {DC: PureDP(epsilon=0.5)})
    for i in range(2):
        check_reply(_ask(world, identities, f"q{i}"), keyring, DC, "metric-answer")
    assert json.loads(head_path(path).read_text())["budgets"] == {DC: [0.5, 0.0]}
    world.call("compliance", "close")
    # a compliance party built with budgets replaces the file's cap for that querier (as documented)
    again = _party(identities, keyring, audit_arrays, path, {DC: PureDP(epsilon=1.0)})
    for i in range(2, 4):
        check_reply(_ask(again, identities, f"q{i}"), keyring, DC, "metric-answer")
    assert _ask(again, identities, "q4").payload["reason"] == wire.BUDGET_EXCEEDED
    head = json.loads(head_path(path).read_text())
    assert head["budgets"] == {DC: [1.0, 0.0]} and "pending" not in head and head["debits"] == 4
    again.call("compliance", "close")
    with Ledger(path) as led:
        assert led.budget_of(DC) == PureDP(epsilon=1.0) and led.spent(DC) == PureDP(epsilon=1.0)


@pytest.mark.parametrize("point", ["before its commit", "after its commit"])
def test_a_set_budget_cut_short_by_a_kill_is_not_taken_for_an_edit(tmp_path, point):
    """SIGKILL between the head naming the new cap and the commit, or between the commit and the final head."""
    path = tmp_path / "ledger.sqlite"
    script = textwrap.dedent(f"""
        import os, signal, numpy as np
        from parley.parties import ledger
        from parley.protocols.budget import PureDP
        led = ledger.Ledger({str(path)!r})
        led.set_budget("data-center", PureDP(epsilon=1.0))
        led.charge("data-center", "q0", PureDP(epsilon=0.25), {{"values": np.array([0.5])}})
        write = ledger.Ledger._write_head
        def die(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGKILL)
        def write_then_die(self, caps, pending=None):
            write(self, caps, pending)
            if pending:
                die()
        if {point!r} == "before its commit":
            ledger.Ledger._write_head = write_then_die
        else:
            ledger.Ledger._anchor = die
        led.set_budget("data-center", PureDP(epsilon=2.0))
    """)
    proc = subprocess.run([sys.executable, "-c", script], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert proc.returncode == -signal.SIGKILL, proc.stderr
    head = json.loads(head_path(path).read_text())
    assert head["budgets"] == {DC: [2.0, 0.0]} and head["pending"] == {DC: [1.0, 0.0]}
    committed = PureDP(epsilon=1.0) if point == "before its commit" else PureDP(epsilon=2.0)
    with Ledger(path) as led:  # either state is the head's: accepted, and the head settled
        assert led.budget_of(DC) == committed and led.spent(DC) == COST
    head = json.loads(head_path(path).read_text())
    assert head["budgets"] == {DC: [committed.epsilon, 0.0]} and "pending" not in head
    _sql(path, "UPDATE budgets SET epsilon = 5")  # any other cap is still an edit
    with pytest.raises(LedgerIntegrityError, match="the budgets table was edited behind the ledger"):
        Ledger(path)
