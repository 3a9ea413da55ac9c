"""``rr-release``: the compliance party releases A of a whole set through k-ary randomized response.

Mozannar, Ohannessian & Srebro, ICML 2020, Sec. 3: acting for the data
subjects, the compliance party releases Z = RR_eps(A) with
Q(z | a) = pi = e^eps / (k - 1 + e^eps) if z = a and (1 - pi) / (k - 1)
otherwise. That is eps-local differential privacy (Def. 2): whatever anyone
does with Z afterwards (auditing with the debiased estimators of
:mod:`parley.protocols.estimators.rr_estimators`, learning with the two-step learner, an
adversary's inference) is post-processing and stays eps-DP for each individual.

Exchange: a ``release-request`` names a ``set`` the compliance party holds
(``"audit"`` or ``"train"``); the reply ``attribute-release`` carries ``z``
(int8, one code per individual of the set in the set's order, -1 where the
owner withheld it), ``epsilon``, ``groups``, ``pi`` and ``report_probability``.

Accounting: every release costs ``PureDP(epsilon)`` in the ledger. A second
release of the same set is refused unless ``releases`` allows it: fresh
randomizations of the same attributes compose (r releases are r * eps-LDP, and
averaging them erodes the protection), so each one is charged. Releases of
disjoint sets protect different people (parallel composition), but the ledger
composes a querier's debits sequentially, so its total is an upper bound there.

Partial reporting (Sec. 6): with ``report_probability`` beta < 1 each owner
reports at all with probability beta (independently of everything else, the
case Prop. 2 and Lemma 3 cover); withheld entries are -1. With ``reporting``,
each owner reports with their own probability t(y, a) instead (Sec. 6,
"Individual choice of reporting";
:class:`parley.protocols.estimators.reporting.ReportingFunction`): the
compliance party holds A and Y of each set, not X, so t here depends on (y, a)
only. The reply states the t it used (as it states ``epsilon``), and the
reporting coins, like the randomized-response coins, are the compliance
party's own.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, ClassVar

import numpy as np
from pydantic import Field, model_validator

from parley.protocols.base import Holdings, ProtocolParams, RequestProtocol, register_protocol
from parley.protocols.budget import Budget, PureDP
from parley.protocols.errors import ConfigError, InternalError, QueryError
from parley.protocols.estimators.reporting import ReportingFunction, report
from parley.protocols.estimators.rr_estimators import WITHHELD, privatize, rr_keep_probability

__all__ = ["RRReleaseParams", "RRReleaseProtocol", "RELEASE_REQUEST", "ATTRIBUTE_RELEASE"]

RELEASE_REQUEST = "release-request"
ATTRIBUTE_RELEASE = "attribute-release"

UNKNOWN_SET = "release-request names set {value!r}; this compliance party holds: {held}"
RELEASED_BEFORE = ("set {name!r} was released {count} time(s) already and protocol 'rr-release' allows {limit} "
                   "(raise protocol.releases to allow repeats; they compose)")
#: Checked once when the compliance party is built (a configuration error); the text names no code of A.
GROUPS_TOO_FEW = ("set {name!r} has attribute codes outside 0..{top} (protocol.groups is {groups}): "
                  "raise protocol.groups")
REPORTING_TWICE = ("give either protocol.report_probability ({beta}) or protocol.reporting, not both "
                   "(a constant t is reporting.table with one value)")
REPORTING_NEEDS_X = ("protocol.reporting depends on X (slope != 0), which the compliance party does not hold: "
                     "its t may depend on y and a only")
REPORTING_GROUPS = "protocol.reporting.table has {table} groups but protocol.groups is {groups}"


class RRReleaseParams(ProtocolParams):
    """Parameters of ``rr-release``."""

    epsilon: float = Field(1.0, gt=0.0, allow_inf_nan=False, description="LDP epsilon of one release")
    groups: int = Field(2, ge=2, le=64, description="k, the number of values of A")
    releases: int = Field(1, ge=1, le=1000, description="releases allowed per set (more than 1: they compose)")
    report_probability: float = Field(1.0, gt=0.0, le=1.0, description="chance an owner reports at all (Sec. 6)")
    reporting: ReportingFunction | None = Field(
        None, description="t(y, a), each owner's own chance to report (Sec. 6, Prop. 2); excludes report_probability")

    @model_validator(mode="after")
    def _reporting(self) -> RRReleaseParams:
        if self.reporting is None:
            return self
        if self.report_probability < 1.0:
            raise ValueError(REPORTING_TWICE.format(beta=self.report_probability))
        if self.reporting.depends_on_x:
            raise ValueError(REPORTING_NEEDS_X)
        if self.reporting.groups != self.groups:
            raise ValueError(REPORTING_GROUPS.format(table=self.reporting.groups, groups=self.groups))
        return self


@register_protocol
class RRReleaseProtocol(RequestProtocol[RRReleaseParams]):
    """k-ary randomized response of A, once per set (Sec. 3 of the private-demographics paper)."""

    name: ClassVar[str] = "rr-release"
    Params: ClassVar[type[ProtocolParams]] = RRReleaseParams
    metrics: ClassVar[tuple[str, ...]] = ()
    flow: ClassVar[str] = "rr-release"
    requests: ClassVar[Mapping[str, str]] = {RELEASE_REQUEST: ATTRIBUTE_RELEASE}
    holds: ClassVar[tuple[str, ...]] = ("audit", "train")
    per_individual_kinds: ClassVar[tuple[str, ...]] = (ATTRIBUTE_RELEASE,)  # Z: one noisy code per owner

    @staticmethod
    def _set_name(payload: Mapping[str, Any], holdings: Holdings) -> str:
        name = payload.get("set")
        if not isinstance(name, str) or name not in holdings:
            raise QueryError(UNKNOWN_SET.format(value=name, held=", ".join(sorted(holdings))))
        return name

    def check_holdings(self, holdings: Holdings) -> None:
        """Every set's codes lie in 0..groups-1, checked at setup so no request is ever refused for A's values."""
        for name, held in holdings.items():
            a = np.asarray(held.a)
            if a.size and (int(a.min()) < 0 or int(a.max()) >= self.params.groups):
                raise ConfigError(GROUPS_TOO_FEW.format(name=name, top=self.params.groups - 1,
                                                        groups=self.params.groups))

    def admit(self, kind: str, payload: Mapping[str, Any], released: Sequence[Mapping[str, Any]]) -> None:
        """Refuse a release of a set already released ``releases`` times (durable: judged from the ledger)."""
        name = payload.get("set")
        count = sum(1 for reply in released if reply.get("set") == name and "z" in reply)
        if count >= self.params.releases:
            raise QueryError(RELEASED_BEFORE.format(name=name, count=count, limit=self.params.releases))

    def request_cost(self, kind: str, payload: Mapping[str, Any], holdings: Holdings) -> Budget:
        """eps per release (pure eps-LDP for every owner of the set)."""
        self._set_name(payload, holdings)
        return PureDP(epsilon=self.params.epsilon)

    def respond(self, kind: str, payload: Mapping[str, Any], holdings: Holdings,
                rng: np.random.Generator) -> dict[str, Any]:
        """Z = RR_eps(A) of the named set, with the mechanism's parameters."""
        name = self._set_name(payload, holdings)
        a = np.asarray(holdings[name].a)
        p = self.params
        if a.size and (int(a.min()) < 0 or int(a.max()) >= p.groups):  # check_holdings refused this at setup
            raise InternalError(GROUPS_TOO_FEW.format(name=name, top=p.groups - 1, groups=p.groups))
        z = privatize(a, p.epsilon, p.groups, rng, p.report_probability)
        out: dict[str, Any] = {"set": name, "z": z, "epsilon": p.epsilon, "groups": p.groups,
                               "pi": rr_keep_probability(p.epsilon, p.groups),
                               "report_probability": p.report_probability}
        if p.reporting is not None:  # each owner's own coin, with probability t(y, a)
            z[~report(p.reporting, None, np.asarray(holdings[name].y), a, rng)] = WITHHELD
            out["reporting"] = {"table": [list(row) for row in p.reporting.table]}
        return out
