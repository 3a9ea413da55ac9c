"""zCDP composition of a querier's answers through Google's dp-accounting (the ledger's ``zcdp`` method).

Every answer of ``dp-counts`` with Gaussian noise records its zCDP parameter ``rho``
(:mod:`parley.protocols.mechanisms.count_dp`); rho-zCDP answers compose by adding
their rho (Bun & Steinke, TCC 2016, Lemma 2.3), and the sum converts to
(epsilon, delta') with the conversion of Canonne, Kamath & Steinke (NeurIPS 2020,
Prop. 12 in arXiv:2004.00010 v4) as dp-accounting's ``RdpAccountant`` computes it over its
orders: for k answers at (epsilon, delta) each this total grows like sqrt(k),
not k. A pure epsilon-DP answer without a recorded rho enters as
(epsilon^2/2)-zCDP (Bun & Steinke 2016, Prop. 1.4); an (epsilon, delta) answer
without one cannot be put into zCDP and is added sequentially.

The events are rebuilt from what the ledger stores (the cost and the answer's
``rho``), so the total survives a restart: :func:`zcdp_events` reads them,
:func:`compose_zcdp` composes them. Like advanced composition, the zCDP total
spends a slack delta' and falls back to the plain sum when that is smaller.
"""

from __future__ import annotations

from collections.abc import Sequence

from parley.protocols.budget import Budget, budget, compose
from parley.protocols.errors import ConfigError

__all__ = ["RHO_KEY", "zcdp_of", "compose_zcdp", "zcdp_epsilon"]

#: The key of an answer payload that carries the answer's zCDP parameter.
RHO_KEY = "zcdp_rho"
BAD_RHO = "a zCDP parameter rho must be finite and > 0, got {rho!r}"


def zcdp_of(cost: Budget, rho: float | None) -> float | None:
    """The zCDP parameter of one debit: its recorded rho, epsilon^2/2 for a pure cost, else None."""
    if rho is not None:
        if not (isinstance(rho, (int, float)) and 0.0 < rho < float("inf")):
            raise ConfigError(BAD_RHO.format(rho=rho))
        return float(rho)
    if cost.pure:
        return cost.epsilon * cost.epsilon / 2.0
    return None


def zcdp_epsilon(rhos: Sequence[float], delta: float) -> float:
    """epsilon of the composition of rho_i-zCDP events at delta (dp-accounting ``RdpAccountant``)."""
    from dp_accounting import ZCDpEvent
    from dp_accounting.rdp import RdpAccountant

    accountant = RdpAccountant()
    for rho in rhos:
        accountant.compose(ZCDpEvent(rho))
    return float(accountant.get_epsilon(delta))


def compose_zcdp(costs: Sequence[Budget], rhos: Sequence[float | None], slack: float = 1e-6) -> Budget:
    """Total privacy loss of ``costs`` (with the answers' recorded ``rhos``, None where absent) under zCDP.

    The zCDP part (answers with a rho, pure answers) composes in dp-accounting and converts at delta' =
    ``slack``; the rest adds sequentially. Returns the sequential sum when its epsilon is not larger.
    """
    if len(costs) != len(rhos):
        raise ConfigError(f"compose_zcdp needs one rho (or None) per cost: {len(costs)} costs, {len(rhos)} rhos")
    sequential = compose(costs)
    if not costs:
        return sequential
    if not 0.0 < slack < 1.0:
        raise ConfigError(f"zCDP composition needs a slack delta' in (0, 1), got {slack!r}")
    zcdp, rest = [], []
    for cost, rho in zip(costs, rhos, strict=True):
        converted = zcdp_of(cost, rho)
        if converted is None:
            rest.append(cost)
        else:
            zcdp.append(converted)
    if not zcdp:
        return sequential
    other = compose(rest)
    epsilon = zcdp_epsilon(zcdp, slack) + other.epsilon
    if epsilon >= sequential.epsilon:  # few or large costs: the plain sum is tighter and needs no slack
        return sequential
    return budget(epsilon, other.delta + slack)
