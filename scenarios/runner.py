"""Run one scenario end to end and write its run folder.

The runner is the referee: :func:`parley.scenarios.world.build_world` gives each party
only what its role holds, the protocol's exchange (:mod:`parley.scenarios.exchanges`) drives
the exchange and scores the adversary's reconstruction against the truth that
no party handed over, and the runner adds what every run reports (messages,
bytes, budget spent, timings) and writes the run folder. Randomness: the public
seed spawns the simulated world's streams; each party's private randomness comes
from the run's secrets (:mod:`parley.parties.run_secrets`), so the same seed and
the same secrets file give the same ``result.json`` (timings and package
versions aside).
"""

from __future__ import annotations

import contextlib
import functools
import json
import math
import platform
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.compliance import PURPOSE_SEPARATOR
from parley.parties.network import LocalDeployment
from parley.parties.run_secrets import RunSecrets, SecretsError
from parley.parties.transcript import TranscriptFollower
from parley.scenarios.datasets import Table
from parley.scenarios.exchanges import get_exchange
from parley.scenarios.progress import Display, RunProgress
from parley.scenarios.report import write_report
from parley.scenarios.report_html import warm_up, write_html_report
from parley.scenarios.run_folder import (
    STATUS_FILE,
    claim,
    claim_ledger,
    inside,
    mark,
    record_charges,
    settle_charges,
    spends_budget,
)
from parley.scenarios.spec import Scenario
from parley.scenarios.world import DATA_CENTER, LEDGER_FILE, PARTY_SLOTS, World, build_world

__all__ = ["LEDGER_FILE", "PARTY_SLOTS", "Result", "SECRETS_IN_RUN_FOLDER", "VOLATILE", "leakage_bound", "run"]

SECRETS_IN_RUN_FOLDER = ("the secrets file {path} is inside the run folder {run_dir}, which is published with its "
                         "results: keep it elsewhere (whoever holds it can remove the run's noise)")
#: Keys of result.json that vary between runs of the same seed.
VOLATILE = ("wall_s", "versions", "attack_decode_s", "transcript")


@dataclass(frozen=True)
class Result:
    """The outcome of one run: ``record`` is exactly what ``result.json`` holds."""

    record: dict[str, Any]
    run_dir: Path

    @property
    def metrics(self) -> dict[str, Any]:
        """The measured quantities (leakage, queries, messages, bytes, ...)."""
        return dict(self.record["metrics"])

    @property
    def learned(self) -> list[tuple[int, str]]:
        """What the flow reported was learned, as (message number, sentence) (see ``World.learned``)."""
        return [(int(after), str(text)) for after, text in self.record.get("learned", [])]

    @property
    def transcript_path(self) -> Path:
        return self.run_dir / "transcript.jsonl"

    def to_pandas(self) -> Any:
        """One-row DataFrame: scenario fields and metrics side by side (for studies and notebooks)."""
        import pandas as pd

        row = {k: v for k, v in self.record.items() if not isinstance(v, (dict, list))}
        row.update(self.record["metrics"])
        return pd.DataFrame([row])

    def __repr__(self) -> str:
        """One line: scenario, protocol, attack, leakage (and its bound), queries, folder."""
        from parley.scenarios.notebook import result_repr

        return result_repr(self)

    def _repr_html_(self) -> str:
        """A notebook's view: the headline metrics, the leakage beside its bound, the run's figures inline."""
        from parley.scenarios.notebook import result_html

        return result_html(self)


@functools.lru_cache(maxsize=1)
def _versions() -> dict[str, str]:
    out = {"python": platform.python_version()}
    for name in ("parley", "ray", "numpy", "scipy", "scikit-learn", "cryptography", "pynacl", "pydantic", "fairlearn"):
        try:
            out[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            out[name] = "not installed"
    return out


def _clean(value: Any) -> Any:
    """JSON-ready: numpy scalars to Python, NaN/inf to None."""
    if isinstance(value, dict):
        return {k: _clean(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v) for v in value]
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, float) and not np.isfinite(value):
        return None
    return value


def leakage_bound(epsilon: float, delta: float) -> float:
    """Per-individual cap on an attacker's success in %: (e^eps + delta) / (1 + e^eps).

    (eps, delta)-DP caps the chance of guessing any one a_j without other knowledge; it bounds
    the expectation, not one run's leakage.
    """
    if epsilon >= 700:
        return 100.0
    return min(100.0, 100.0 * (1.0 + delta * math.exp(-epsilon)) / (1.0 + math.exp(-epsilon)))


def run(scenario: Scenario, out: str | Path | None = None, address: str | None = None, *,
        table: Table | None = None, hosts: dict[str, Any] | None = None, split: Any = None, fresh: bool = False,
        progress: Display | None = None, in_process: bool = False, reports: bool = True,
        secrets: RunSecrets | str | Path | None = None, ledger: str | Path | None = None) -> Result:
    """Run ``scenario``; write ``result.json``, ``transcript.jsonl`` and ``report.md`` into ``out``.

    Parameters
    ----------
    scenario : Scenario
        What to run.
    out : path-like, optional
        Run folder (created); a fresh temporary folder if omitted.
    address : str, optional
        Ray cluster to join: ``HOST:PORT`` (``ray start --head`` prints it) or ``"auto"`` for the one on
        this machine; a private local Ray instance if omitted (:func:`parley.parties.ray.cluster.ensure_ray`).
        The party hosts run on the caller's node, so the ledger lands in ``out`` on this machine.
    table : Table, optional
        The data set's parsed table, if the caller holds it already (studies).
    hosts : dict, optional
        Party host actors to reuse (studies); see :class:`parley.parties.ray.deployment.RayDeployment`.
    split : Split, optional
        A fixed split to use instead of the seed's (the whole-scenario privacy audit).
    fresh : bool
        Discard a ledger with debits that an earlier run left in ``out`` (without it such a folder
        is refused: a ledger is never reset silently; see :mod:`parley.scenarios.run_folder`), or,
        with ``ledger``, start that named ledger anew (and only it: ``out``'s own ledger is left alone;
        a run whose protocol spends no budget ignores ``ledger`` and so ``fresh`` too). A transcript whose
        answers a named ledger charged is never discarded: it is kept beside, as that ledger's evidence.
        A run whose protocol spends no budget is never refused because of a ledger (an earlier one is
        left as it is).
    progress : Display, optional
        Where to show the run's status while it goes (``parley run`` passes a
        :class:`parley.scenarios.progress.StatusLine` on a terminal): messages, queries answered to the
        adversary, people pinned down, epsilon spent, time left where known. Erased before ``run`` returns.
    in_process : bool
        Run the parties as plain objects in this process whatever the scenario's ``backend`` (a study
        worker, a Ray actor of its own, does so by default; :mod:`parley.scenarios.study.engine`). The
        wire is the same: every envelope signed, verified, logged in the transcript; the same ledger.
    reports : bool
        Write ``report.md`` and ``report.html`` (default). A study whose run folders are not kept turns
        them off: drawing the report's figures took most of a small cell's time, for files deleted at once.
    secrets : RunSecrets or path-like, optional
        The parties' secrets (:mod:`parley.parties.run_secrets`): their noise, keys and masks. None (default):
        fresh from OS entropy, kept nowhere, so the noise cannot be reproduced. A path: read from that secrets
        file, or fresh ones written there if it does not exist; the same file replays the same releases.
        Never derived from the scenario's seed, which is public.

    ledger : path-like, optional
        A ledger file that outlives this run (a compliance party that comes back: ``parley run --ledger``,
        :func:`parley.scenarios.run_folder.claim_ledger`): opened as it is, never reset unless ``fresh``,
        shared by every run that names it; the run's own ``ledger.sqlite`` otherwise. Unused by a
        protocol that spends no budget.

    A run that raises (or is interrupted) leaves ``out`` marked with ``status.json``
    (:func:`parley.scenarios.run_folder.mark`); a completed run removes that mark.

    Raises
    ------
    RunFolderBusyError
        Another run is writing into ``out`` (or holds ``ledger``).
    LedgerInFolderError
        ``out`` holds an earlier run's ledger with debits (or ``ledger`` was deleted after runs charged it)
        and ``fresh`` is False.
    """
    started = time.perf_counter()
    run_dir = Path(out) if out is not None else Path(tempfile.mkdtemp(prefix=f"parley-{scenario.name}-"))
    if isinstance(secrets, (str, Path)) and Path(secrets).resolve().is_relative_to(run_dir.resolve()):
        raise SecretsError(SECRETS_IN_RUN_FOLDER.format(path=secrets, run_dir=run_dir))
    run_secrets = RunSecrets.resolve(secrets)
    spends = spends_budget(scenario)
    shared = Path(ledger) if ledger is not None and spends else None
    # The folder is locked for this run; a failed run must not leave an older run's results behind. With a
    # named ledger, --fresh is that ledger's (and a run that spends nothing ignores both): never the folder's.
    with claim(run_dir, LEDGER_FILE, _STALE, fresh=fresh and ledger is None,
               written=("transcript.jsonl", "transcript.jsonl.blobs"), spends=spends, shared=shared), \
            _shared(shared, run_dir, fresh):
        try:
            if spends:  # which ledger this run's transcript is charged to, before anything is charged
                record_charges(run_dir, shared, anew=fresh and shared is not None)
            result = _run_in(scenario, run_dir, started, address, table, hosts, split, run_secrets, progress,
                             in_process, reports, shared)
            if result.record.get("ledger") is not None:
                settle_charges(run_dir, shared if shared is not None else run_dir / LEDGER_FILE,
                               result.record["transcript"]["head"])
            return result
        except BaseException as exc:
            mark(run_dir, "interrupted" if isinstance(exc, KeyboardInterrupt) else "failed", scenario.name, exc)
            raise


@contextlib.contextmanager
def _shared(ledger: Path | None, run_dir: Path, fresh: bool) -> Iterator[None]:
    """Hold the named ledger ``ledger`` for the run (nothing if the run keeps its own)."""
    if ledger is None:
        yield
        return
    with claim_ledger(ledger, run_dir / "transcript.jsonl", fresh=fresh):
        yield


#: An earlier run's outputs, removed before a run starts (its ledger is handled apart, by ``claim``;
#: ``transcript.jsonl`` and its blob file are replaced when the parties start).
_STALE = ("result.json", "report.md", "report.html", STATUS_FILE)


def _watch(world: World, display: Display) -> None:
    """Show ``world``'s progress on ``display``: the network reports each envelope, the ledger what was spent."""
    def spent() -> float:
        return _querier_spent(world.compliance.stats()["epsilon_spent"]) or 0.0

    limit = world.scenario.budget.to_budget().epsilon if world.scenario.budget is not None else None
    world.progress = RunProgress(display, spent if world.ledger_path is not None else None, limit)
    world.network.observer = world.progress


def _querier_spent(by_account: dict[str, float]) -> float | None:
    """What the data center's name spent: its account, or the sum over its purposes' accounts (None if none).

    Accounts of different purposes compose sequentially (basic composition): the sum bounds the querier's loss.
    """
    mine = [v for k, v in by_account.items() if k == DATA_CENTER or k.startswith(DATA_CENTER + PURPOSE_SEPARATOR)]
    return float(sum(mine)) if mine else None


def _run_in(scenario: Scenario, run_dir: Path, started: float, address: str | None, table: Table | None,
            hosts: dict[str, Any] | None, split: Any, secrets: RunSecrets, display: Display | None = None,
            in_process: bool = False, reports: bool = True, ledger: Path | None = None) -> Result:
    """The run proper, in a folder :func:`parley.scenarios.run_folder.claim` holds."""
    world = build_world(scenario, run_dir, address, table, hosts, split, in_process, secrets, ledger)
    if reports and not isinstance(world.deployment, LocalDeployment):
        warm_up()  # the driver waits for its parties' first replies meanwhile
    if display is not None:
        _watch(world, display)
    # The report verifies the transcript; over Ray most of it is done while the run waits for its parties.
    follower = TranscriptFollower(world.transcript) if reports else None
    if follower is not None:
        world.network.idle = follower.step
    try:
        flow_metrics = get_exchange(world.protocol.flow).run(world)
        if world.progress is not None:
            world.progress.flush()  # the final counts, whatever the pace of the line
        world.transcript.close()  # every party signs the final head (a flow may have closed it already)
        compliance_stats = world.compliance.stats()
        ledger_summary = world.compliance.ledger_summary() if world.ledger_path else None
        world.compliance.close()
    except BaseException:
        # An interrupted or failed run ends without the parties' end record: its transcript is incomplete,
        # never intact (a transcript the flow had already closed stays as the parties signed it).
        world.transcript.abort()
        if follower is not None:
            follower.close()
        raise
    finally:
        if display is not None:
            display.clear()
        world.deployment.shutdown()

    split = world.split
    spent = world.ledger_path is not None
    metrics: dict[str, Any] = {
        **flow_metrics,
        "messages": world.network.messages,
        "bytes": world.network.bytes,
        "refusals": compliance_stats["refusals_sent"],
        "budget_refusals": compliance_stats["budget_refusals"],
        # What the data center's name spent (honest queries and the attack), None if the protocol spends nothing.
        "epsilon_spent": _querier_spent(compliance_stats["epsilon_spent"]) if spent else None,
        "delta_spent": _querier_spent(compliance_stats["delta_spent"]) if spent else None,
        "wall_s": round(time.perf_counter() - started, 3),
    }
    if metrics["epsilon_spent"] is not None:
        metrics["leakage_bound"] = leakage_bound(metrics["epsilon_spent"], metrics["delta_spent"] or 0.0)
    record = _clean({
        "scenario": scenario.name,
        "description": scenario.description,
        "threat_model": scenario.threat_model,
        "protocol": scenario.protocol.name,
        "attack": scenario.attack.name,
        "dataset": split.table.name,
        "protected": split.table.protected,
        "groups": {f"a={code}": label for code, label in enumerate(split.table.groups)},
        "seed": scenario.seed,
        # Where the parties' private randomness came from (never the seed), not what it is.
        "secrets": secrets.describe(),
        "sizes": {"n_train": int(split.X_train.shape[0]), "n_audit": int(split.X_audit.shape[0]),
                  "n_features": int(split.X_train.shape[1]),
                  # Rows the data set's loader dropped for a missing value (a user CSV's blank cells).
                  "rows_dropped": int(getattr(split.table, "rows_dropped", 0))},
        "metrics": metrics,
        "learned": [[after, text] for after, text in world.learned],
        "knowledge": [list(step) for step in world.knowledge],
        "ledger": None if ledger_summary is None else {"file": LEDGER_FILE if ledger is None else str(ledger),
                                                       **ledger_summary},
        # Anchors of the transcript: check a copy with `parley verify RUN --keys ... --head ...`.
        "transcript": {"file": "transcript.jsonl", "messages": world.transcript.messages,
                       "head": world.transcript.final_head, "keys": world.transcript.fingerprints},
        "spec": scenario.to_dict(),
        "versions": dict(_versions()),
    })
    inside(run_dir, "result.json").write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    if reports:
        try:
            write_report(record, run_dir)
            write_html_report(record, run_dir, follower)
        finally:
            if follower is not None:
                follower.close()
    return Result(record=record, run_dir=run_dir)
