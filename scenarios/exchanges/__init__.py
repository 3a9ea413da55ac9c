"""Exchanges: how a run's parties talk under one kind of protocol, registered by name.

A protocol names its exchange (:attr:`parley.protocols.base.Protocol.flow`); the runner builds
the world (:func:`parley.scenarios.world.build_world`), runs the exchange
(:meth:`~parley.scenarios.exchanges.base.Exchange.run`), and adds what every run reports (messages,
bytes, budget spent, timings). Built in: ``metric-query`` (every metric protocol, with the ``he``
and ``mpc`` encodings), ``rr-release``, ``cov-threshold`` and ``fairness-certificate``. Adding a kind
of protocol is one :class:`~parley.scenarios.exchanges.base.Exchange` subclass, here with
``@register_exchange`` or from a user's package through a ``parley.exchanges`` entry point
(docs/plugins.md).
"""

from __future__ import annotations

from parley.scenarios.exchanges.base import (
    EXCHANGES,
    AuditView,
    Exchange,
    Row,
    Utility,
    get_exchange,
    register_exchange,
)

__all__ = ["AuditView", "EXCHANGES", "Exchange", "Row", "Utility", "get_exchange", "register_exchange"]

from parley.scenarios.exchanges import (  # noqa: E402,F401  (register the built-in exchanges)
    cov_threshold,
    fairness_certificate,
    metric_query,
    rr_release,
)
