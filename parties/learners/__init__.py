"""Data-center learning methods: the base model, and fair learners registered by name."""

from parley.parties.learners import (  # noqa: F401,E402  (register the cov-threshold learners)
    correlation_remover,  # noqa: F401,E402  (registers correlation-remover)
    fair_baselines,
    fair_kernel,  # noqa: F401,E402  (registers fkrr)
    fair_pca,  # noqa: F401,E402  (registers fpca1 and fpca2)
    fair_span,
    fair_targets,  # noqa: F401,E402  (registration: fairlearn targets)
    individual_reporting,  # noqa: F401,E402  (registers the individual-reporting learner)
    lfr,  # noqa: F401,E402  (registers lfr)
    partial_reporting,  # noqa: F401,E402  (registers the partial-reporting learner)
    prejudice_remover,  # noqa: F401,E402  (registers fgr)
    proxy_fair,  # noqa: F401,E402  (registers the proxy-fair learner)
    two_step,  # noqa: F401,E402  (registers the two-step learner)
    z_post_processing,  # noqa: F401,E402  (registers the naive z-post-processing learner)
)
from parley.parties.learners.base_model import ModelSpec, build_estimator
from parley.parties.learners.registry import LEARNERS, Learner, LearnerParams, get_learner, register_learner

__all__ = ["LEARNERS", "Learner", "LearnerParams", "ModelSpec", "build_estimator", "get_learner", "register_learner"]
