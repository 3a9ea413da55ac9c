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

import dataclasses
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from parley import protocols
from parley.parties.attacks import ATTACKS
from parley.protocols.errors import ConfigError, InternalError
from parley.scenarios.exchanges import EXCHANGES, Row, Utility, get_exchange
from parley.scenarios.exchanges.base import EPSILONS
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


class _Utilities(Mapping[str, Utility]):
    """Exchange name -> how ``parley compare`` measures what the data center gets (each exchange's ``utility``)."""

    def __getitem__(self, flow: str) -> Utility:
        return EXCHANGES[flow].utility

    def __iter__(self) -> Iterator[str]:
        return iter(EXCHANGES)

    def __len__(self) -> int:
        return len(EXCHANGES)


#: Utility per exchange, as each registered exchange defines it.
UTILITY: Mapping[str, Utility] = _Utilities()


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

REPEATS = (3, 1)
AUDIT_RUNS = (300, 60)
AUDIT_DATASET = {"audit_size": 50, "train_size": 300}


def _rows(quick: bool) -> list[Row]:
    """Every registered exchange's rows, at its data sizes."""
    pick = 1 if quick else 0
    rows = []
    for name in EXCHANGES:
        exchange = get_exchange(name)
        rows += [dataclasses.replace(row, dataset={**exchange.sizes[pick], **row.dataset})
                 for default in exchange.rows(quick) for row in _at_epsilons(default, pick)]
    return rows


def _at_epsilons(row: Row, pick: int) -> list[Row]:
    """``row``, or one row per epsilon of the grid (``EPSILONS``) for a protocol whose epsilon has no default.

    A DP protocol registered without rows of its own joins the grid at its defaults; a required epsilon has none.
    """
    epsilon = protocols.get_protocol(row.protocol["name"]).Params.model_fields.get("epsilon")
    if "epsilon" in row.protocol or epsilon is None or not epsilon.is_required():
        return [row]
    return [dataclasses.replace(row, label=f"{row.label} ε={eps:g}", protocol={**row.protocol, "epsilon": eps})
            for eps in EPSILONS[pick]]


def _columns(quick: bool) -> list[Column]:
    # a plug-in's attacks join at their defaults
    names = (QUICK_ATTACKS if quick else tuple(ATTACK_SETTINGS)) + tuple(
        name for name, origin in ATTACKS.origins().items() if not origin.builtin)
    return [Column(f"{name} [{threat}]", {"name": name, **ATTACK_SETTINGS.get(name, {})}, threat)
            for name in names for threat in ATTACKS[name].threat_models]


def _scenario(dataset: str, row: Row, column: Column, backend: str = "ray") -> dict[str, Any]:
    data: dict[str, Any] = {
        "name": cell_name(row.label, column.label),
        "threat_model": column.threat_model,
        "dataset": {"name": dataset, **row.dataset},
        "protocol": row.protocol,
        "attack": column.attack,
        "audit_metrics": list(get_exchange(row.flow).honest_metrics),
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
                audit_rows=tuple(r.label for r in chosen if _auditable(r)),
                backend=backend)


def _auditable(row: Row) -> bool:
    """Does the whole-scenario audit read the row's exchange, and are its answers on the wire?

    A row with an encoding (``he``, ``mpc``) has its answers opened by the querier, never on the wire: the
    wire audit cannot read them (``mpc-dp``'s computation, the uncentred ``dp-counts`` noise drawn by two
    parties, is audited through its ``simulate`` in tests/statistical/test_protocol_audit.py).
    """
    return EXCHANGES[row.flow].audit is not None and protocols.get_protocol(row.protocol["name"]).encoding is None
