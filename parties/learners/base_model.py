"""The data center's base model: any scikit-learn classifier named by import path."""

from __future__ import annotations

import importlib
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, field_validator

from parley.protocols.errors import ConfigError

__all__ = ["ModelSpec", "build_estimator"]

BAD_PATH = "model.estimator must be an import path like 'sklearn.linear_model.LogisticRegression', got {path!r}"
NOT_FOUND = "model.estimator {path!r} cannot be imported ({error})"
NOT_CLASSIFIER = "model.estimator {path!r} must provide fit() and predict_proba()"
BAD_PARAMS = "model.params do not fit {path}: {error}"


class ModelSpec(BaseModel):
    """Which classifier the data center trains, with which parameters, and its threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    estimator: str = "sklearn.linear_model.LogisticRegression"
    params: dict[str, Any] = Field(default_factory=lambda: {"max_iter": 1000})
    threshold: float = Field(default=0.5, gt=0.0, lt=1.0, description="the model accepts scores at or above this")

    @field_validator("estimator")
    @classmethod
    def _importable(cls, path: str) -> str:
        estimator_class(path)  # fail when the scenario is read, not inside an actor
        return path


def estimator_class(path: str) -> type:
    """The classifier class at import ``path``; ConfigError if it cannot be a base model."""
    module_name, _, class_name = path.rpartition(".")
    if not module_name or not class_name:
        raise ConfigError(BAD_PATH.format(path=path))
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(NOT_FOUND.format(path=path, error=exc)) from None
    if not (hasattr(cls, "fit") and hasattr(cls, "predict_proba")):
        raise ConfigError(NOT_CLASSIFIER.format(path=path))
    return cls


def build_estimator(spec: ModelSpec, random_state: int | None = None) -> Any:
    """Instantiate the estimator of ``spec``; ``random_state`` is passed when it takes one."""
    cls = estimator_class(spec.estimator)
    params = dict(spec.params)
    try:
        estimator = cls(**params)
        if random_state is not None and "random_state" in estimator.get_params() and "random_state" not in params:
            estimator.set_params(random_state=random_state)
    except (TypeError, ValueError) as exc:
        raise ConfigError(BAD_PARAMS.format(path=spec.estimator, error=exc)) from None
    return estimator
