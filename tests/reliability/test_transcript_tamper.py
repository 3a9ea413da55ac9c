"""Transcript edits: an editor with parley's code and no private key cannot make a changed transcript verify.

The editor (tests/reliability/tamper.py) deletes, reorders, duplicates and
truncates messages of a real run's transcript, edits its keyring, recomputes the
hash chain and the end record's counts, and writes the file back in canonical
form; every such file must fail ``parley verify``. A rewrite under fresh keys is
self-consistent and must fail against the fingerprints and head the run
published. A cut file, or a run interrupted on purpose, is *incomplete* (exit 3),
never intact; every malformed file gets one line and a non-zero exit.

The default run does every edit on a 12-message run; ``python -m pytest -m
reliability -s tests/reliability/test_transcript_tamper.py`` adds a 5,000-case
byte-mutation campaign and the edit campaign on a Ray run (docs/reliability.md).
"""

from __future__ import annotations

import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from parley.parties.network import LocalDeployment
from parley.parties.transcript import check_transcript
from parley.parties.transcript.chain import FORMAT
from parley.protocols.errors import IncompleteTranscriptError, TranscriptError
from parley.scenarios import world as world_module
from parley.scenarios.catalog import scenario_path
from parley.scenarios.cli import (
    EXIT_FAILED,
    EXIT_INCOMPLETE,
    EXIT_OK,
    EXIT_USAGE,
    MATCHES_MSG,
    SAME_FOLDER_MSG,
    main,
)
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

from .tamper import byte_mutations, load, malformed_files, rechain, rekeyed, render, structural_edits

TARGETS = 5  # the single-query attack on 5 targets: 12 messages


def _scenario(name: str = "adult-raw-single-query", **values: object) -> Scenario:
    return Scenario.from_toml(scenario_path(name)).with_values({"backend": "local", "attack.targets": TARGETS,
                                                                 "dataset.audit_size": 400,
                                                                 **values})


@pytest.fixture(scope="module")
def run_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return run(_scenario(), tmp_path_factory.mktemp("tamper") / "run").run_dir


def _anchors(run_dir: Path) -> tuple[dict[str, str], str]:
    anchors = json.loads((run_dir / "result.json").read_text())["transcript"]
    return anchors["keys"], anchors["head"]


def _verdict(path: Path, keys: dict[str, str] | None = None, head: str | None = None) -> str:
    """intact, incomplete or failed (any other exception is a bug and fails the test)."""
    try:
        check_transcript(path, keys=keys, head=head)
    except IncompleteTranscriptError:
        return "incomplete"
    except TranscriptError:
        return "failed"
    return "intact"


def _one_line(capsys: pytest.CaptureFixture[str], prefix: str) -> str:
    out, err = capsys.readouterr()
    assert out == "", out
    assert err.count("\n") == 1 and err.startswith(prefix), err[:500]
    assert "Traceback" not in err
    return err


def test_a_run_publishes_anchors_and_verifies_against_them(run_dir, tmp_path, capsys):
    record = json.loads((run_dir / "result.json").read_text())
    keys, head = _anchors(run_dir)
    verified = check_transcript(run_dir / "transcript.jsonl", keys=keys, head=head)
    assert verified.messages == record["metrics"]["messages"] == record["transcript"]["messages"] == 2 * (TARGETS + 1)
    assert verified.head == head and verified.keys == keys and sorted(keys) == ["compliance", "data-center"]
    report = (run_dir / "report.md").read_text()
    assert head in report and all(fp in report for fp in keys.values())
    # a run folder alone: checked against its own result.json, and the last lines say what that proves
    assert main(["verify", str(run_dir)]) == EXIT_OK
    out = capsys.readouterr().out
    own = MATCHES_MSG.format(anchors=f"keys and head of {run_dir / 'result.json'}") + SAME_FOLDER_MSG
    assert f"head: {head}" in out and out.endswith(own + "\n") and own.count("\n") == 1
    flags = ["--keys", ",".join(f"{n}={fp}" for n, fp in keys.items()), "--head", head]
    assert main(["verify", str(run_dir / "transcript.jsonl"), *flags]) == EXIT_OK
    assert capsys.readouterr().out.endswith(MATCHES_MSG.format(anchors="keys and head given with --keys and --head")
                                            + "\n")
    kept = tmp_path / "kept" / "result.json"  # the anchors kept apart from the folder
    kept.parent.mkdir()
    kept.write_text((run_dir / "result.json").read_text())
    assert main(["verify", str(run_dir), "--expect", str(kept)]) == EXIT_OK
    assert capsys.readouterr().out.endswith(MATCHES_MSG.format(anchors=f"keys and head of {kept}") + "\n")
    assert main(["verify", str(run_dir), "--expect", str(kept), "--head", head]) == EXIT_OK
    assert capsys.readouterr().out.endswith(MATCHES_MSG.format(anchors=f"keys of {kept} and head of --head") + "\n")


def test_every_edit_without_a_private_key_is_detected(run_dir, tmp_path):
    lines = load(run_dir / "transcript.jsonl")
    path = tmp_path / "edited.jsonl"
    tried: Counter[str] = Counter()
    caught: Counter[str] = Counter()
    for family, edited in structural_edits(lines):
        path.write_text(render(edited), encoding="ascii")
        tried[family] += 1
        verdict = _verdict(path)  # no anchors: the transcript alone must give the edit away
        assert verdict == "failed", f"{family}: {verdict}"
        caught[family] += 1
    for family in sorted(tried):
        print(f"{family:<45} tried {tried[family]:>3}  caught {caught[family]:>3}")
    print(f"transcript edits: {sum(tried.values())} tried, {sum(caught.values())} caught")
    assert sum(tried.values()) >= 100 and caught == tried
    # The editor's code is right: with nothing edited, its rechained file verifies.
    path.write_text(render(rechain(lines)), encoding="ascii")
    assert _verdict(path) == "intact"


def test_a_rewrite_under_fresh_keys_fails_against_the_published_anchors(run_dir, tmp_path, capsys):
    keys, head = _anchors(run_dir)
    forged_dir = tmp_path / "forged"
    forged_dir.mkdir()
    forged = forged_dir / "transcript.jsonl"
    forged.write_text(render(rekeyed(load(run_dir / "transcript.jsonl"))), encoding="ascii")
    # Self-consistent: new keys signed everything. This is the limit a transcript alone cannot overcome.
    assert _verdict(forged) == "intact"
    assert _verdict(forged, keys=keys) == "failed"
    assert _verdict(forged, head=head) == "failed"
    assert _verdict(forged, keys=list(keys.values()), head=head) == "failed"
    with pytest.raises(TranscriptError, match="does not match the expected keys") as exc:
        check_transcript(forged, keys=keys)
    assert exc.value.line == 1
    assert main(["verify", str(forged), "--expect", str(run_dir / "result.json")]) == EXIT_FAILED
    _one_line(capsys, "parley: verify FAILED:")
    # The published anchors copied next to the forged transcript: the folder check fails too.
    (forged_dir / "result.json").write_text((run_dir / "result.json").read_text())
    assert main(["verify", str(forged_dir)]) == EXIT_FAILED
    _one_line(capsys, "parley: verify FAILED:")


def test_cut_transcripts_are_incomplete_never_intact(run_dir, tmp_path, capsys):
    text = (run_dir / "transcript.jsonl").read_bytes()
    lines = text.splitlines(keepends=True)
    path = tmp_path / "cut.jsonl"
    verdicts = Counter()
    for keep in range(0, len(lines)):  # every prefix of whole lines, the end record dropped
        path.write_bytes(b"".join(lines[:keep]))
        verdicts[_verdict(path)] += 1
    for at in np.linspace(1, len(text) - 1, 40).astype(int):  # cut inside a line: a torn last line
        path.write_bytes(text[:at])
        verdicts[_verdict(path)] += 1
    assert verdicts == Counter({"incomplete": len(lines) + 40})
    path.write_bytes(b"".join(lines[:-1]))
    with pytest.raises(IncompleteTranscriptError, match="no end record") as exc:
        check_transcript(path)
    assert exc.value.messages == len(lines) - 2
    assert main(["verify", str(path)]) == EXIT_INCOMPLETE
    assert "parley: verify INCOMPLETE:" in _one_line(capsys, "parley: verify INCOMPLETE:")


class _Interrupting(LocalDeployment):
    """In-process parties whose network is interrupted (Ctrl-C) at a fixed call: deterministic, no timing."""

    def __init__(self, method: str, at: int) -> None:
        super().__init__()
        self.method, self.at, self.calls = method, at, 0

    def call(self, slot: str, method: str, *args: object, **kwargs: object) -> object:
        if method == self.method:
            self.calls += 1
            if self.calls == self.at:
                raise KeyboardInterrupt
        return super().call(slot, method, *args, **kwargs)


@pytest.mark.parametrize(("method", "at"), [("deliver", 7), ("countersign", 2)],
                         ids=["mid-exchange", "while-the-parties-sign-the-end"])
def test_an_interrupted_run_is_incomplete(tmp_path, monkeypatch, capsys, method, at):
    monkeypatch.setattr(world_module, "LocalDeployment", lambda: _Interrupting(method, at))
    out = tmp_path / "interrupted"
    with pytest.raises(KeyboardInterrupt):
        run(_scenario(), out)
    assert not (out / "result.json").exists()
    with pytest.raises(IncompleteTranscriptError) as exc:
        check_transcript(out / "transcript.jsonl")
    assert exc.value.messages == (7 if method == "deliver" else 2 * (TARGETS + 1))
    assert main(["verify", str(out)]) == EXIT_INCOMPLETE
    _one_line(capsys, "parley: verify INCOMPLETE:")


#: What the refusal of some malformed files must name (the rest must only fail in one line).
REASONS = {
    "lone surrogate": "lone surrogate",
    "5,000-digit integer": "digits",
    "100,000-deep JSON": "nested",
    "duplicate record key, first copy fake": "duplicate key 'record'",
    "extra top-level field": "exactly the fields",
    "junk in base64 data": "base64",
    "non-canonical base64": "canonical base64",
    "whitespace re-encoding": "canonical form",
    "key order re-encoding": "canonical form",
    "envelope seq = '0'": "seq",
    "keyring keys a list": "keyring",
    "old format": "older parley",
}


def test_malformed_files_fail_in_one_line(run_dir, tmp_path, capsys):
    lines = load(run_dir / "transcript.jsonl")
    path = tmp_path / "malformed.jsonl"
    tried = 0
    names = []
    for case, data in malformed_files(lines):
        path.write_bytes(data)
        code = main(["verify", str(path)])
        err = _one_line(capsys, "parley: verify FAILED:")
        assert code == EXIT_FAILED, case
        if case in REASONS:
            assert REASONS[case] in err, (case, err)
        tried += 1
        names.append(case)
    assert set(REASONS) <= set(names)
    print(f"malformed files: {tried} tried, {tried} refused in one line")
    assert tried >= 50


@pytest.mark.parametrize("argv", [
    ["--keys", "abc"], ["--keys", "compliance=xyz"], ["--head", "1234"], ["--expect", "missing.json"],
    ["--expect", "deep.json"], ["--expect", "partial.json"],
])
def test_bad_anchors_are_usage_errors(run_dir, tmp_path, capsys, monkeypatch, argv):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000)
    (tmp_path / "partial.json").write_text(json.dumps({"transcript": {"keys": {"x": "y"}}}))
    assert main(["verify", str(run_dir / "transcript.jsonl"), *argv]) == EXIT_USAGE
    _one_line(capsys, "parley: error:")


def test_an_older_transcript_is_refused_by_name(run_dir, tmp_path):
    old = (run_dir / "transcript.jsonl").read_text().replace(FORMAT, "parley-transcript-v3", 1)
    path = tmp_path / "old.jsonl"
    path.write_text(old)
    with pytest.raises(TranscriptError, match="older parley") as exc:
        check_transcript(path)
    assert exc.value.line == 1


# --------------------------------------------------------------------------- campaigns
@pytest.mark.reliability
def test_byte_mutation_campaign(run_dir, tmp_path):
    """5,000 seeded byte edits (flip, delete, insert, duplicate a span): none verifies as intact."""
    text = (run_dir / "transcript.jsonl").read_bytes()
    path = tmp_path / "mutated.jsonl"
    verdicts: Counter[str] = Counter()
    for _how, data in byte_mutations(text, np.random.default_rng(2026), 5000):
        path.write_bytes(data)
        verdicts[_verdict(path)] += 1
    print(f"byte mutations: {sum(verdicts.values())} tried, {verdicts['failed']} failed, "
          f"{verdicts['incomplete']} incomplete, {verdicts['intact']} intact")
    assert verdicts["intact"] == 0 and sum(verdicts.values()) >= 4900


@pytest.mark.reliability
@pytest.mark.ray
@pytest.mark.parametrize(("name", "values"), [("adult-raw-double-query", {"attack.targets": 20}),
                                              ("adult-observer-honest", {})])
def test_edit_campaign_on_ray_runs(ray_session, tmp_path, name, values):
    """Every edit on a Ray run (parties in their own processes sign what they saw), with an observer in the keyring."""
    scenario = Scenario.from_toml(scenario_path(name)).with_values({"backend": "ray", **values})
    done = run(scenario, tmp_path / "run")
    keys, head = _anchors(done.run_dir)
    assert check_transcript(done.transcript_path, keys=keys, head=head).messages == done.metrics["messages"]
    lines = load(done.transcript_path)
    path = tmp_path / "edited.jsonl"
    tried = 0
    for family, edited in structural_edits(lines):
        path.write_text(render(edited), encoding="ascii")
        assert _verdict(path) == "failed", family
        tried += 1
    path.write_text(render(rekeyed(lines)), encoding="ascii")
    assert _verdict(path, keys=keys, head=head) == "failed"
    print(f"{name} on Ray ({len(lines) - 2} messages): {tried + 1} edits tried, {tried + 1} caught")
