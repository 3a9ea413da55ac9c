"""The adversary's playbook: every attack registers itself on import."""

from . import differencing, reveal, targeted  # noqa: F401  (registration)
from . import label_slices, partition  # noqa: F401  (registration: |SP| partition, EO/PE/EOdds/PRP)
from . import reconstruction_correction  # noqa: F401  (registration: fairness-certificate flow)
from . import corrected_reveal  # noqa: F401  (registration: correction on top of compressed sensing)
from . import threshold_inversion  # noqa: F401  (registration: accept sets of cov-threshold)
from . import rr_inference  # noqa: F401  (registration: Bayes inference from a randomized-response release)
from .base import (
    ACTIVE,
    ATTACKS,
    PASSIVE,
    Answer,
    Attack,
    AttackerView,
    AttackParams,
    Exchange,
    Probe,
    Reconstruction,
    get_attack,
    register_attack,
)
from .scoring import leakage

__all__ = [
    "ACTIVE", "ATTACKS", "PASSIVE", "Answer", "Attack", "AttackerView", "AttackParams", "Exchange", "Probe",
    "Reconstruction", "get_attack", "leakage", "register_attack",
]
