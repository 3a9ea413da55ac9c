"""Optimisation models behind the attacks: the reconstruction-correction model (MILP and LP)."""
