"""Data-center learning methods: the base model, and fair learners registered by name."""

from .base_model import ModelSpec, build_estimator
from .registry import LEARNERS, Learner, LearnerParams, get_learner, register_learner
from . import two_step  # noqa: F401,E402  (registers the two-step learner)

__all__ = ["LEARNERS", "Learner", "LearnerParams", "ModelSpec", "build_estimator", "get_learner", "register_learner"]
