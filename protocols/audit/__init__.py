"""Empirical privacy auditing: statistical lower bounds on a mechanism's epsilon."""
