"""The data center's base model: any scikit-learn classifier named by import path.

The estimator and its parameters are checked when the scenario is read: the class is imported
and built with ``params``, and a scikit-learn estimator's own parameter validation
(``_validate_params``, its ``_parameter_constraints``) runs on it, which takes well under a
millisecond once scikit-learn is imported. A parameter scikit-learn rejects is then a
:class:`ConfigError` naming its key (``model.params.max_iter``) and scikit-learn's reason, not
a failure inside the data center's ``fit``. parley's own default model is known to build and is
not checked, so that reading a scenario that keeps it does not import scikit-learn (about a
second): a mistake elsewhere in the scenario is reported at once.
"""

from __future__ import annotations

import importlib
import inspect
import json
import re
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, model_validator

from parley.protocols.errors import ConfigError

__all__ = ["ModelSpec", "build_estimator", "check_estimator", "DEFAULT_ESTIMATOR", "DEFAULT_PARAMS",
           "BAD_PATH", "NOT_FOUND", "NOT_CLASSIFIER", "BAD_PARAMS", "BAD_PARAM", "UNKNOWN_PARAM"]

BAD_PATH = "model.estimator must be an import path like 'sklearn.linear_model.LogisticRegression', got {path!r}"
NOT_FOUND = "model.estimator {path!r} cannot be imported ({error})"
NOT_CLASSIFIER = "model.estimator {path!r} must provide fit() and predict_proba()"
BAD_PARAMS = "model.params do not fit {path}: {error}"
#: A parameter the estimator's own validation rejected: its dotted key and the estimator's reason.
BAD_PARAM = "model.params.{key}: {reason}"
UNKNOWN_PARAM = "model.params.{key}: {path} takes no parameter {key!r}; its parameters: {known}"

DEFAULT_ESTIMATOR = "sklearn.linear_model.LogisticRegression"
DEFAULT_PARAMS: dict[str, Any] = {"max_iter": 1000}
#: The name scikit-learn's parameter validation gives the parameter it rejects.
_NAMED = re.compile(r"The '([^']+)' parameter")


def _key(estimator: str, params: dict[str, Any]) -> tuple[str, str]:
    return estimator, json.dumps(params, sort_keys=True, default=repr)


#: (estimator, params) pairs known to build: parley's default, and each pair checked in this process.
_CHECKED: set[tuple[str, str]] = {_key(DEFAULT_ESTIMATOR, DEFAULT_PARAMS)}


class ModelSpec(BaseModel):
    """Which classifier the data center trains, with which parameters, and its threshold."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    estimator: str = DEFAULT_ESTIMATOR
    params: dict[str, Any] = Field(default_factory=lambda: dict(DEFAULT_PARAMS))
    threshold: float = Field(default=0.5, gt=0.0, lt=1.0, description="the model accepts scores at or above this")

    @model_validator(mode="after")
    def _buildable(self) -> ModelSpec:
        # Fail when the scenario is read, not inside an actor.
        key = _key(self.estimator, self.params)
        if key not in _CHECKED:
            check_estimator(self.estimator, self.params)
            _CHECKED.add(key)
        return self


def estimator_class(path: str) -> type:
    """The classifier class at import ``path``; ConfigError if it cannot be a base model."""
    module_name, _, class_name = path.rpartition(".")
    if not module_name or not class_name:
        raise ConfigError(BAD_PATH.format(path=path))
    try:
        cls: type = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(NOT_FOUND.format(path=path, error=exc)) from None
    if not (hasattr(cls, "fit") and hasattr(cls, "predict_proba")):
        raise ConfigError(NOT_CLASSIFIER.format(path=path))
    return cls


def _parameter_names(cls: type) -> list[str]:
    names = getattr(cls, "_get_param_names", None)  # scikit-learn's BaseEstimator
    if callable(names):
        return sorted(names())
    try:
        signature = inspect.signature(cls)
    except (TypeError, ValueError):
        return []
    return sorted(name for name, p in signature.parameters.items() if p.kind in (p.POSITIONAL_OR_KEYWORD,
                                                                                  p.KEYWORD_ONLY))


def _validated(cls: type, path: str, params: dict[str, Any], random_state: int | None = None) -> Any:
    """``cls(**params)`` after the estimator's own parameter validation; a ConfigError naming the key if not."""
    try:
        estimator = cls(**params)
    except (TypeError, ValueError) as exc:
        known = _parameter_names(cls)
        unknown = [key for key in params if known and key not in known]
        if unknown:
            raise ConfigError(UNKNOWN_PARAM.format(key=unknown[0], path=path, known=", ".join(known))) from None
        raise ConfigError(BAD_PARAMS.format(path=path, error=exc)) from None
    try:
        if random_state is not None and "random_state" in estimator.get_params() and "random_state" not in params:
            estimator.set_params(random_state=random_state)
        validate = getattr(estimator, "_validate_params", None)  # scikit-learn >= 1.2: _parameter_constraints
        if callable(validate):
            validate()
    except (TypeError, ValueError) as exc:
        reason = " ".join(str(exc).split())
        named = _NAMED.search(reason)
        if named is not None and named.group(1) in params:
            raise ConfigError(BAD_PARAM.format(key=named.group(1), reason=reason)) from None
        raise ConfigError(BAD_PARAMS.format(path=path, error=reason)) from None
    return estimator


def check_estimator(path: str, params: dict[str, Any]) -> None:
    """Refuse (ConfigError) an estimator that cannot be imported, is no classifier, or rejects ``params``."""
    _validated(estimator_class(path), path, dict(params))


def build_estimator(spec: ModelSpec, random_state: int | None = None) -> Any:
    """Instantiate the estimator of ``spec``; ``random_state`` is passed when it takes one."""
    return _validated(estimator_class(spec.estimator), spec.estimator, dict(spec.params), random_state)
