"""Fixed party and run secrets for tests that need exact replays (an explicit act, as the docs ask).

A real run draws its secrets from OS entropy (:mod:`parley.parties.run_secrets`); a test that asserts exact
values passes one of these on purpose instead. Never derived from a scenario's seed.
"""

from __future__ import annotations

from parley.parties.run_secrets import SECRET_BYTES, PartySecret, RunSecrets

__all__ = ["party_secret", "run_secrets"]


def party_secret(k: int = 0) -> PartySecret:
    """The fixed party secret number ``k``."""
    return PartySecret(k.to_bytes(SECRET_BYTES, "little"))


def run_secrets(k: int = 0) -> RunSecrets:
    """The fixed run secrets number ``k`` (``source`` "test": reproducible, like a secrets file)."""
    return RunSecrets(k.to_bytes(SECRET_BYTES, "little"), source="test")
