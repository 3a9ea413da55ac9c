"""Data-center learning methods: the base model now; fair learners as they arrive."""

from .base_model import ModelSpec, build_estimator

__all__ = ["ModelSpec", "build_estimator"]
