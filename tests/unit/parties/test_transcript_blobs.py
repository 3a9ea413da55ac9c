"""Large arrays stored raw in the transcript's blob file: read back exactly, and no edit of the file goes unseen.

The editor here has parley's code and no private key: it edits the blob file, the offsets in the
lines, or moves an array between the line and the file with the same bytes (the signed digest
still matches); each must be refused, naming the line or the file.
"""

from __future__ import annotations

import base64
import json
import os

import numpy as np
import pytest

from parley.parties.transcript import (
    BLOB_BYTES,
    TranscriptWriter,
    blob_path,
    check_transcript,
    read_logged_envelope,
    read_transcript,
)
from parley.parties.wire import Identity, Keyring
from parley.protocols.errors import IncompleteTranscriptError, TranscriptError
from parley.scenarios.cli import main

LARGE = BLOB_BYTES // 8  # float64 elements: exactly the threshold


def _payloads() -> list[dict]:
    rng = np.random.default_rng(3)
    # "z" is met first, but JSON writes "a" first: the blob file must follow the line's order.
    return [{"z": rng.random(LARGE + 3), "a": rng.random((2, LARGE // 2)), "small": rng.random(LARGE - 1),
             "query_id": "q0"},
            {"values": rng.random(LARGE), "query_id": "q0"}]


@pytest.fixture
def written(tmp_path, identities, keyring):
    path = tmp_path / "transcript.jsonl"
    dc, comp = identities["data-center"], identities["compliance"]
    first, second = _payloads()
    sizes = []
    with TranscriptWriter(path, keyring, identities) as log:
        sizes.append(log.append(dc.seal("compliance", "metric-query", "raw", first)))
        sizes.append(log.append(comp.seal("data-center", "metric-answer", "raw", second)))
        lines, blobs = log.size, log.blob_size
    return path, sizes, lines, blobs


def _spec(path, line_no, *keys):
    record = json.loads(path.read_text().splitlines()[line_no - 1])["record"]["payload"]
    for key in keys:
        record = record[key]
    return record["__ndarray__"]


def _edit_line(path, line_no, change):
    lines = path.read_text().splitlines()
    line = json.loads(lines[line_no - 1])
    change(line["record"]["payload"])
    lines[line_no - 1] = json.dumps(line, sort_keys=True, separators=(",", ":"))
    path.write_text("\n".join(lines) + "\n")


def test_large_arrays_go_raw_to_the_blob_file_in_line_order_and_read_back_exactly(written):
    path, sizes, line_bytes, blob_bytes = written
    first, second = _payloads()
    assert check_transcript(path).messages == 2
    for verify in (True, False):
        got = read_transcript(path, verify=verify)
        for envelope, sent in zip(got, (first, second), strict=True):
            for key, value in sent.items():
                if isinstance(value, np.ndarray):
                    np.testing.assert_array_equal(envelope.payload[key], value)
    a, z, small = (_spec(path, 2, key) for key in ("a", "z", "small"))
    assert (a["blob"], z["blob"]) == (0, first["a"].nbytes)  # the line's order, not the order the writer met them
    assert "blob" not in small and len(base64.b64decode(small["data"])) == BLOB_BYTES - 8
    assert _spec(path, 3, "values")["blob"] == first["a"].nbytes + first["z"].nbytes
    assert blob_path(path).stat().st_size == blob_bytes == sum(x.nbytes for x in (first["a"], first["z"],
                                                                                  second["values"]))
    keyring_line = len(path.read_text().splitlines()[0]) + 1
    assert sum(sizes) == line_bytes - keyring_line + blob_bytes  # an append counts its line and its arrays' bytes
    assert path.stat().st_size < 1.5 * BLOB_BYTES  # base64 only for "small"


def test_a_journal_place_reads_its_arrays_from_the_blob_file(tmp_path, identities, keyring):
    path = tmp_path / "transcript.jsonl"
    first, _ = _payloads()
    with TranscriptWriter(path, keyring, identities) as log:
        envelope = identities["data-center"].seal("compliance", "metric-query", "raw", first)
        log.append(envelope)
        place = log.locate(envelope)
    assert place is not None
    back = read_logged_envelope(*place)
    assert back is not None and back.digest == envelope.digest
    np.testing.assert_array_equal(back.payload["z"], first["z"])
    with blob_path(path).open("r+b") as fh:  # one byte of the blob file changed: the place reads as nothing
        fh.seek(10)
        byte = fh.read(1)
        fh.seek(10)
        fh.write(bytes([byte[0] ^ 1]))
    assert read_logged_envelope(*place) is None


def _flip(path):
    data = bytearray(blob_path(path).read_bytes())
    data[BLOB_BYTES + 17] ^= 0x40
    blob_path(path).write_bytes(bytes(data))


def _truncate(path):
    data = blob_path(path).read_bytes()
    blob_path(path).write_bytes(data[:-1])


def _extend(path):
    with blob_path(path).open("ab") as fh:
        fh.write(b"\0")


def _delete(path):
    blob_path(path).unlink()


def _swap_offsets(path):
    """The first two arrays' bytes swapped in the file and their offsets in the line: each offset still names its
    own bytes, but no longer in the order the line names them."""
    z = _spec(path, 2, "z")
    data = blob_path(path).read_bytes()
    na = z["blob"]
    nz = len(data) - na - LARGE * 8
    blob_path(path).write_bytes(data[na:na + nz] + data[:na] + data[na + nz:])

    def change(payload):
        payload["a"]["__ndarray__"]["blob"], payload["z"]["__ndarray__"]["blob"] = nz, 0
    _edit_line(path, 2, change)


def _inline_a_large_array(path):
    """The last array written back into its line as base64: the same bytes, the signed digest still matches."""
    spec = _spec(path, 3, "values")
    data = blob_path(path).read_bytes()
    raw = data[spec["blob"]:]
    blob_path(path).write_bytes(data[:spec["blob"]])

    def change(payload):
        inner = payload["values"]["__ndarray__"]
        del inner["blob"]
        inner["data"] = base64.b64encode(raw).decode()
    _edit_line(path, 3, change)


def _blob_a_small_array(path):
    """The small array moved out of its line into the blob file where a reader meets it (after "a", before "z"),
    the offsets after it shifted to match: only the size rule is broken."""
    raw = base64.b64decode(_spec(path, 2, "small")["data"])
    data = blob_path(path).read_bytes()
    at = _spec(path, 2, "z")["blob"]
    blob_path(path).write_bytes(data[:at] + raw + data[at:])

    def change(payload):
        inner = payload["small"]["__ndarray__"]
        del inner["data"]
        inner["blob"] = at
        payload["z"]["__ndarray__"]["blob"] += len(raw)
    _edit_line(path, 2, change)

    def shift(payload):
        payload["values"]["__ndarray__"]["blob"] += len(raw)
    _edit_line(path, 3, shift)


def _huge_shape(path):
    """A shape naming 8 TB: refused from the file's size, before any read is sized by it."""
    def change(payload):
        payload["values"]["__ndarray__"]["shape"] = [1 << 40]
    _edit_line(path, 3, change)


def _sparse_gigabytes(path):
    """A shape naming 2 GiB and a sparse blob file that long (no disk): refused by the payload limit, unread."""
    def change(payload):
        payload["values"]["__ndarray__"]["shape"] = [1 << 28]
    _edit_line(path, 3, change)
    os.truncate(blob_path(path), _spec(path, 3, "values")["blob"] + (1 << 31))


def _fifo(path):
    """A named pipe for the blob file: refused at once (opening one to read would wait for a writer for ever)."""
    _delete(path)
    os.mkfifo(blob_path(path))


@pytest.mark.parametrize(("edit", "line", "reason"), [
    (_flip, 2, "digest"),
    (_truncate, 3, "names 1048576 bytes at offset 2097176"),
    (_extend, 4, "no line names"),
    (_delete, 2, "cannot be read"),
    (_swap_offsets, 2, "where the previous array's bytes end"),
    (_inline_a_large_array, 3, "is stored as base64"),
    (_blob_a_small_array, 2, "is stored raw"),
    (_huge_shape, 3, "names 8796093022208 bytes"),
    (_sparse_gigabytes, 3, "names 2147483648 bytes"),
    (_fifo, 2, "not a regular file"),
], ids=["a-flipped-bit", "truncated", "a-byte-appended", "deleted", "offsets-swapped", "a-large-array-inlined",
        "a-small-array-moved-out", "a-huge-shape",
        "a-sparse-2-GiB-file", "a-fifo"])
def test_every_edit_of_the_blob_file_or_its_offsets_is_refused(written, capsys, edit, line, reason):
    path = written[0]
    edit(path)
    with pytest.raises(TranscriptError, match=reason) as exc:
        check_transcript(path)
    assert exc.value.line == line
    assert main(["verify", str(path)]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and reason in err


def test_an_unchecked_read_names_a_missing_blob_file(written):
    path = written[0]
    _delete(path)
    with pytest.raises(TranscriptError, match="transcript.jsonl.blobs, which cannot be read") as exc:
        read_transcript(path, verify=False)
    assert exc.value.line == 2


def test_a_run_killed_between_an_array_and_its_line_is_incomplete(written):
    """The blob file is written before the line naming it: a kill between the two leaves bytes no line names,
    and the transcript reads as incomplete (never as edited, never as intact)."""
    path = written[0]
    lines = path.read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:2]))  # line 3 (and the end) never written; its array is in the blob file
    with pytest.raises(IncompleteTranscriptError) as exc:
        check_transcript(path)
    assert exc.value.messages == 1


def _fresh_parties() -> tuple[dict[str, Identity], Keyring]:
    ids = {name: Identity.generate(name, name) for name in ("compliance", "data-center")}
    ring = Keyring()
    for identity in ids.values():
        ring.add(identity.key_entry())
    return ids, ring


def test_a_new_run_removes_the_old_blob_file_and_never_writes_through_a_link(tmp_path):
    path = tmp_path / "transcript.jsonl"
    victim = tmp_path / "victim.bin"
    victim.write_bytes(b"keep me")
    blob_path(path).symlink_to(victim)
    ids, ring = _fresh_parties()
    with TranscriptWriter(path, ring, ids) as log:  # no large array: no blob file at all
        log.append(ids["data-center"].seal("compliance", "metric-query", "raw", {"x": np.zeros(3)}))
    assert not blob_path(path).exists() and not blob_path(path).is_symlink()
    assert check_transcript(path).messages == 1
    blob_path(path).symlink_to(victim)
    first, _ = _payloads()
    ids, ring = _fresh_parties()
    with TranscriptWriter(path, ring, ids) as log:
        log.append(ids["data-center"].seal("compliance", "metric-query", "raw", first))
    assert victim.read_bytes() == b"keep me" and not blob_path(path).is_symlink()
    assert check_transcript(path).messages == 1


def test_a_blob_path_that_names_no_file_is_no_blob_file(tmp_path):
    """A link to nowhere (or to itself) where the blob file would be: a transcript naming no blob verifies, one
    naming a blob fails naming the file; neither ends in an untyped error."""
    path = tmp_path / "transcript.jsonl"
    ids, ring = _fresh_parties()
    with TranscriptWriter(path, ring, ids) as log:
        log.append(ids["data-center"].seal("compliance", "metric-query", "raw", {"x": np.zeros(3)}))
    blob_path(path).symlink_to(blob_path(path))
    assert check_transcript(path).messages == 1
    blob_path(path).unlink()
    first, _ = _payloads()
    ids, ring = _fresh_parties()
    with TranscriptWriter(path, ring, ids) as log:
        log.append(ids["data-center"].seal("compliance", "metric-query", "raw", first))
    blob_path(path).unlink()
    blob_path(path).symlink_to(blob_path(path))
    with pytest.raises(TranscriptError, match="blobs, which cannot be read") as exc:
        check_transcript(path)
    assert exc.value.line == 2


def test_a_journal_place_of_a_linked_transcript_reads_the_blob_file_beside_the_link(tmp_path):
    """The run folder may hold transcript.jsonl as a link to a file further inside it: the blob file is written
    beside the name the run uses, and a restore reads it there."""
    (tmp_path / "sub").mkdir()
    (tmp_path / "sub" / "t.jsonl").touch()
    path = tmp_path / "transcript.jsonl"
    path.symlink_to(tmp_path / "sub" / "t.jsonl")
    first, _ = _payloads()
    ids, ring = _fresh_parties()
    with TranscriptWriter(path, ring, ids) as log:
        envelope = ids["data-center"].seal("compliance", "metric-query", "raw", first)
        log.append(envelope)
        place = log.locate(envelope)
    assert place is not None and blob_path(path).is_file()
    back = read_logged_envelope(*place)
    assert back is not None and back.digest == envelope.digest
    assert check_transcript(path).messages == 1
