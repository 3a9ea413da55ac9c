"""Differential-privacy mathematics: sensitivities, smooth sensitivity, floating-point-safe samplers."""
