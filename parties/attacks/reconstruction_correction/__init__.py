"""Reconstruction correction (Ferry et al., SaTML 2023): a baseline guess of A corrected to a fairness certificate."""

from parley.parties.attacks.reconstruction_correction import attack, corrected_reveal  # noqa: F401  (registration)
