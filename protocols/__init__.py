"""Answer protocols and fairness metrics: pure functions and models, no Ray, no parties.

Importing :mod:`protocols` registers every built-in protocol, so
``get_protocol("raw")`` works after a plain ``import protocols``.
"""

from . import laplace, raw, smooth_sensitivity  # noqa: F401  (register the protocols)
from . import fairness_certificate  # noqa: F401
from . import covariance_threshold  # noqa: F401  (rho-fair hypothesis selection)
from . import randomized_response  # noqa: F401  (registers rr-release)
from .base import PROTOCOLS, AuditSet, MetricQuery, Protocol, get_protocol, register_protocol

__all__ = ["PROTOCOLS", "AuditSet", "MetricQuery", "Protocol", "get_protocol", "register_protocol"]
