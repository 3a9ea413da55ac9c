"""Transcripts: every alteration of a header, digest, signature or chain link is caught and located."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parley.parties.transcript import TranscriptWriter, read_transcript, verify_transcript
from parley.protocols.errors import TranscriptError
from parley.scenarios.cli import main


@pytest.fixture
def transcript(tmp_path, identities, keyring):
    path = tmp_path / "transcript.jsonl"
    dc, comp = identities["data-center"], identities["compliance"]
    with TranscriptWriter(path, keyring, identities) as log:
        for i in range(3):
            log.append(dc.seal("compliance", "metric-query", "raw",
                               {"metric": "sp", "predictions": np.full((2, 4), 0.25 * i), "query_id": f"q{i}"}))
            log.append(comp.seal("data-center", "metric-answer", "raw",
                                 {"metric": "sp", "values": np.array([0.1 * i, -0.2]), "query_id": f"q{i}"}))
    return path


def _flip_last_byte(hex_text: str) -> str:
    return hex_text[:-2] + f"{int(hex_text[-2:], 16) ^ 0xFF:02x}"


def _rewrite(path, line_no, change):
    lines = path.read_text().splitlines()
    record = json.loads(lines[line_no - 1])
    change(record)
    lines[line_no - 1] = json.dumps(record, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


def test_intact_transcript_verifies_and_reads_back(transcript):
    assert verify_transcript(transcript) == 6
    envelopes = read_transcript(transcript)
    assert [e.kind for e in envelopes[:2]] == ["metric-query", "metric-answer"]
    np.testing.assert_array_equal(envelopes[2].payload["predictions"], np.full((2, 4), 0.25))


@pytest.mark.parametrize(
    ("line_no", "change", "expected"),
    [
        (3, lambda r: r["record"].update(seq=7), "signature"),
        (4, lambda r: r["record"].update(signature=_flip_last_byte(r["record"]["signature"])), "signature"),
        (5, lambda r: r["record"].update(digest="0" * 64), "payload digest"),
        (5, lambda r: r.update(hash="0" * 64), "line hash"),
        (5, lambda r: r["record"]["payload"].update(metric="eo"), "payload digest"),
        (6, lambda r: r.update(prev="f" * 64), "chain link"),
        (2, lambda r: r["record"]["payload"].update(query_id="forged"), "payload digest"),
    ],
    ids=["header", "signature", "digest", "line-hash", "payload", "chain", "first-message"],
)
def test_each_alteration_names_its_line(transcript, line_no, change, expected):
    _rewrite(transcript, line_no, change)
    with pytest.raises(TranscriptError, match=expected) as exc:
        verify_transcript(transcript)
    assert exc.value.line == line_no


def test_recomputed_hash_still_fails_on_signature(transcript):
    """An editor who also recomputes the chain cannot fix the signature."""
    from parley.parties.transcript.chain import _chain_hash

    lines = [json.loads(t) for t in transcript.read_text().splitlines()]
    lines[3]["record"]["recipient"] = "observer"
    for i in range(3, len(lines)):
        lines[i]["prev"] = lines[i - 1]["hash"]
        lines[i]["hash"] = _chain_hash(lines[i]["prev"], lines[i]["record"])
    transcript.write_text("\n".join(json.dumps(x, sort_keys=True, separators=(",", ":")) for x in lines) + "\n")
    with pytest.raises(TranscriptError, match="signature") as exc:
        verify_transcript(transcript)
    assert exc.value.line == 4


def test_removed_or_reordered_lines_break_the_chain(transcript):
    lines = transcript.read_text().splitlines()
    transcript.write_text("\n".join(lines[:2] + lines[3:]) + "\n")
    with pytest.raises(TranscriptError, match="chain link") as exc:
        verify_transcript(transcript)
    assert exc.value.line == 3


def test_garbage_and_missing_keyring(transcript, tmp_path):
    lines = transcript.read_text().splitlines()
    transcript.write_text("\n".join(lines[:2] + ["{not json"] + lines[3:]) + "\n")
    with pytest.raises(TranscriptError, match="not a JSON object") as exc:
        verify_transcript(transcript)
    assert exc.value.line == 3
    headless = tmp_path / "headless.jsonl"
    headless.write_text("\n".join(lines[1:]) + "\n")
    with pytest.raises(TranscriptError) as exc:
        verify_transcript(headless)
    assert exc.value.line == 1


def test_cli_verify_exit_codes(transcript, capsys):
    assert main(["verify", str(transcript)]) == 0
    assert "verified 6 messages" in capsys.readouterr().out
    _rewrite(transcript, 4, lambda r: r["record"].update(signature="ab" * 64))
    assert main(["verify", str(transcript)]) == 1
    err = capsys.readouterr().err
    assert "line 4" in err and "signature" in err
    assert main(["verify", str(transcript.with_name("missing.jsonl"))]) == 2


def test_truncation_and_late_keyrings_are_caught(transcript, tmp_path):
    lines = transcript.read_text().splitlines()
    cut = tmp_path / "cut.jsonl"
    cut.write_text("\n".join(lines[:5]) + "\n")
    with pytest.raises(TranscriptError, match="no end record") as exc:
        verify_transcript(cut)
    assert exc.value.line == 6
    assert len(read_transcript(cut, verify=False)) == 4  # an observer can still read a run in progress
    late = tmp_path / "late.jsonl"
    late.write_text("\n".join(lines[:3] + [lines[0]] + lines[3:]) + "\n")
    with pytest.raises(TranscriptError, match="only stand on line 1") as exc:
        verify_transcript(late)
    assert exc.value.line == 4
    after = tmp_path / "after.jsonl"
    after.write_text("\n".join(lines + [lines[1]]) + "\n")
    with pytest.raises(TranscriptError, match="after the end record"):
        verify_transcript(after)


def test_envelope_errors_name_the_field(transcript):
    _rewrite(transcript, 2, lambda r: r["record"].pop("nonce"))
    with pytest.raises(TranscriptError, match="missing field .nonce.") as exc:
        verify_transcript(transcript)
    assert exc.value.line == 2


def test_arrays_met_out_of_key_order_are_written_where_they_stand(tmp_path, identities, keyring):
    """The writer meets a payload's arrays in insertion order, JSON writes them in sorted-key order (a secure
    protocol's ``mpc-partial`` carries several); each must land in its own place, and the line verify."""
    path = tmp_path / "transcript.jsonl"
    dc = identities["data-center"]
    payload = {"z": np.arange(6, dtype=np.uint32).reshape(2, 3), "b": [np.full(3, 7.5), {"a": np.array([1, 2])}],
               "query_id": "q0"}
    with TranscriptWriter(path, keyring, identities) as log:
        log.append(dc.seal("compliance", "metric-query", "raw", payload))
    verify_transcript(path)
    (back,) = read_transcript(path)
    np.testing.assert_array_equal(back.payload["z"], payload["z"])
    np.testing.assert_array_equal(back.payload["b"][0], payload["b"][0])
    np.testing.assert_array_equal(back.payload["b"][1]["a"], payload["b"][1]["a"])


def test_a_line_without_arrays_is_written_as_it_is_whatever_numbers_it_holds(tmp_path, identities, keyring):
    """Without arrays there is no placeholder token: a number followed by a dot (0.5) must not be taken for one."""
    path = tmp_path / "transcript.jsonl"
    with TranscriptWriter(path, keyring, identities) as log:
        size = log._write({"type": "note", "values": [0.5, 12.25]})
    line = path.read_text().splitlines()[1]
    assert json.loads(line)["record"] == {"type": "note", "values": [0.5, 12.25]} and size == len(line) + 1
