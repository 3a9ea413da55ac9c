"""Fault campaign: party actors and study workers killed at seeded points; every run completes or stops typed.

Each run here goes through the Ray backend. :class:`tests.reliability.faults.Injector`
ends the process of the compliance party's, the data center's or the adversary's host
actor inside a seeded deployment call to it (on entry, or after the party did its work
and before the reply leaves): a call the injector controls, never a time, so every
planned fault fires exactly once however loaded the machine is. Ray restarts the host and
:class:`parley.parties.ray.deployment.RayDeployment` restores the party (load, journal replay, ledger
reopened) and retries the call. After every run :func:`tests.reliability.faults.check_run`
checks the transcript, the ledger and the answers. A run hit by a fault must give the
result of the same run without one wherever the fault cannot change it: a data-center
restart never does (its replay is exact), nor does a compliance restart under a protocol
without noise. Under a noisy protocol the answers after a compliance restart draw fresh
noise (never noise an earlier answer used), so the result may differ but the budget spent
may not. ``test_default_run_survives_a_compliance_kill`` is the default-run smoke test.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

from parley.parties.ray.deployment import RECOVERIES_PER_CALL, PartyLostError
from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import VOLATILE, run
from parley.scenarios.spec import Scenario
from parley.scenarios.study import Study
from parley.scenarios.study.engine import run_study

from .faults import ADVERSARY, COMPLIANCE, DATA_CENTER, Fault, Injector, StudyKiller, check_run

pytestmark = pytest.mark.ray

#: Small catalog runs, one per kind of exchange: Ray backend, sizes cut so the campaign stays fast.
SCENARIOS = {
    "adult-conceal": {},  # smooth-sensitivity Cauchy noise, ledger, 40 probes
    "adult-raw-double-query": {"dataset.audit_size": 300},  # exact answers, one query per target
    "adult-rr-audit": {"dataset.audit_size": 500, "dataset.train_size": 1500},  # a release charged once
    "compas-cov-threshold": {"learner.hypotheses": 40},  # accept sets, learning in their span
}
#: Faults per scenario: the party whose host dies and when. The adversary is the data center's querier
#: once it defects (it queries in the data center's name), so it is struck as the data center's side too.
PLAN = ((COMPLIANCE, "before"), (DATA_CENTER, "before"), (COMPLIANCE, "during"), (ADVERSARY, "during"))
NOISELESS = ("raw", "cov-threshold")
SEED = 2026


def _scenario(name: str) -> Scenario:
    return Scenario.from_toml(scenario_path(name)).with_values({"backend": "ray", **SCENARIOS[name]})


def _comparable(metrics: dict) -> dict:
    return {k: v for k, v in metrics.items() if k not in VOLATILE}


def _faulty_run(scenario: Scenario, fault: Fault, out) -> tuple[dict | None, str | None, Injector]:
    """Run with ``fault``; (metrics, None) if it completed, (None, typed error) if it stopped."""
    with Injector(fault).installed() as injector:
        try:
            metrics = run(scenario, out).metrics
        except PartyLostError as exc:
            return None, f"{type(exc).__name__}: {exc}", injector
    return metrics, None, injector


def _report(name: str, rows: list[dict]) -> None:
    for row in rows:
        print(f"FAULT {name}: " + json.dumps(row, sort_keys=True))


@pytest.mark.reliability
@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_runs_survive_party_kills_at_seeded_points(ray_session, tmp_path, name):
    scenario = _scenario(name)
    with Injector().installed() as clean:  # no fault: counts the calls a fault may strike at
        reference = run(scenario, tmp_path / "clean").metrics
    check_run(tmp_path / "clean", completed=True)
    rng = np.random.default_rng([SEED, sorted(SCENARIOS).index(name)])
    rows = []
    for i, (target, mode) in enumerate(PLAN):
        # A call to the target itself (the host dies inside that call, so any of them will do).
        if target not in clean.slots_called:  # no adversary party in this flow: the data center again
            target = DATA_CENTER
        points = [k for k, slot in enumerate(clean.slots_called, start=1) if slot == target]
        fault = Fault(target, int(rng.choice(points)), mode)
        metrics, error, injector = _faulty_run(scenario, fault, tmp_path / f"fault-{i}")
        assert error is None, f"{fault}: {error}"
        assert injector.fired == 1 and injector.struck_at == fault.at_call, (fault, injector.struck_at)
        # The host died inside the planned call, so the deployment restored exactly that party, exactly once.
        assert dict(injector.deployment.recoveries) == {target: 1}, (fault, injector.deployment.recoveries)
        checked = check_run(tmp_path / f"fault-{i}", completed=True)
        recoveries = dict(injector.deployment.recoveries)
        # What a fault may not change: everything, unless the compliance party restarted under noise.
        if not recoveries.get(COMPLIANCE) or scenario.protocol.name in NOISELESS:
            assert _comparable(metrics) == _comparable(reference), fault
        else:
            assert metrics["epsilon_spent"] == reference["epsilon_spent"], fault
        rows.append({"fault": f"{target} {mode} call {fault.at_call}/{clean.calls} ({injector.armed[1]})",
                     "recoveries": recoveries,
                     "exercised": bool(recoveries.get(target)),
                     "completed": True, **checked})
    _report(name, rows)


@pytest.mark.reliability
@pytest.mark.parametrize("name", ["adult-conceal", "adult-rr-audit"])
def test_a_party_that_dies_each_time_it_is_restored_stops_the_run_typed(ray_session, tmp_path, name):
    scenario = _scenario(name)
    fault = Fault(COMPLIANCE, at_call=3, mode="before", relentless=True)
    metrics, error, injector = _faulty_run(scenario, fault, tmp_path / "run")
    assert metrics is None and error.startswith("PartyLostError: the 'compliance' party was lost"), error
    assert injector.fired == 1 + RECOVERIES_PER_CALL
    checked = check_run(tmp_path / "run", completed=False)  # the transcript is closed, the ledger consistent
    _report(name, [{"fault": f"compliance relentless from call 3 ({injector.fired} kills)", "completed": False,
                    "error": error.split(":")[0], **checked}])


@pytest.mark.reliability
def test_a_study_survives_hosts_and_workers_killed_at_random_times(ray_session, tmp_path):
    base = Scenario.from_toml(scenario_path("adult-conceal")).to_dict()
    study = Study.from_dict({"name": "faults", "scenario": base, "repeats": 2,
                             "grid": {"attack.max_queries": [20, 30, 40]}, "max_attempts": 3})
    with StudyKiller(seed=SEED, every_s=(0.5, 2.5), limit=6) as killer:  # party processes to kill: actors
        done = run_study(study, tmp_path, workers=2, progress=False, party_hosts="actors")
    rows = done.results
    assert len(rows) == 6
    assert (rows["status"] == "ok").all(), rows[["status", "failure"]]
    for folder in sorted((tmp_path / "cells").iterdir()):
        check_run(folder, completed=True)
    print("FAULT study: " + json.dumps({"kills": killer.kills, "cells": len(rows),
                                        "attempts": rows["attempts"].tolist()}))
    assert killer.kills, "no fault was injected"


#: A small run with a ledger for the default run: Laplace answers (noise far below a unit step at this
#: epsilon, so the double-query attack on 3 targets still reads them), one debit per query.
TINY = {"name": "tiny-laplace", "backend": "ray",
        "dataset": {"name": "synthetic", "audit_size": 200, "minority": 30, "train_size": 1000},
        "protocol": {"name": "laplace", "epsilon": 1e12}, "attack": {"name": "double-query", "targets": 3}}


def test_default_run_survives_a_compliance_kill(ray_session, tmp_path):
    """Default run: the compliance host dies inside its first ``deliver``, after the query's debit is committed
    and before the answer leaves; the retry is answered from the ledger and the run completes, one debit per query."""
    scenario = Scenario.from_dict(TINY)
    fault = Fault(COMPLIANCE, at_call=1, mode="during", method="deliver")
    metrics, error, injector = _faulty_run(scenario, fault, tmp_path / "run")
    assert error is None, error
    assert injector.fired == 1 and injector.armed == (COMPLIANCE, "deliver", "during"), injector.slots_called
    assert injector.deployment.recoveries == {COMPLIANCE: 1}, injector.slots_called
    checked = check_run(tmp_path / "run", completed=True)
    # One debit per query: the honest audit queries and the attack's, none twice, every one delivered.
    assert checked["debits"] == len(scenario.audit_metrics) + metrics["queries"] and checked["undelivered_debits"] == 0


#: The precision attack over Ray: ~100 block queries, most of them in pipelined bursts of up to 64.
PRECISION = {"dataset.name": "synthetic", "dataset.audit_size": 3000, "dataset.minority": 300,
             "dataset.train_size": 800, "backend": "ray"}


@pytest.mark.reliability
@pytest.mark.parametrize(("target", "mode"), [(COMPLIANCE, "during"), (ADVERSARY, "during"), (COMPLIANCE, "before"),
                                              (ADVERSARY, "before")])
def test_a_precision_run_survives_a_kill_inside_a_burst(ray_session, tmp_path, target, mode):
    """A host dies inside a delivery with earlier deliveries of the same burst still under way: the party is
    restored from its journal, the calls not settled are sent again, and the run gives the clean run's result."""
    scenario = Scenario.from_toml(scenario_path("adult-reveal-precision")).with_values(PRECISION)
    with Injector().installed() as clean:
        reference = run(scenario, tmp_path / "clean").metrics
    points = [k for k, slot in enumerate(clean.slots_called, start=1) if slot == target]
    fault = Fault(target, points[len(points) // 2], mode, method="deliver")  # mid-run: inside the first burst
    metrics, error, injector = _faulty_run(scenario, fault, tmp_path / "fault")
    assert error is None, error
    assert injector.fired == 1 and injector.armed == (target, "deliver", mode)
    assert injector.under_way >= 1, "the fault did not strike inside a burst"
    assert dict(injector.deployment.recoveries) == {target: 1}
    checked = check_run(tmp_path / "fault", completed=True)
    assert _comparable(metrics) == _comparable(reference)
    _report("adult-reveal-precision", [{"fault": f"{target} {mode} call {fault.at_call}/{clean.calls}",
                                        "under_way": injector.under_way, **checked}])
