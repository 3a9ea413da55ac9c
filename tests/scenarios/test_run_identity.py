"""A run identity that never traps: every run its own folder, a ``latest`` pointer, ledgers that are explicit.

* ``parley run NAME`` writes ``runs/NAME/<run-id>`` (start time and ``--set`` overrides): variants and a
  failed DP variant never overwrite each other, and the plain default after them is never refused.
* Each run is its own world with its own ledger; a compliance party that outlives a run is a named ledger
  (``--ledger NAME``), shared only by the runs that name it, never reset silently, its deletion detected.
* A run that spends no budget is never refused because of a ledger, even in an explicit ``--out``.
* Ctrl-C leaves the folder marked interrupted, and the message says what re-running does.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from parley import protocols
from parley.scenarios import runner
from parley.scenarios.cli import (
    AGAIN_NEW,
    AGAIN_OUT_SPENT,
    EXIT_INTERRUPTED,
    EXIT_OK,
    EXIT_USAGE,
    LEDGER_CARRIES,
    RUN_INTERRUPTED,
    main,
)
from parley.scenarios.run_folder import KEPT_TRANSCRIPT, LATEST, STATUS_FILE, new_run_folder, run_id
from parley.scenarios.world import LEDGER_FILE
from tests.ledger_world import NoisyProtocol

WORKSHOP = Path(__file__).resolve().parents[2] / "docs" / "workshop"
CARD_SECRETS = WORKSHOP / "cards.secrets"
NAME = "adult-raw-double-query"
#: The default scenario's shape on a small synthetic data set, in this process: a plain run is a few seconds.
QUICK_TOML = f"""\
name = "{NAME}"
seed = 0
backend = "local"

[dataset]
name = "synthetic"
audit_size = 200
minority = 30
train_size = 2000

[protocol]
name = "raw"

[attack]
name = "double-query"
targets = 3
"""
#: A DP variant of it whose attack stops (the double-query attack needs exact answers) after spending budget.
FAILING_DP = ["--set", "protocol.name=laplace", "--set", "protocol.epsilon=1"]
#: Exact answers at a price (the test protocol, scale 0): the attack completes, every answer charged 0.5.
PRICED = ["--set", "protocol.name=test-noisy", "--set", "protocol.epsilon=0.5", "--set", "protocol.scale=0",
          "--set", "attack.name=single-query"]


@pytest.fixture
def quick(tmp_path, monkeypatch) -> str:
    """A scenario file named like the default scenario; the working folder is ``tmp_path`` (``runs/`` lands there)."""
    monkeypatch.chdir(tmp_path)
    path = tmp_path / "quick.toml"
    path.write_text(QUICK_TOML, encoding="utf-8")
    return str(path)


def _runs(name: str = NAME) -> list[Path]:
    return sorted(p for p in (Path("runs") / name).iterdir() if p.name != LATEST and not p.name.startswith("."))


def _record(folder: Path) -> dict:
    return json.loads((folder / "result.json").read_text(encoding="utf-8"))


def _debits(ledger: Path) -> int:
    from parley.parties.ledger import Ledger

    with Ledger(ledger) as opened:
        return sum(entry["debits"] for entry in opened.summary()["queriers"].values())


def test_three_variants_a_failed_dp_variant_then_the_default_all_succeed_and_all_remain(quick, capsys):
    variants = [["--set", "attack.targets=4"], ["--set", "attack.targets=5"], ["--set", "protocol.decimals=4"]]
    for variant in variants:
        assert main(["run", quick, *variant]) == EXIT_OK
    assert main(["run", quick, *FAILING_DP]) == EXIT_USAGE  # the attack stops: the run fails, having spent
    err = capsys.readouterr().err
    assert "the attack stopped" in err
    # The start line names what differs from the scenario, and the folder.
    assert re.search(rf"parley: running {NAME} with protocol\.name=laplace, protocol\.epsilon=1 \(laplace protocol, "
                     rf"double-query attack\) \.\.\.", err), err
    assert main(["run", quick]) == EXIT_OK  # the plain default: never refused because of the DP variant's ledger
    out = capsys.readouterr()
    assert f"parley: running {NAME} (raw protocol" in out.err
    default = Path(re.search(r"^run folder: (\S+)$", out.out, re.M).group(1))

    folders = _runs()
    assert len(folders) == 5, folders
    done = [f for f in folders if (f / "result.json").is_file()]
    assert len(done) == 4  # three variants and the default, each kept
    assert sorted(_record(f)["metrics"]["attacked"] for f in done) == [3, 3, 4, 5]
    for variant in variants:
        assert sum(variant[1] in f.name for f in done) == 1  # each variant's folder is named by its override
    failed = next(f for f in folders if not (f / "result.json").is_file())
    status = json.loads((failed / STATUS_FILE).read_text())
    assert status["status"] == "failed" and status["scenario"] == NAME and "attack stopped" in status["error"]
    assert _debits(failed / LEDGER_FILE) > 0  # its spending kept in its own folder, refusing nobody
    assert "protocol.name=laplace" in failed.name
    # latest: the newest completed run, the plain default
    latest = Path("runs") / NAME / LATEST
    assert default in done and latest.resolve() == default.resolve()
    assert re.fullmatch(r"\d{8}T\d{6}Z(-\d+)?", default.name) and _record(latest)["metrics"]["attacked"] == 3


def test_the_same_command_twice_gets_two_folders(quick, tmp_path):
    assert main(["run", quick]) == EXIT_OK
    assert main(["run", quick]) == EXIT_OK
    assert len(_runs()) == 2 and all((f / "result.json").is_file() for f in _runs())
    # within one second too: the second folder gets a numbered name, never the first's
    first, second = new_run_folder("x", root=tmp_path / "r"), new_run_folder("x", root=tmp_path / "r")
    assert first != second and first.is_dir() and second.is_dir()


def test_run_ids_sort_by_time_and_name_long_override_lists_by_a_hash():
    assert run_id((), now=0) == "19700101T000000Z"
    assert run_id(["protocol.name=laplace", "epsilon=1"], now=0) == "19700101T000000Z-protocol.name=laplace+epsilon=1"
    long = [f"dataset.audit_size={n}" for n in range(10)]
    one, other = run_id(long, now=0), run_id([*long[:-1], "dataset.audit_size=99"], now=0)
    assert one != other and len(one) <= 17 + 48 and "~" in one
    assert "/" not in run_id(["name=../../victim"], now=0)


def _card_commands() -> list[tuple[str, list[str]]]:
    """Every card's scenario and the extra arguments the kit runs it with (card 2: the kit's secrets file)."""
    found = []
    for card in sorted(WORKSHOP.glob("*.md")):
        match = re.search(r"\*\*Catalog scenario:\*\* `parley run ([\w.-]+) --explain`", card.read_text())
        if match:
            extra = ["--secrets", str(CARD_SECRETS)] if "--secrets" in card.read_text() else []
            found.append((match.group(1), extra))
    return found


#: adult-correction (a CP-SAT correction, about 6 s a run) is the system tier, as in test_workshop.py.
@pytest.mark.parametrize(("name", "extra"), [
    # the certificate and mpc cards take the longest: the system tier runs them, the default tier the other three
    pytest.param(name, extra, id=name,
                 marks=[pytest.mark.system] if name in ("adult-correction", "adult-mpc-reveal") else [])
    for name, extra in _card_commands()])
def test_the_workshop_rehearsal_then_the_live_run_of_every_card_succeeds(name, extra, tmp_path, monkeypatch, capsys):
    """docs/workshop/README.md: run each card once before the session, then again in front of the room."""
    monkeypatch.chdir(tmp_path)
    assert main(["run", name, "--set", "backend=local", *extra]) == EXIT_OK  # the rehearsal
    capsys.readouterr()
    assert main(["run", name, "--explain", "--set", "backend=local", *extra]) == EXIT_OK  # live, in front of the room
    assert "learned: " in capsys.readouterr().out
    assert len(_runs(name)) == 2


def test_the_kit_has_a_card_that_spends_budget():
    """The sequence above is a real test only if a card's scenario spends budget (card 2, adult-rr-observer)."""
    assert "adult-rr-observer" in [name for name, _ in _card_commands()]


@pytest.fixture
def noisy_registered(monkeypatch):
    monkeypatch.setitem(protocols.PROTOCOLS, NoisyProtocol.name, NoisyProtocol)


class _StopAfterFlow:
    """Wraps an exchange: the flow runs (and spends), then Ctrl-C lands before the run writes its results."""

    def __init__(self, inner, armed: list[bool]):
        self.inner, self.armed = inner, armed

    def run(self, world):
        metrics = self.inner.run(world)
        if self.armed[0]:
            raise KeyboardInterrupt
        return metrics


@pytest.fixture
def ctrl_c(monkeypatch) -> list[bool]:
    """While ``armed[0]``, every run is interrupted once its flow has run."""
    armed, real = [True], runner.get_exchange
    monkeypatch.setattr(runner, "get_exchange", lambda flow: _StopAfterFlow(real(flow), armed))
    return armed


def test_ctrl_c_marks_the_folder_and_the_same_command_runs_again_in_a_new_folder(quick, noisy_registered, ctrl_c,
                                                                                  capsys):
    assert main(["run", quick, *PRICED]) == EXIT_INTERRUPTED
    (folder,) = _runs()
    assert capsys.readouterr().err.splitlines()[-1] == RUN_INTERRUPTED.format(
        path=folder, status=folder / STATUS_FILE, again=AGAIN_NEW)
    assert json.loads((folder / STATUS_FILE).read_text())["status"] == "interrupted"
    assert _debits(folder / LEDGER_FILE) > 0 and not (Path("runs") / NAME / LATEST).exists()
    ctrl_c[0] = False
    assert main(["run", quick, *PRICED]) == EXIT_OK  # what the message said: a new run in a new folder
    assert len(_runs()) == 2 and (Path("runs") / NAME / LATEST).resolve() != folder.resolve()


def test_ctrl_c_with_out_says_the_re_run_is_refused_until_fresh(quick, noisy_registered, ctrl_c, capsys):
    out = Path("mine")
    assert main(["run", quick, *PRICED, "--out", str(out)]) == EXIT_INTERRUPTED
    assert capsys.readouterr().err.splitlines()[-1] == RUN_INTERRUPTED.format(
        path=out, status=out / STATUS_FILE, again=AGAIN_OUT_SPENT)
    ctrl_c[0] = False
    assert main(["run", quick, *PRICED, "--out", str(out)]) == EXIT_USAGE  # as the message said
    assert "--fresh" in capsys.readouterr().err
    assert main(["run", quick, *PRICED, "--out", str(out), "--fresh"]) == EXIT_OK
    assert not (out / STATUS_FILE).exists()


def test_a_run_that_spends_nothing_is_never_refused_by_a_ledger_in_its_out_folder(quick, capsys):
    """--out keeps its meaning, and its refusal of a spending run stays, evidence and all; a raw run goes on."""
    out = ["--out", "mine"]
    assert main(["run", quick, *FAILING_DP, *out]) == EXIT_USAGE  # spent, then failed
    folder = Path("mine")
    spent = _debits(folder / LEDGER_FILE)
    assert spent > 0
    assert main(["run", quick, *out]) == EXIT_OK  # raw: spends nothing, never refused
    assert _debits(folder / LEDGER_FILE) == spent and (folder / KEPT_TRANSCRIPT).is_file()
    assert _record(folder)["ledger"] is None
    capsys.readouterr()
    assert main(["run", quick, *FAILING_DP, *out]) == EXIT_USAGE  # a spending run is still refused
    assert "holds the privacy ledger of an earlier run" in capsys.readouterr().err
    # The ledger deleted behind the party's back: the kept transcript still records the spending.
    for path in folder.glob(LEDGER_FILE + "*"):
        path.unlink()
    assert main(["run", quick, *out]) == EXIT_OK  # raw again: still fine, and the evidence stays
    capsys.readouterr()
    assert main(["run", quick, *FAILING_DP, *out]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert "the ledger that counted them is gone" in err and KEPT_TRANSCRIPT in err
    assert main(["run", quick, *FAILING_DP, *out, "--fresh"]) == EXIT_USAGE  # the attack stops, but it ran
    assert "the attack stopped" in capsys.readouterr().err and not (folder / KEPT_TRANSCRIPT).exists()


def test_a_named_ledger_is_shared_by_the_runs_that_name_it_and_never_reset_silently(quick, noisy_registered,
                                                                                   capsys):
    priced = PRICED
    ledger = Path("runs/ledgers/dc.sqlite")
    assert main(["run", quick, *priced, "--ledger", "dc"]) == EXIT_OK
    first = _debits(ledger)
    assert first > 0
    capsys.readouterr()
    assert main(["run", quick, *priced, "--ledger", "dc"]) == EXIT_OK  # the same data center, coming back
    err = capsys.readouterr().err
    assert LEDGER_CARRIES.format(ledger=ledger, spent=f"data-center spent epsilon={0.5 * first:.6g}, delta=0 over "
                                                     f"{first} debits") in err
    assert _debits(ledger) == 2 * first
    newest = Path("runs") / NAME / LATEST
    assert _record(newest)["metrics"]["epsilon_spent"] == pytest.approx(2 * 0.5 * first)
    assert not (newest / LEDGER_FILE).exists() and _record(newest)["ledger"]["file"] == str(ledger)
    # Another run, not naming it, is a world of its own: a fresh ledger in its folder.
    assert main(["run", quick, *priced]) == EXIT_OK
    assert _debits(newest / LEDGER_FILE) == first and _debits(ledger) == 2 * first
    # A run that spends nothing names it in vain: never refused, nothing charged, and no word of carrying over.
    capsys.readouterr()
    assert main(["run", quick, "--ledger", "dc"]) == EXIT_OK
    assert _debits(ledger) == 2 * first and "carries over" not in capsys.readouterr().err
    # Deleted behind the party's back: the runs that charged it say so; --fresh is the way out, asked for.
    for path in ledger.parent.glob("dc.sqlite*"):
        if not path.name.endswith((".runs", ".lock")):
            path.unlink()
    capsys.readouterr()
    assert main(["run", quick, *priced, "--ledger", "dc"]) == EXIT_USAGE
    err = capsys.readouterr().err
    assert f"ledger {ledger} is gone" in err and "--fresh" in err and "transcript.jsonl" in err
    assert main(["run", quick, *priced, "--ledger", "dc", "--fresh"]) == EXIT_OK
    assert _debits(ledger) == first


def test_a_named_ledgers_budget_refusals_say_how_much_was_spent_and_where(quick, noisy_registered, capsys):
    priced = [*PRICED, "--set", "budget.epsilon=3"]
    assert main(["run", quick, *priced, "--ledger", "dc"]) == EXIT_OK  # 4 answers: 2 of 3 spent
    capsys.readouterr()
    assert main(["run", quick, *priced, "--ledger", "dc"]) == EXIT_OK  # two more answers, then refused
    err = capsys.readouterr().err
    assert re.search(r"parley: ledger runs/ledgers/dc\.sqlite refused \d+ queries: its budget is spent "
                     r"\(data-center spent epsilon=3, delta=0 of epsilon=3, delta=0 over 6 debits\)", err), err


def test_parley_run_without_out_writes_a_new_folder_and_points_latest(quick):
    import parley

    first = parley.run(quick)
    second = parley.run(quick, attack__targets=4)
    assert first.run_dir != second.run_dir and first.run_dir.parent == Path("runs") / NAME
    assert "attack.targets=4" in second.run_dir.name
    assert (Path("runs") / NAME / LATEST).resolve() == second.run_dir.resolve()
    assert (first.run_dir / "result.json").is_file()
