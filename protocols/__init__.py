"""Answer protocols and fairness metrics: pure functions and models, no Ray, no parties.

Importing :mod:`parley.protocols` registers every built-in protocol, so
``get_protocol("raw")`` works after it.
"""

if __name__ != "parley.protocols":  # the folder imported by its own name, from the repository root
    raise ImportError(f"import parley.protocols, not {__name__} (the folder installs as parley.protocols)")

from parley.protocols.base import (
    PROTOCOLS,
    AuditSet,
    ExactValueProtocol,
    MetricProtocol,
    MetricQuery,
    Protocol,
    ProtocolParams,
    RequestProtocol,
    get_protocol,
    register_protocol,
)
from parley.protocols.mechanisms import (  # noqa: F401  (register the protocols)
    bounded_laplace,  # noqa: F401  (laplace-bounded, Remark 6)
    count_dp,  # noqa: F401  (dp-counts)
    covariance_threshold,  # noqa: F401  (rho-fair hypothesis selection)
    fairness_certificate,  # noqa: F401
    homomorphic,  # noqa: F401  (he)
    laplace,
    randomized_response,  # noqa: F401  (registers rr-release)
    raw,
    secure,  # noqa: F401  (mpc, mpc-dp)
    smooth_sensitivity,
)

__all__ = ["PROTOCOLS", "AuditSet", "ExactValueProtocol", "MetricProtocol", "MetricQuery", "Protocol",
           "ProtocolParams", "RequestProtocol", "get_protocol", "register_protocol"]
