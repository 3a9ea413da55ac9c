"""The adversary's playbook: every attack registers itself on import."""

# Importing each family registers its attacks.
from parley.parties.attacks import (  # noqa: F401
    correction_search,  # noqa: F401  (reconstruction-correction-search)
    n_minus_one,  # noqa: F401  (linear-n-1, Remark 3)
    query_leakage,
    randomized_response,
    reconstruction_correction,
    threshold_inversion,
)
from parley.parties.attacks.base import (
    ACTIVE,
    ATTACKS,
    PASSIVE,
    Answer,
    Attack,
    AttackerView,
    AttackParams,
    Exchange,
    Probe,
    Probes,
    Reconstruction,
    answer_all,
    get_attack,
    register_attack,
)
from parley.parties.attacks.scoring import leakage

__all__ = [
    "ACTIVE", "ATTACKS", "PASSIVE", "Answer", "Attack", "AttackerView", "AttackParams", "Exchange", "Probe",
    "Probes", "Reconstruction", "answer_all", "get_attack", "leakage", "register_attack",
]
