"""A transcript verified while it is written gives what verifying the finished file gives, later edits included."""

from __future__ import annotations

import json

import numpy as np
import pytest

from parley.parties.transcript import (
    BLOB_BYTES,
    TranscriptFollower,
    TranscriptWriter,
    blob_path,
    read_transcript,
)
from parley.protocols.errors import IncompleteTranscriptError, TranscriptError


def _envelopes(identities, count=6):
    dc, comp = identities["data-center"], identities["compliance"]
    rng = np.random.default_rng(5)
    out = []
    for i in range(count):
        values = rng.random(BLOB_BYTES // 8 + i) if i % 3 == 2 else rng.random(5)  # every third one in the blob file
        sender, to = (dc, "compliance") if i % 2 == 0 else (comp, "data-center")
        out.append(sender.seal(to, "metric-query" if i % 2 == 0 else "metric-answer", "raw",
                               {"metric": "sp", "values": values, "query_id": f"q{i}"}))
    return out


def _same(got, expected):
    assert [(e.id, e.digest, e.signature) for e in got] == [(e.id, e.digest, e.signature) for e in expected]
    for a, b in zip(got, expected, strict=True):
        np.testing.assert_array_equal(a.payload["values"], b.payload["values"])


def test_lines_checked_as_they_are_written_give_what_the_finished_file_gives(tmp_path, identities, keyring):
    path = tmp_path / "transcript.jsonl"
    writer = TranscriptWriter(path, keyring, identities)
    follower = TranscriptFollower(writer)
    assert follower.step() is True  # the keyring line, flushed by the writer
    assert follower.step() is False  # nothing more written yet
    checked = []
    for envelope in _envelopes(identities):
        writer.append(envelope)
        assert follower.step(5) is True
        checked.append(len(follower.envelopes))
    writer.close()
    assert checked == [1, 2, 3, 4, 5, 6]  # each line checked before the next was written
    _same(follower.finish(), read_transcript(path))


class _Growing:
    """A finished transcript's bytes appearing in odd chunks, cutting lines anywhere (what another thread's
    writes can leave on disk between two steps); the bytes themselves are a real writer's."""

    def __init__(self, source, path, chunks):
        self.path, self._data, self._chunks, self._at = path, source.read_bytes(), iter(chunks), 0
        path.write_bytes(b"")

    def flush(self):
        size = next(self._chunks, len(self._data))
        with self.path.open("ab") as fh:
            fh.write(self._data[self._at:self._at + size])
        self._at += size


def test_a_line_on_disk_only_in_part_is_checked_once_whole(tmp_path, identities, keyring):
    source = tmp_path / "source.jsonl"
    with TranscriptWriter(source, keyring, identities) as writer:
        for envelope in _envelopes(identities):
            writer.append(envelope)
    blob_path(source).rename(blob_path(tmp_path / "grown.jsonl"))
    growing = _Growing(source, tmp_path / "grown.jsonl", [100, 7000, 1, 50_000, 3, 900_000] + [4096] * 300)
    follower = TranscriptFollower(growing)
    partial = 0
    while growing._at < len(growing._data):
        follower.step()
        partial += bool(follower._partial)
    assert partial > 0  # some steps did meet half a line
    _same(follower.finish(), read_transcript(growing.path))


def _written(tmp_path, identities, keyring, follow=True):
    """A finished transcript and its follower, which checked every line but the end record as it was written
    (``follow``) or none yet."""
    path = tmp_path / "transcript.jsonl"
    writer = TranscriptWriter(path, keyring, identities)
    follower = TranscriptFollower(writer)
    for envelope in _envelopes(identities):
        writer.append(envelope)
        if follow:
            follower.step(5)
    writer.close()
    return path, follower


def _flip_in_line(path, line_no):
    """The editor changes a line, keeping it canonical JSON and its length (a letter of its query id)."""
    lines = path.read_text().splitlines()
    line = json.loads(lines[line_no - 1])
    line["record"]["payload"]["query_id"] = "x" + line["record"]["payload"]["query_id"][1:]
    lines[line_no - 1] = json.dumps(line, sort_keys=True, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


def _same_failure(follower, path):
    """``finish`` fails exactly as verifying the finished files does, reason included."""
    with pytest.raises(TranscriptError) as by_file:
        read_transcript(path)
    with pytest.raises(TranscriptError) as followed:
        follower.finish()
    assert (type(followed.value), str(followed.value)) == (type(by_file.value), str(by_file.value))


@pytest.mark.parametrize("follow", [True, False], ids=["after-its-check", "before-its-check"])
def test_an_edited_line_fails_the_finish_as_it_fails_the_file(tmp_path, identities, keyring, follow):
    path, follower = _written(tmp_path, identities, keyring, follow)
    _flip_in_line(path, 3)
    _same_failure(follower, path)


def test_a_line_added_after_the_end_record_fails_the_finish_as_it_fails_the_file(tmp_path, identities, keyring):
    path, follower = _written(tmp_path, identities, keyring)
    with path.open("ab") as fh:
        fh.write(path.read_bytes().splitlines(keepends=True)[1])  # a replay of the first message after the end
    _same_failure(follower, path)


def test_the_blob_file_edited_after_its_check_fails_the_finish_as_it_fails_the_file(tmp_path, identities, keyring):
    path, follower = _written(tmp_path, identities, keyring)
    data = bytearray(blob_path(path).read_bytes())
    data[12345] ^= 1
    blob_path(path).write_bytes(bytes(data))
    _same_failure(follower, path)


def test_a_blob_file_replaced_by_a_directory_mid_run_fails_the_finish_without_escaping(tmp_path, identities, keyring):
    path, follower = _written(tmp_path, identities, keyring)  # the follower holds the first blob file open
    blob_path(path).rename(tmp_path / "moved")
    blob_path(path).mkdir()
    _same_failure(follower, path)


def test_an_edit_undone_before_the_end_leaves_the_verdict_of_the_finished_files(tmp_path, identities, keyring):
    """A line checked while edited, then restored: the finished files verify, and so does the report."""
    path = tmp_path / "transcript.jsonl"
    writer = TranscriptWriter(path, keyring, identities)
    follower = TranscriptFollower(writer)
    for envelope in _envelopes(identities):
        writer.append(envelope)
    writer.flush()
    original = path.read_bytes()
    _flip_in_line(path, 3)
    follower.step(5)  # line 3 checked while edited: it fails
    path.write_bytes(original)
    writer.close()
    _same(follower.finish(), read_transcript(path))


def test_a_run_that_never_ended_is_incomplete(tmp_path, identities, keyring):
    path = tmp_path / "transcript.jsonl"
    writer = TranscriptWriter(path, keyring, identities)
    follower = TranscriptFollower(writer)
    for envelope in _envelopes(identities, 3):
        writer.append(envelope)
        follower.step()
    writer.abort()
    with pytest.raises(IncompleteTranscriptError) as exc:
        follower.finish()
    assert exc.value.messages == 3
