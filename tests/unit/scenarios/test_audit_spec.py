"""The whole-scenario audit runs the view it audits: the audit set's release, the learner only where it is the query."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parley.parties.wire import Identity, Keyring
from parley.scenarios.compare.audit import audit_spec
from parley.scenarios.exchanges import EXCHANGES

DATASET = {"name": "adult", "audit_size": 50, "train_size": 300}


def test_an_rr_release_audit_releases_the_audit_set_only_even_when_the_row_names_a_learner():
    """With the row's two-step learner the run released the training set first, and the audit read that release."""
    spec = audit_spec({"name": "rr-release", "epsilon": 1.0}, DATASET, person=3, learner={"name": "two-step"})
    assert "learner" not in spec


def test_a_cov_threshold_audit_keeps_its_learner_whose_hypotheses_are_the_query():
    spec = audit_spec({"name": "cov-threshold", "rho": 0.1}, DATASET, learner={"name": "dfrr", "hypotheses": 50})
    assert spec["learner"] == {"name": "dfrr", "hypotheses": 50}


def test_the_rr_view_reads_the_audit_sets_release_whatever_came_first(tmp_path: Path):
    from parley.parties.transcript import TranscriptWriter

    compliance, dc = Identity.generate("compliance", "compliance"), Identity.generate("data-center", "data-center")
    keyring = Keyring()
    for identity in (compliance, dc):
        keyring.add(identity.key_entry())
    writer = TranscriptWriter(tmp_path / "transcript.jsonl", keyring)
    for name, z in (("train", np.zeros(8, dtype=np.int64)), ("audit", np.arange(8, dtype=np.int64) % 2)):
        writer.append(compliance.seal("data-center", "attribute-release", "rr-release", {"set": name, "z": z}))
    writer.abort()
    view = EXCHANGES["rr-release"].audit
    assert view is not None
    assert [view.statistic(tmp_path / "transcript.jsonl", person, 0) for person in (0, 1, 3)] == [0.0, 1.0, 1.0]
