"""Decoders that turn probe models and their answers into a reconstruction of A (LP, AMP, certification)."""
