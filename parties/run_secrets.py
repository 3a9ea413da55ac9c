"""The parties' private randomness: secrets drawn from OS entropy, never from the public seed.

A run has two kinds of randomness, kept apart. The scenario seed is public (``result.json``
prints it) and drives the simulated world: the data split, training, hypothesis draws, the
attack's coins. Everything a party must keep to itself (DP noise, randomized-response coins,
CKKS keys and encryption randomness, the noise flood, secure computation's noise) comes from
that party's :class:`PartySecret`, derived from the run's :class:`RunSecrets`:

- ``RunSecrets.fresh()`` draws 32 bytes from the operating system (:func:`secrets.token_bytes`);
  parley writes them nowhere, so the run's noise cannot be reproduced by anyone.
- Reproducing a run exactly is an explicit act: ``parley run --secrets FILE`` (``secrets=`` in
  Python) reads the secrets from FILE, or writes fresh ones there (mode 0600) when FILE does not
  exist. The run folder records only the file's fingerprint, never its contents.

Each party receives only its own secret, ``BLAKE2b(key=run secret, "party:" + name)`` (a keyed
hash is a PRF: one party's secret tells nothing of another's nor of the run's), and expands it
into draws with ChaCha20 (:class:`randomgen.ChaCha`, 20 rounds), a cryptographically secure
stream: an adversary who sees many released draws (a constant model's noisy answer is its noise
exactly) learns nothing of the next ones. A study derives each row's run secrets the same way
from its own (:meth:`RunSecrets.child`).
"""

from __future__ import annotations

import hashlib
import json
import os
import secrets
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from randomgen import ChaCha

from parley.protocols.errors import ParleyError

__all__ = ["BAD_SECRETS_FILE", "FRESH", "FORMAT", "PartySecret", "RunSecrets", "SECRET_BYTES", "SecretsError"]

#: Bytes of every secret (256 bits: ChaCha20's key).
SECRET_BYTES = 32
#: The ``format`` field of a secrets file.
FORMAT = "parley-secrets-v1"
#: ``source`` of secrets drawn for this run only.
FRESH = "fresh"
BAD_SECRETS_FILE = ("{path}: not a parley secrets file ({why}); give a file written by 'parley run --secrets FILE' "
                    "or a path that does not exist yet (parley then writes fresh secrets there)")


class SecretsError(ParleyError):
    """A secrets file that cannot be read as one (a user error: the CLI prints it on one line)."""


def _derive(key: bytes, label: str) -> bytes:
    """A 32-byte key for ``label`` under ``key`` (keyed BLAKE2b, a PRF: labels give independent keys)."""
    return hashlib.blake2b(label.encode(), key=key, digest_size=SECRET_BYTES).digest()


def _check_key(key: object) -> None:
    if type(key) is not bytes or len(key) != SECRET_BYTES:
        raise ValueError(f"a secret is {SECRET_BYTES} bytes")


@dataclass(frozen=True)
class PartySecret:
    """One party's secret: the root of all the randomness it must keep private.

    Its ``repr`` hides the key, so a party's secret never reaches a log or a pickled error message by
    accident. Every purpose gets its own independent stream (:meth:`rng`).
    """

    key: bytes = field(repr=False)

    def __post_init__(self) -> None:
        _check_key(self.key)

    @classmethod
    def fresh(cls) -> PartySecret:
        """A secret from OS entropy, for a party built outside a run (tests, scripts)."""
        return cls(secrets.token_bytes(SECRET_BYTES))

    def rng(self, purpose: str) -> np.random.Generator:
        """A numpy generator for ``purpose`` over ChaCha20 keyed by this secret and the purpose."""
        return np.random.Generator(ChaCha(key=int.from_bytes(_derive(self.key, purpose), "little"), rounds=20))


@dataclass(frozen=True)
class RunSecrets:
    """The secret of one run (or of a study or comparison, whose runs get :meth:`child` secrets).

    ``source`` says where it came from: :data:`FRESH` or the secrets file's path; ``fingerprint`` names it
    in a run's outputs without revealing it.
    """

    key: bytes = field(repr=False)
    source: str = FRESH

    def __post_init__(self) -> None:
        _check_key(self.key)

    @classmethod
    def fresh(cls) -> RunSecrets:
        """Secrets for one run from OS entropy, written nowhere: the run's noise is not reproducible."""
        return cls(secrets.token_bytes(SECRET_BYTES))

    @classmethod
    def from_file(cls, path: str | Path) -> RunSecrets:
        """The secrets in ``path``, or fresh ones written there (readable by its owner only) if it does not exist."""
        path = Path(path)
        if not path.exists():
            made = cls(secrets.token_bytes(SECRET_BYTES), str(path))
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
            with os.fdopen(fd, "w", encoding="utf-8") as out:
                json.dump({"format": FORMAT, "secret": made.key.hex()}, out)
                out.write("\n")
            return made
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
            if not isinstance(data, dict) or data.get("format") != FORMAT:
                raise ValueError(f"its format is not {FORMAT!r}")
            key = bytes.fromhex(data["secret"])
            return cls(key, str(path))
        except (OSError, UnicodeDecodeError, ValueError, KeyError, TypeError) as exc:
            raise SecretsError(BAD_SECRETS_FILE.format(path=path, why=exc)) from None

    @classmethod
    def resolve(cls, given: RunSecrets | str | Path | None) -> RunSecrets:
        """``given`` as run secrets: None draws fresh ones, a path reads (or writes) a secrets file."""
        if given is None:
            return cls.fresh()
        return given if isinstance(given, RunSecrets) else cls.from_file(given)

    @property
    def fingerprint(self) -> str:
        """16 hex digits naming these secrets (a keyed hash: it reveals nothing of them)."""
        return _derive(self.key, "fingerprint").hex()[:16]

    @property
    def reproducible(self) -> bool:
        """Were these secrets read from (or written to) a file, so that whoever holds it can replay the noise?"""
        return self.source != FRESH

    def party(self, name: str) -> PartySecret:
        """The secret of the party ``name`` (only that party is handed it)."""
        return PartySecret(_derive(self.key, f"party:{name}"))

    def child(self, label: str) -> RunSecrets:
        """The secrets of one run of a study or comparison, labelled by its row (same source)."""
        return RunSecrets(_derive(self.key, f"run:{label}"), self.source)

    def describe(self) -> dict[str, Any]:
        """What a run's outputs say of its secrets: where they came from, never what they are."""
        if not self.reproducible:
            return {"source": FRESH, "note": "party secrets drawn from OS entropy and kept nowhere: "
                                             "the noise of this run cannot be reproduced"}
        return {"source": "file", "fingerprint": self.fingerprint,
                "note": "noise reproducible by whoever holds the secrets file"}
