"""Run and party secrets: private by construction, replayable only from their file."""

from __future__ import annotations

import json
import pickle
import stat

import numpy as np
import pytest

from parley.parties.run_secrets import FORMAT, FRESH, PartySecret, RunSecrets, SecretsError


@pytest.mark.fresh_secrets
def test_fresh_secrets_differ_and_never_show_in_a_repr_or_a_description():
    one, two = RunSecrets.fresh(), RunSecrets.fresh()
    assert one.key != two.key and one.source == FRESH and not one.reproducible
    for text in (repr(one), repr(one.party("compliance")), json.dumps(one.describe())):
        assert one.key.hex() not in text and one.party("compliance").key.hex() not in text
    assert one.describe()["source"] == FRESH and "fingerprint" not in one.describe()


def test_each_party_and_purpose_gets_an_independent_stream():
    run = RunSecrets(bytes(32), source="test")
    compliance, helper = run.party("compliance"), run.party("mpc-helper")
    assert compliance.key != helper.key != run.key and run.child("r0").key != run.child("r1").key
    draws = [s.rng(p).integers(0, 2**63, size=4) for s in (compliance, helper) for p in ("noise", "he-keys")]
    assert len({tuple(d) for d in draws}) == 4
    np.testing.assert_array_equal(compliance.rng("noise").integers(0, 2**63, size=4), draws[0])  # replayable


def test_a_secrets_file_is_written_private_once_and_read_back(tmp_path):
    path = tmp_path / "run.secrets"
    made = RunSecrets.from_file(path)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert json.loads(path.read_text()) == {"format": FORMAT, "secret": made.key.hex()}
    again = RunSecrets.resolve(path)
    assert again.key == made.key and again.reproducible and again.fingerprint == made.fingerprint
    assert made.fingerprint not in made.key.hex() and len(made.fingerprint) == 16


@pytest.mark.parametrize("text", ["not json", '{"format": "other", "secret": "00"}',
                                  f'{{"format": "{FORMAT}", "secret": "abcd"}}', f'{{"format": "{FORMAT}"}}'])
def test_a_file_that_is_not_a_secrets_file_is_refused_by_name(tmp_path, text):
    path = tmp_path / "bad.secrets"
    path.write_text(text)
    with pytest.raises(SecretsError, match="not a parley secrets file") as error:
        RunSecrets.from_file(path)
    assert str(path) in str(error.value)


def test_a_secret_of_the_wrong_size_is_refused_and_one_pickles_for_an_actor():
    with pytest.raises(ValueError, match="32 bytes"):
        PartySecret(b"short")
    secret = PartySecret.fresh()
    assert pickle.loads(pickle.dumps(secret)) == secret
