"""Attacks of the query-leakage paper (Hamman, Chen & Dutta, FAccT 2023): reveals from metric answers."""

from parley.parties.attacks.query_leakage import differencing, label_slices, likelihood, partition, reveal, targeted  # noqa: F401  (registration)
