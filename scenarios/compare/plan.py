"""What ``parley compare`` runs: protocol configurations x applicable attacks, and how each defines utility.

Rows are protocol configurations (a protocol at one epsilon, or at one m, the
number of hypotheses of the cov-threshold exchange); columns are attacks under
one threat model each. Whether an attack applies to a protocol is decided by
the scenario checks of :mod:`parley.scenarios.spec` (the attack's flows must contain
the protocol's flow, the threat model must be one of the attack's): the plan
builds the cell's scenario and keeps the check's message as the reason of an
empty cell. The settings below keep every cell cheap enough for the time limits
(``--quick``: 3 minutes on 2 cores; full: 20 minutes on Adult); they are the
only tuning of the comparison and are printed in its report.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from parley import protocols
from parley.parties.attacks import ATTACKS
from parley.protocols.errors import ConfigError, InternalError
from parley.scenarios.compare.audit import AUDITABLE_FLOWS
from parley.scenarios.spec import Scenario, _validate

__all__ = ["Column", "Plan", "Row", "UTILITY", "Utility", "plan", "BAD_DATASET_FOR_COMPARE", "NOISE_LAW_ATTACKS",
           "NO_NOISE_LAW"]

ROW_FLOW = "compare row {label!r} does not run a {flow!r} exchange (a bug in the comparison plan)"
UNKNOWN_ROW = "compare has no protocol row {rows}; rows: {known}"
BAD_DATASET_FOR_COMPARE = "compare runs on a named data set (one of {known}), got {name!r}"
#: Why a noise-law attack has no cell in a row whose protocol adds no noise (and so publishes no noise law).
NO_NOISE_LAW = ("attack {attack!r} decodes answers under the noise law a DP protocol publishes with them; protocol "
                "{protocol!r} adds no noise")
#: Attacks that need a DP protocol's published noise law (a protocol with an ``epsilon`` parameter).
NOISE_LAW_ATTACKS = ("likelihood",)


def cell_name(row: str, column: str) -> str:
    """A cell's scenario name, safe as a folder name.

    ``laplace ε=1`` x ``double-query [curious-data-center]`` ->
    ``compare-laplace-eps-1-double-query-curious-data-center``.
    """
    text = f"compare {row} {column}".replace("ε", "eps").replace("ρ", "rho")
    return re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-")[:100]
COMPARE_DATASETS = ("adult", "german", "compas")


@dataclass(frozen=True)
class Utility:
    """How a flow's protocols define what the data center gets: one accuracy-like or error-like number, and fairness."""

    key: str  # result.json metric
    label: str
    higher_is_better: bool
    short: str = ""  # the name in sentences
    fairness_key: str | None = None  # unfairness of the learned model (lower is fairer)
    fairness_label: str = ""
    fairness_short: str = "unfairness"
    transform: str = "identity"  # "one-minus": key holds an error rate, utility is 1 - it
    #: Measure on the runs of this threat model only (their traffic is the honest use alone), if any ran.
    honest_threat: str | None = None


#: The one place where utility is defined, per flow.
UTILITY: dict[str, Utility] = {
    "metric-query": Utility("median_query_error", "median |released - exact| of the honest queries "
                            "(the passive-observer runs, whose traffic is the honest use alone)",
                            higher_is_better=False, short="median query error", honest_threat="passive-observer"),
    "cov-threshold": Utility("error", "test accuracy of the model learned in the accepted span", True,
                             short="accuracy", fairness_key="statistical_parity",
                             fairness_label="|SP| of the learned model on the audit set", transform="one-minus"),
    "fairness-certificate": Utility("target_train_accuracy", "training accuracy of the certified fair model", True,
                                    short="accuracy", fairness_key="target_train_sp",
                                    fairness_label="|SP| of the certified model on its training set"),
    "rr-release": Utility("two_step_accuracy", "test accuracy of the two-step fair model learned on the release",
                          True, short="accuracy", fairness_key="two_step_disc",
                          fairness_label="equalized-odds violation of that model (true A)"),
}


@dataclass(frozen=True)
class Row:
    """A protocol configuration: the protocol table, its learner, and its data sizes."""

    label: str
    protocol: dict[str, Any]
    flow: str
    learner: dict[str, Any] | None = None
    dataset: dict[str, Any] = field(default_factory=dict)  # size overrides of the flow
    composition: str | None = None  # the run ledger's composition, when not sequential


@dataclass(frozen=True)
class Column:
    """An attack under one threat model, with the settings the comparison gives it."""

    label: str
    attack: dict[str, Any]
    threat_model: str


@dataclass(frozen=True)
class Plan:
    """The grid: rows, columns, each cell's scenario or the reason it is empty, and the audit settings."""

    dataset: str
    quick: bool
    rows: tuple[Row, ...]
    columns: tuple[Column, ...]
    cells: dict[tuple[str, str], dict[str, Any]]  # (row, column) -> scenario dict
    reasons: dict[tuple[str, str], str]  # (row, column) -> why the attack does not apply
    repeats: int
    audit_runs: int
    audit_dataset: dict[str, Any]
    audit_rows: tuple[str, ...] = ()
    backend: str = "ray"


#: Settings per attack: small enough for the time limits, strong enough to be the attack.
ATTACK_SETTINGS: dict[str, dict[str, Any]] = {
    "single-query": {"targets": 20, "batch": True},
    "double-query": {"targets": 20, "batch": True},
    "abs-sp-partition": {"targets": 20, "batch": True},
    "eo-flip": {"targets": 20, "batch": True},
    "eodds-flip": {"targets": 20, "batch": True},
    "pe-flip": {"targets": 20, "batch": True},
    "prp-flip": {"targets": 20, "batch": True},
    "linear": {"design": "flip-one", "batch": 100},
    "compressed-sensing": {"b": 0.1, "round_size": 25, "max_queries": 100, "decoder": "robust", "stop": "cap",
                           "n0_prior": 0.1},
    "corrected-compressed-sensing": {"b": 0.1, "round_size": 25, "max_queries": 100, "decoder": "robust",
                                     "stop": "cap", "n0_prior": 0.1},
    "precision": {"b": 0.1},
    "differencing": {},
    "threshold-inversion": {},
    "reconstruction-correction": {},
    "rr-bayes": {"objective": "balanced"},
    # one query of n random-subset models, decoded under the mechanism's own noise law (MILP or Gibbs, auto)
    "likelihood": {},
}
#: Attacks of the quick run: one per flow and threat model.
QUICK_ATTACKS = ("double-query", "compressed-sensing", "differencing", "threshold-inversion",
                 "reconstruction-correction", "rr-bayes", "likelihood")

#: Data sizes per flow (full run, quick run): every run trains the base model and the flow's learner.
SIZES: dict[str, tuple[dict[str, int], dict[str, int]]] = {
    "metric-query": ({"audit_size": 500, "train_size": 5000}, {"audit_size": 200, "train_size": 3000}),
    "cov-threshold": ({"audit_size": 1500, "train_size": 4500}, {"audit_size": 300, "train_size": 900}),
    "fairness-certificate": ({"audit_size": 3000, "train_size": 6000}, {"audit_size": 600, "train_size": 1200}),
    "rr-release": ({"audit_size": 2000, "train_size": 6000}, {"audit_size": 600, "train_size": 1800}),
}
EPSILONS = ((0.5, 1.0, 4.0), (1.0,))
#: smooth-laplace is (epsilon, delta)-DP for epsilon in (0, 1) only (Thm. 8 of the query-leakage paper).
SMOOTH_LAPLACE = (((0.25, 0.5, 0.9), (0.5,)), 1e-6)
#: dp-counts runs at the epsilons of laplace twice: discrete Laplace (pure DP) and discrete Gaussian at this delta.
COUNT_GAUSSIAN_DELTA = 1e-6
HYPOTHESES = ((50, 200), (100,))  # m of the cov-threshold exchange
REPEATS = (3, 1)
AUDIT_RUNS = (300, 60)
AUDIT_DATASET = {"audit_size": 50, "train_size": 300}


def _rows(quick: bool) -> list[Row]:
    pick = 1 if quick else 0
    rows = [Row("raw", {"name": "raw"}, "metric-query")]
    for name in ("laplace", "smooth-cauchy"):
        rows += [Row(f"{name} ε={eps:g}", {"name": name, "epsilon": eps}, "metric-query") for eps in EPSILONS[pick]]
    rows += [Row(f"dp-counts ε={eps:g}", {"name": "dp-counts", "epsilon": eps}, "metric-query")
             for eps in EPSILONS[pick]]
    # the Gaussian answers record their zCDP rho: their runs' ledgers compose them in zCDP (what their epsilon is)
    rows += [Row(f"dp-counts gaussian ε={eps:g}", {"name": "dp-counts", "epsilon": eps, "noise": "gaussian",
                                                  "delta": COUNT_GAUSSIAN_DELTA}, "metric-query", composition="zcdp")
             for eps in EPSILONS[pick]]
    # Secure computation: mpc opens raw's numbers, mpc-dp the dp-counts release (noise drawn inside the computation)
    rows.append(Row("mpc", {"name": "mpc"}, "metric-query"))
    rows += [Row(f"mpc-dp ε={eps:g}", {"name": "mpc-dp", "epsilon": eps}, "metric-query") for eps in EPSILONS[pick]]
    # Two-party homomorphic encryption: raw's numbers up to the noise flooding (exact decoders give up on them)
    rows.append(Row("he", {"name": "he"}, "metric-query"))
    epsilons, delta = SMOOTH_LAPLACE
    rows += [Row(f"smooth-laplace ε={eps:g}", {"name": "smooth-laplace", "epsilon": eps, "delta": delta},
                 "metric-query") for eps in epsilons[pick]]
    rows += [Row(f"cov-threshold m={m}", {"name": "cov-threshold", "rho": 0.1}, "cov-threshold",
                 {"name": "dfrr", "hypotheses": m}) for m in HYPOTHESES[pick]]
    rows.append(Row("fairness-certificate", {"name": "fairness-certificate", "metric": "sp", "release": "value"},
                    "fairness-certificate", {"name": "exponentiated-gradient", "metric": "sp", "tolerance": 0.0}))
    rows += [Row(f"rr-release ε={eps:g}", {"name": "rr-release", "epsilon": eps}, "rr-release", {"name": "two-step"})
             for eps in EPSILONS[pick]]
    return [Row(r.label, r.protocol, r.flow, r.learner, SIZES[r.flow][pick], r.composition) for r in rows]


def _columns(quick: bool) -> list[Column]:
    names = QUICK_ATTACKS if quick else tuple(ATTACK_SETTINGS)
    return [Column(f"{name} [{threat}]", {"name": name, **ATTACK_SETTINGS[name]}, threat)
            for name in names for threat in ATTACKS[name].threat_models]


def _scenario(dataset: str, row: Row, column: Column, backend: str = "ray") -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": cell_name(row.label, column.label),
        "threat_model": column.threat_model,
        "dataset": {"name": dataset, **row.dataset},
        "protocol": row.protocol,
        "attack": column.attack,
        "audit_metrics": ["sp"] if row.flow == "metric-query" else [],
        "backend": backend,
    }
    if row.learner is not None:
        data["learner"] = row.learner
    if row.composition is not None:
        data["composition"] = row.composition
    return data


def plan(dataset: str = "adult", quick: bool = False, rows: tuple[str, ...] | None = None,
         attacks: tuple[str, ...] | None = None, backend: str = "ray") -> Plan:
    """The comparison grid on ``dataset``; every applicable cell is validated as a scenario.

    ``rows`` (row labels) and ``attacks`` (attack names) narrow the grid; ``backend="local"`` runs each
    cell's parties inside its study worker (tests).
    """
    if dataset not in COMPARE_DATASETS:
        raise ConfigError(BAD_DATASET_FOR_COMPARE.format(known=", ".join(COMPARE_DATASETS), name=dataset))
    pick = 1 if quick else 0
    all_rows = _rows(quick)
    unknown = sorted(set(rows or ()) - {r.label for r in all_rows})
    if unknown:
        raise ConfigError(UNKNOWN_ROW.format(rows=unknown, known=", ".join(r.label for r in all_rows)))
    chosen = [r for r in all_rows if rows is None or r.label in rows]
    columns = [c for c in _columns(quick) if attacks is None or c.attack["name"] in attacks]
    cells: dict[tuple[str, str], dict[str, Any]] = {}
    reasons: dict[tuple[str, str], str] = {}
    for row in chosen:
        if protocols.get_protocol(row.protocol["name"]).flow != row.flow:
            raise InternalError(ROW_FLOW.format(label=row.label, flow=row.flow))
        # A bad protocol table is a bug of the plan, not an attack that does not apply: it fails here.
        _validate(protocols.get_protocol(row.protocol["name"]).Params,
                  {k: v for k, v in row.protocol.items() if k != "name"}, "protocol")
        for column in columns:
            data = _scenario(dataset, row, column, backend)
            try:  # the scenario checks decide applicability (flow and threat model), with their message
                Scenario.from_dict(data)
            except ConfigError as exc:
                reasons[(row.label, column.label)] = str(exc)
                continue
            if column.attack["name"] in NOISE_LAW_ATTACKS and \
                    "epsilon" not in protocols.get_protocol(row.protocol["name"]).Params.model_fields:
                reasons[(row.label, column.label)] = NO_NOISE_LAW.format(attack=column.attack["name"],
                                                                         protocol=row.protocol["name"])
                continue
            cells[(row.label, column.label)] = data
    return Plan(dataset=dataset, quick=quick, rows=tuple(chosen), columns=tuple(columns), cells=cells, reasons=reasons,
                repeats=REPEATS[pick], audit_runs=AUDIT_RUNS[pick],
                audit_dataset={"name": dataset, **AUDIT_DATASET},
                audit_rows=tuple(r.label for r in chosen if r.flow in AUDITABLE_FLOWS and not _secure(r)),
                backend=backend)


def _secure(row: Row) -> bool:
    """Is the row's protocol secure, its answers opened by the querier and never on the wire?

    The wire audit cannot read them (``mpc-dp``'s computation, the uncentred ``dp-counts`` noise drawn
    by two parties, is audited through its ``simulate`` in tests/statistical/test_protocol_audit.py).
    """
    return bool(getattr(protocols.get_protocol(row.protocol["name"]), "secure", False))
