"""Threshold inversion: A read back from the accept sets of cov-threshold (Hu et al., ICDM 2019)."""

from parley.parties.attacks.threshold_inversion import inversion  # noqa: F401  (registration)
