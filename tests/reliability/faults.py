"""Fault injection for the fault campaign: party hosts and study workers killed at seeded points.

Two ways to hit a run:

* :class:`Injector` (a run in this process on the Ray backend): strikes at a
  call it controls, never at a time. At the k-th call the run's deployment
  makes (counted over every party; the campaign picks k among the calls to
  the target), it arms the target's host actor (``__ray_call__``, ordered
  before the call itself) so that the process ends (``os._exit``) inside that
  call: on entry, before the party runs the method (``mode="before"``), or
  after the party ran it and before the reply leaves (``mode="during"``: the
  party's work is done, a debit committed, and the reply is lost). The fault
  fires exactly once whatever the machine's load; the deployment sees the
  host die (Ray restarts it), restores the party and retries the call.
  ``relentless`` also ends the host's process each time the deployment tries
  to restore it, so the run must stop with
  :class:`parley.parties.ray.deployment.PartyLostError`.
* :class:`StudyKiller` (a study): a thread that, at seeded random times, kills
  this job's party hosts (found by name in the job's namespace) or one of its
  study-worker processes (by the PID Ray's actor table gives for this job; never
  a machine-wide process search, which would hit other Ray sessions).

:func:`check_run` then reads what a run left behind and fails on any broken
promise: the transcript verifies; every answer the compliance party sent has
its debit in the ledger with exactly the payload sent; no query id got two
different answers; each querier's ledger total equals the sum of its debits;
in a completed run every debit was delivered.
"""

from __future__ import annotations

import math
import os
import signal
import threading
from collections import defaultdict
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
import ray

from parley.parties.ledger import Ledger
from parley.parties.party import REFUSAL
from parley.parties.ray.deployment import RayDeployment
from parley.parties.ray.hosts import HOST_PREFIX
from parley.parties.transcript import read_transcript, verify_transcript
from parley.parties.wire import payload_digest
from parley.protocols.errors import IncompleteTranscriptError

__all__ = ["ANSWER_KINDS", "Fault", "Injector", "StudyKiller", "check_run", "job_actor_pids", "kill_host"]

COMPLIANCE, DATA_CENTER, ADVERSARY = "compliance", "data-center", "adversary"


def kill_host(handle: Any) -> None:
    """Kill a party host as a crash would, leaving Ray free to restart it."""
    ray.kill(handle, no_restart=False)


def job_actor_pids(class_name: str, alive: bool = True) -> list[int]:
    """PIDs of this job's actors of ``class_name`` (Ray's actor table: only this session, only this job)."""
    from ray._private import state

    job = ray.get_runtime_context().get_job_id()
    return sorted(int(info["Pid"]) for info in state.actors().values()
                  if info.get("ActorClassName") == class_name and info.get("JobID") == job and info.get("Pid")
                  and (not alive or info.get("State") == "ALIVE"))


def _exit_process(host: Any) -> None:
    """Run inside a host actor: its process ends at once, as in a crash."""
    os._exit(1)


def _arm_exit(host: Any, method: str, mode: str) -> None:
    """Run inside a host actor: its party's next ``method`` call ends the process, on entry or before returning.

    An attribute of the party object shadows the class's method for that one
    process; the restarted process loads a fresh party without it.
    """
    if host.party is None:
        raise RuntimeError(f"cannot arm a fault on {method!r}: the host holds no party")
    original = getattr(host.party, method)

    def dying(*args: Any, **kwargs: Any) -> Any:
        if mode == "before":
            os._exit(1)
        original(*args, **kwargs)  # the party does its work (and commits what it commits) ...
        os._exit(1)  # ... and the process dies before the reply leaves

    setattr(host.party, method, dying)


@dataclass(frozen=True)
class Fault:
    """Where to strike: ``target``'s host, at deployment call ``at_call`` (1-based), ``mode`` before/during it.

    The fault strikes inside the first call to ``target`` (of ``method``, when
    given) at or after deployment call ``at_call`` (the campaign picks calls to
    the target, so it strikes there).
    """

    target: str
    at_call: int
    mode: str = "before"
    relentless: bool = False
    method: str | None = None


@dataclass
class Injector:
    """Installs itself on :class:`RayDeployment` for one run and fires ``fault`` once (see the module docstring)."""

    fault: Fault | None = None
    calls: int = 0
    fired: int = 0
    slots_called: list[str] = field(default_factory=list)
    deployment: RayDeployment | None = None

    #: (slot, method, mode) of the call the fault was armed on.
    armed: tuple[str, str, str] | None = None

    #: The deployment call (1-based) the fault struck inside.
    struck_at: int | None = None

    #: Calls to the target submitted before that call and not settled when it was armed (> 0: inside a burst).
    under_way: int = 0

    def _arm(self, deployment: RayDeployment, slot: str, method: str) -> None:
        fault = self.fault
        assert fault is not None
        self.under_way = sum(not call.settled for call in deployment._pending.get(slot, ()))
        handle = deployment.hosts[slot]
        deployment._get(handle.__ray_call__.remote(_arm_exit, method, fault.mode))
        self.armed = (slot, method, fault.mode)
        self.struck_at = self.calls
        self.fired += 1

    @contextmanager
    def installed(self) -> Iterator[Injector]:
        # Every call goes through _submit: call (which waits on it at once) and submit (the network posts
        # deliveries with it, pipelined) alike.
        original_submit, original_restore = RayDeployment._submit, RayDeployment._restore
        injector = self

        def submit(deployment: RayDeployment, slot: str, method: str, args: tuple, kwargs: dict,
                   watch: bool = True) -> Any:
            injector.deployment = deployment
            injector.calls += 1
            injector.slots_called.append(slot)
            fault = injector.fault
            if (fault is not None and injector.armed is None and injector.calls >= fault.at_call
                    and slot == fault.target and fault.method in (None, method)):
                injector._arm(deployment, slot, method)  # the host dies inside this very call
            return original_submit(deployment, slot, method, args, kwargs, watch)

        def restore(deployment: RayDeployment, slot: str) -> None:
            fault = injector.fault
            if fault is not None and fault.relentless and slot == fault.target:
                # It dies again each time it is brought back: its process exits while being restored
                # (an unplanned exit, so Ray restarts it or the deployment replaces it).
                injector.fired += 1
                deployment._get(deployment.hosts[slot].__ray_call__.remote(_exit_process))
            return original_restore(deployment, slot)

        RayDeployment._submit, RayDeployment._restore = submit, restore
        try:
            yield self
        finally:
            RayDeployment._submit, RayDeployment._restore = original_submit, original_restore


class StudyKiller:
    """Kills, at seeded random times, a compliance host, a data-center host or a study worker of this job."""

    def __init__(self, seed: int, every_s: tuple[float, float] = (1.0, 3.0), limit: int = 4) -> None:
        self.rng = np.random.default_rng(seed)
        self.every_s = every_s
        self.limit = limit
        self.kills: list[str] = []
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _strike(self) -> str | None:
        what = ("compliance", "data-center", "worker")[int(self.rng.integers(3))]
        if what == "worker":
            pids = job_actor_pids("StudyWorker")
            if not pids:
                return None
            os.kill(pids[int(self.rng.integers(len(pids)))], signal.SIGKILL)
            return "worker"
        names = sorted(n for n in ray.util.list_named_actors() if n.startswith(f"{HOST_PREFIX}{what}-"))
        if not names:
            return None
        try:
            kill_host(ray.get_actor(names[int(self.rng.integers(len(names)))]))
        except ValueError:  # gone between listing and lookup
            return None
        return what

    def _run(self) -> None:
        while len(self.kills) < self.limit and not self._stop.wait(float(self.rng.uniform(*self.every_s))):
            hit = self._strike()
            if hit is not None:
                self.kills.append(hit)

    def __enter__(self) -> StudyKiller:
        self._thread.start()
        return self

    def __exit__(self, *exc: Any) -> None:
        self._stop.set()
        self._thread.join()


ANSWER_KINDS = ("metric-answer", "attribute-release", "accept-set", "fairness-certificate")


def check_run(run_dir: Path, completed: bool) -> dict[str, int]:
    """Check a run folder's transcript and ledger (see the module docstring); return what was checked.

    Raises AssertionError naming the first broken promise.
    """
    transcript = Path(run_dir) / "transcript.jsonl"
    try:
        messages = verify_transcript(transcript)  # raises TranscriptError at the first bad line
        ended = True
    except IncompleteTranscriptError as exc:  # a run that stopped has no end record: every line present verified
        assert not completed, f"a completed run left an incomplete transcript: {exc}"
        messages, ended = exc.messages, False
    answers: dict[tuple[str, str], set[str]] = defaultdict(set)
    for envelope in read_transcript(transcript, verify=ended):
        if envelope.sender == COMPLIANCE and envelope.kind in ANSWER_KINDS and envelope.kind != REFUSAL:
            answers[(envelope.recipient, str(envelope.payload.get("query_id")))].add(envelope.digest)
    twice = {key: digests for key, digests in answers.items() if len(digests) > 1}
    assert not twice, f"query ids answered with different payloads: {twice}"
    out = {"messages": messages, "answers": len(answers), "debits": 0, "undelivered_debits": 0}
    ledger_path = Path(run_dir) / "ledger.sqlite"
    if not ledger_path.is_file():
        return out
    with Ledger(ledger_path) as ledger:
        entries = ledger.entries()
        by_querier: dict[str, list[float]] = defaultdict(list)
        for entry in entries:
            by_querier[entry["querier"]].append(entry["epsilon"])
        for querier, spent in ledger.total().items():
            if ledger.method == "sequential":
                debits = math.fsum(by_querier.get(querier, []))
                assert math.isclose(spent.epsilon, debits, rel_tol=1e-12, abs_tol=1e-12), (
                    f"{querier}: ledger total {spent.epsilon} != sum of its debits {by_querier.get(querier)}")
        for (querier, query_id), digests in answers.items():
            debit = ledger.debit(query_id)
            assert debit is not None, f"answer to {query_id!r} sent to {querier} has no debit in the ledger"
            assert debit.querier == querier, (
                f"debit of {query_id!r} charged to {debit.querier}, answer sent to {querier}")
            assert payload_digest(debit.answer) in digests, f"answer to {query_id!r} differs from the ledger's record"
        undelivered = [e["query_id"] for e in entries if (e["querier"], e["query_id"]) not in answers]
    if completed:
        assert not undelivered, f"debits of a completed run never delivered: {undelivered}"
    out.update(debits=len(entries), undelivered_debits=len(undelivered))
    return out

