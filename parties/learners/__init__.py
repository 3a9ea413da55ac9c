"""Data-center learning methods: the base model, and fair learners registered by name."""

from .base_model import ModelSpec, build_estimator
from .registry import LEARNERS, Learner, LearnerParams, get_learner, register_learner
from . import fair_targets  # noqa: F401,E402  (registration: fairlearn targets)
from . import fair_baselines, fair_span  # noqa: F401,E402  (register the cov-threshold learners)
from . import two_step  # noqa: F401,E402  (registers the two-step learner)
from . import partial_reporting  # noqa: F401,E402  (registers the partial-reporting learner)

__all__ = ["LEARNERS", "Learner", "LearnerParams", "ModelSpec", "build_estimator", "get_learner", "register_learner"]
