"""Fairness estimators from privatised or proxy attributes (randomized response, probabilistic proxies)."""
