"""Bayes inference of A from randomized-response releases (Mozannar, Ohannessian & Srebro, ICML 2020)."""

from parley.parties.attacks.randomized_response import rr_inference  # noqa: F401  (registration)
