"""The evidence of a ledger's spending outlives what a user deletes around it, and is never taken for another's.

* ``--fresh`` on a run folder discards the folder's own ledger, never the transcript of a run that charged a
  named ledger: that transcript is the named ledger's evidence (kept beside, ``transcript.spent-<hash>.jsonl``).
* A named ledger deleted together with its journal (``rm runs/ledgers/NAME.*``) is still named at the next
  run that charges it: the run folders under ``runs/`` record which ledger charged them (``charges.json``),
  and keep what the ledger held after each completed run even when the transcript is deleted too.
* A transcript charged to a named ledger that is intact never refuses a run into its folder that keeps its
  own ledger; one whose named ledger is gone does, until that ledger is started anew with ``--fresh``.
* ``--fresh`` with ``--ledger`` is the named ledger's only: a run that spends nothing leaves the folder's
  ledger as it is.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from parley import protocols
from parley.scenarios.run_folder import (
    CHARGES_FILE,
    FOREIGN_LEDGER_GONE,
    TRANSCRIPT_FILE,
    LedgerInFolderError,
    charged_answer,
    ledger_debits,
)
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario
from parley.scenarios.world import LEDGER_FILE
from tests.ledger_world import NoisyProtocol

SMALL = {"name": "evidence", "seed": 0, "backend": "local",
         "dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 500},
         "attack": {"name": "single-query", "targets": 3}}
RAW = Scenario.from_dict({**SMALL, "protocol": {"name": "raw"}})


@pytest.fixture(autouse=True)
def noisy_registered(monkeypatch):
    monkeypatch.setitem(protocols.PROTOCOLS, NoisyProtocol.name, NoisyProtocol)


def _priced() -> Scenario:
    """Exact answers at a price (the test protocol, registered by the fixture): every answer charged 0.5."""
    return Scenario.from_dict({**SMALL, "protocol": {"name": "test-noisy", "epsilon": 0.5, "scale": 0.0}})


def _run(scenario: Scenario, out: Path, **kwargs):
    return run(scenario, out=out, in_process=True, reports=False, **kwargs)


def _delete(ledger: Path, journal: bool = False) -> None:
    """Delete the named ledger's files behind the party's back (its journal too if ``journal``)."""
    for path in ledger.parent.glob(ledger.name + "*"):
        if journal or not path.name.endswith(".runs"):
            path.unlink()


def _kept(folder: Path) -> list[Path]:
    return sorted(folder.glob("transcript.spent-*.jsonl"))


def test_fresh_on_a_folder_keeps_a_named_ledgers_transcript_so_its_deletion_is_still_named(tmp_path):
    """F1: a named ledger's run in A, then a raw run into A with fresh, then the ledger deleted: still refused."""
    ledger, a, b = tmp_path / "ledgers" / "dc.sqlite", tmp_path / "a", tmp_path / "b"
    spent = _run(_priced(), a, ledger=ledger).metrics["epsilon_spent"]
    assert spent > 0 and ledger_debits(ledger)[0] > 0
    _run(RAW, a, fresh=True)  # the folder's fresh start: nothing of the named ledger's is discarded
    (kept,) = _kept(a)
    assert charged_answer(kept) is not None and charged_answer(a / TRANSCRIPT_FILE) is None
    _delete(ledger)  # the journal stays, pointing at A
    with pytest.raises(LedgerInFolderError, match=f"ledger {ledger} is gone"):
        _run(_priced(), b, ledger=ledger)
    assert not ledger.exists()  # refused before any ledger was started
    again = _run(_priced(), b, ledger=ledger, fresh=True)  # the way out, asked for
    assert again.metrics["epsilon_spent"] == spent


def test_a_named_ledger_deleted_with_its_journal_is_named_from_the_run_folders_that_it_charged(tmp_path):
    """F1: ``rm runs/ledgers/dc.*`` (journal and lock too), even with the runs' transcripts deleted as well."""
    runs = tmp_path / "runs"
    ledger = runs / "ledgers" / "dc.sqlite"
    first = _run(_priced(), runs / "evidence" / "1", ledger=ledger)
    _run(_priced(), runs / "evidence" / "2", ledger=ledger)
    _delete(ledger, journal=True)
    assert not list(ledger.parent.iterdir())
    with pytest.raises(LedgerInFolderError, match=f"ledger {ledger} is gone"):
        _run(_priced(), runs / "evidence" / "3", ledger=ledger)
    record = json.loads((first.run_dir / CHARGES_FILE).read_text())["transcripts"][TRANSCRIPT_FILE]
    assert record["ledger"] == str(ledger.resolve()) and record["ledger_head"]["debits"] > 0
    assert record["transcript_head"] == first.record["transcript"]["head"]
    for folder in (runs / "evidence").iterdir():  # the transcripts deleted too: the records still tell
        (folder / TRANSCRIPT_FILE).unlink(missing_ok=True)
    with pytest.raises(LedgerInFolderError, match="records that the ledger held .* debits"):
        _run(_priced(), runs / "evidence" / "4", ledger=ledger)
    _run(_priced(), runs / "evidence" / "5", ledger=ledger, fresh=True)  # started anew, asked for
    _delete(ledger, journal=True)  # and deleted again: the fresh run's own spending is what is named now
    with pytest.raises(LedgerInFolderError, match=f"ledger {ledger} is gone") as info:
        _run(_priced(), runs / "evidence" / "6", ledger=ledger)
    assert str(runs / "evidence" / "5") in str(info.value)


def test_an_own_ledger_run_into_a_folder_a_named_ledger_charged_is_not_refused_while_that_ledger_is_intact(
        tmp_path):
    """F7: the transcript's answers went to the named ledger, which holds them: not the folder's ledger's loss."""
    ledger, a = tmp_path / "ledgers" / "dc.sqlite", tmp_path / "a"
    _run(_priced(), a, ledger=ledger)
    named = ledger_debits(ledger)[0]
    own = _run(_priced(), a)  # a plain spending run: its own ledger in A, never refused because of dc's answers
    assert own.metrics["epsilon_spent"] > 0 and ledger_debits(a / LEDGER_FILE)[0] > 0
    assert ledger_debits(ledger)[0] == named and len(_kept(a)) == 1
    # dc deleted behind its party's back: a spending run into A can see it, and names it (fresh or not)
    _delete(ledger, journal=True)
    with pytest.raises(LedgerInFolderError) as info:
        _run(_priced(), a, fresh=True)
    assert str(info.value).startswith(FOREIGN_LEDGER_GONE.split("{path}")[0].format(folder=a))
    assert f"--ledger {ledger.resolve()} --fresh" in str(info.value)
    assert ledger_debits(a / LEDGER_FILE)[0] > 0  # nothing discarded by the refused run
    _run(RAW, a)  # a run that spends nothing is never refused
    _run(_priced(), tmp_path / "c", ledger=ledger, fresh=True)  # dc started anew, asked for
    _run(_priced(), a, fresh=True)


def test_fresh_with_a_named_ledger_never_discards_the_folders_own_ledger(tmp_path):
    """F8: ``--ledger dc --fresh`` on a raw run: the ledger is ignored, and so is --fresh: the folder's ledger stays."""
    ledger, a = tmp_path / "ledgers" / "dc.sqlite", tmp_path / "a"
    _run(_priced(), a)
    own = ledger_debits(a / LEDGER_FILE)[0]
    assert own > 0
    _run(RAW, a, ledger=ledger, fresh=True)
    assert ledger_debits(a / LEDGER_FILE)[0] == own and not ledger.exists()
    # and on a spending run, --fresh starts the named ledger anew, the folder's own ledger untouched
    _run(_priced(), a, ledger=ledger)
    _run(_priced(), a, ledger=ledger, fresh=True)
    assert ledger_debits(a / LEDGER_FILE)[0] == own and ledger_debits(ledger)[0] == own


def test_ledger_debits_names_a_missing_ledger_as_empty_and_a_spent_one_by_its_debits(tmp_path):
    """F14: the one public reading of a ledger's debits (the CLI's notes and the folder's refusal use it)."""
    assert ledger_debits(tmp_path / "none.sqlite") == (0, "no debits")
    assert not (tmp_path / "none.sqlite").exists()
    _run(_priced(), tmp_path / "a")
    debits, spent = ledger_debits(tmp_path / "a" / LEDGER_FILE)
    assert debits > 0 and f"over {debits} debits" in spent
