"""The transcript editor: an adversary who has parley's code but none of the parties' private keys.

Every edit works on the parsed lines of a real transcript and then does what
the code allows without a key: recompute the hash chain, fix the end record's
message count, head and sent counts, and write the file back in the writer's
exact canonical form. The one edit that needs keys (a new keyring) generates
fresh keys and re-signs every envelope and the end record with them: it is
caught only against the fingerprints and head the run published.

:func:`structural_edits` enumerates the edits of the transcript-edit campaign;
:func:`malformed_files` the malformed files every ``parley verify`` must refuse
in one line.
"""

from __future__ import annotations

import base64
import copy
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np

from parley.parties.transcript.chain import FORMAT, _chain_hash
from parley.parties.wire import GENESIS, Identity, end_bytes, header_bytes

Lines = list[dict[str, Any]]


def load(path: Path) -> Lines:
    return [json.loads(text) for text in Path(path).read_text(encoding="ascii").splitlines()]


def render(lines: Lines) -> str:
    """The writer's canonical form: sorted keys, compact separators, one line each."""
    return "".join(json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n" for line in lines)


def envelopes(lines: Lines) -> list[int]:
    """Indices of the envelope lines."""
    return [i for i, line in enumerate(lines) if line["record"]["type"] == "envelope"]


def rechain(lines: Lines, resign: dict[str, Identity] | None = None) -> Lines:
    """Recompute every link and hash and make the end record agree (count, head, sent counts).

    Without keys the envelopes' signed heads and every signature stay as they
    were. With ``resign`` (fresh keys by party name) the editor also points each
    envelope's head at the rewritten chain and signs envelopes and end anew.
    """
    out = copy.deepcopy(lines)
    prev, renamed = GENESIS, {GENESIS: GENESIS}
    sent: dict[str, int] = {}
    for line in out:
        record = line["record"]
        if record["type"] == "envelope":
            sent[record["sender"]] = sent.get(record["sender"], 0) + 1
            if resign is not None and record["sender"] in resign:
                record["head"] = renamed.get(record["head"], record["head"])
                header = {k: record[k] for k in ("id", "sender", "recipient", "kind", "protocol", "seq", "nonce",
                                                 "timestamp", "head", "digest")}
                record["signature"] = resign[record["sender"]].private_key.sign(header_bytes(header)).signature.hex()
        elif record["type"] == "end":
            count = sum(1 for x in out if x["record"]["type"] == "envelope")
            record["messages"], record["head"] = count, prev
            for item in record["signatures"]:
                item["sent"] = sent.get(item["signer"], 0)
                if resign is not None and item["signer"] in resign:
                    item["signature"] = resign[item["signer"]].private_key.sign(
                        end_bytes(item["signer"], prev, count, item["sent"])).signature.hex()
        old = line["hash"]
        line["prev"] = prev
        line["hash"] = _chain_hash(prev, record)
        renamed[old] = line["hash"]
        prev = line["hash"]
    return out


def fresh_keyring(lines: Lines, names: list[str] | None = None) -> tuple[Lines, dict[str, Identity]]:
    """Replace the keys of ``names`` (all parties by default) by fresh ones; returns the lines and the new keys."""
    out = copy.deepcopy(lines)
    keys = out[0]["record"]["keys"]
    fresh = {}
    for name in names or list(keys):
        identity = Identity.generate(name, keys[name]["role"])
        fresh[name] = identity
        keys[name] = identity.key_entry().model_dump(exclude_none=True)
    return out, fresh


def _without(lines: Lines, drop: set[int]) -> Lines:
    return [line for i, line in enumerate(lines) if i not in drop]


def structural_edits(lines: Lines) -> Iterator[tuple[str, Lines]]:
    """Every edit of the campaign, each already rechained as the editor would: (family, edited lines).

    Edits that leave the file as it was (moving the last message to the end) are skipped.
    """
    original = render(lines)
    for family, edited in _edits(lines):
        if render(edited) != original:
            yield family, edited


def _edits(lines: Lines) -> Iterator[tuple[str, Lines]]:
    env = envelopes(lines)
    end = lines[-1]
    for i in env:  # delete one message
        yield "delete a message", rechain(_without(lines, {i}))
    for a, b in zip(env, env[1:], strict=False):  # delete a pair, swap a pair (an answer before its query)
        yield "delete a query/answer pair", rechain(_without(lines, {a, b}))
        swapped = list(lines)
        swapped[a], swapped[b] = swapped[b], swapped[a]
        yield "swap two neighbours", rechain(swapped)
    yield "reverse all messages", rechain([lines[0], *[lines[i] for i in reversed(env)], end])
    for i in env:  # duplicate a message: right after itself, and at the end
        yield "duplicate a message", rechain(lines[:i + 1] + [lines[i]] + lines[i + 1:])
        yield "replay a message at the end", rechain(lines[:-1] + [lines[i]] + [end])
    for keep in range(len(env)):  # cut after `keep` messages, with a new end record
        yield "truncate with a new end record", rechain([lines[0], *[lines[i] for i in env[:keep]], end])
    for i in env:  # move one message to the end
        yield "move a message to the end", rechain(_without(lines, {i})[:-1] + [lines[i], end])
    for i in env:  # a message taken from the middle and inserted at the start
        yield "move a message to the start", rechain([lines[0], lines[i], *_without(lines, {0, i})])
    # Keyring edits without re-signing: add a key, change one party's role, drop a key.
    extra = Identity.generate("auditor", "observer")
    with_extra = copy.deepcopy(lines)
    with_extra[0]["record"]["keys"]["auditor"] = extra.key_entry().model_dump(exclude_none=True)
    yield "add a key", rechain(with_extra)
    # ... and the editor who also signs the end as the party it added.
    signed_extra = rechain(with_extra)
    signed_extra[-1]["record"]["signatures"].append(extra.sign_end(signed_extra[-1]["record"]["head"],
                                                                   signed_extra[-1]["record"]["messages"]))
    signed_extra[-1]["record"]["signatures"].sort(key=lambda s: s["signer"])
    yield "add a key and sign the end with it", rechain(signed_extra)
    for name in lines[0]["record"]["keys"]:
        roles = copy.deepcopy(lines)
        roles[0]["record"]["keys"][name]["role"] = "observer"
        yield "change a party's role", rechain(roles)
        # Replace one party's key and re-sign its envelopes and end signature: the others' signatures still fail.
        one, fresh = fresh_keyring(lines, [name])
        yield "replace one party's key and re-sign as it", rechain(one, resign=fresh)
    # The end record is signed by no later line: its own fields must be exactly what the writer writes.
    respelled = copy.deepcopy(lines)
    respelled[-1]["record"]["messages"] = float(len(env))
    yield "respell the end record's count as a float", _keep_end(rechain(respelled), float(len(env)))
    # The payload of one message altered and its digest recomputed: the signature covers the digest.
    for i in env[:4]:
        forged = copy.deepcopy(lines)
        forged[i]["record"]["timestamp"] += 1
        yield "alter a signed header field", rechain(forged)
        forged = copy.deepcopy(lines)
        forged[i]["record"]["seq"] += 1
        yield "renumber a message", rechain(forged)


def _keep_end(lines: Lines, messages: Any) -> Lines:
    """Set the end record's count back to ``messages`` after :func:`rechain` and rehash the end line."""
    lines[-1]["record"]["messages"] = messages
    lines[-1]["hash"] = _chain_hash(lines[-1]["prev"], lines[-1]["record"])
    return lines


def rekeyed(lines: Lines) -> Lines:
    """The whole transcript under fresh keys, every envelope and the end re-signed: self-consistent, anchors differ."""
    out, fresh = fresh_keyring(lines)
    return rechain(out, resign=fresh)


def _line_text(line: dict[str, Any]) -> str:
    return json.dumps(line, sort_keys=True, separators=(",", ":"))


def _first_array(record: dict[str, Any]) -> dict[str, Any] | None:
    """The first ``__ndarray__`` spec inside a record's payload."""
    stack = [record.get("payload")]
    while stack:
        value = stack.pop()
        if isinstance(value, dict):
            if "__ndarray__" in value:
                return value["__ndarray__"]
            stack.extend(value.values())
        elif isinstance(value, list):
            stack.extend(value)
    return None


def malformed_files(lines: Lines) -> Iterator[tuple[str, bytes]]:
    """Malformed files: (case, file bytes). Each must be refused in one line with a non-zero exit."""
    good = [_line_text(line) for line in lines]

    def with_line(i: int, text: str) -> bytes:
        return ("\n".join(good[:i] + [text] + good[i + 1:]) + "\n").encode("ascii", "surrogateescape")

    env = envelopes(lines)
    i = env[0]
    yield "invalid JSON", with_line(i, good[i][:-5])
    yield "not an object", with_line(i, "[1,2,3]")
    yield "lone surrogate", with_line(i, good[i].replace('"kind":"', '"kind":"\\ud800', 1))
    yield "lone low surrogate in a payload key", with_line(i, good[i].replace('"payload":{"', '"payload":{"\\udc00', 1))
    yield "5,000-digit integer", with_line(i, good[i].replace('"seq":0', '"seq":' + "9" * 5000, 1))
    yield "21-digit integer", with_line(i, good[i].replace('"seq":0', '"seq":' + "1" * 21, 1))
    yield "100,000-deep JSON", with_line(i, "[" * 100_000 + "]" * 100_000)
    yield "100,000-deep JSON in a record", with_line(i, good[i][:-1] + ',"z":' + "[" * 100_000 + "]" * 100_000 + "}")
    yield "40-deep payload", with_line(i, good[i].replace('"payload":{', '"payload":{"deep":' + "[" * 40 + "]" * 40
                                                          + ",", 1))
    ring = copy.deepcopy(lines[0])
    ring["record"]["keys"] = list(ring["record"]["keys"].values())
    yield "keyring keys a list", with_line(0, _line_text(ring))
    ring = copy.deepcopy(lines[0])
    first = next(iter(ring["record"]["keys"]))
    ring["record"]["keys"][first]["public_key"] = "zz" * 32
    yield "keyring key not hex", with_line(0, _line_text(ring))
    ring = copy.deepcopy(lines[0])
    ring["record"]["keys"][first] = "not an entry"
    yield "keyring entry a string", with_line(0, _line_text(ring))
    ring = copy.deepcopy(lines[0])
    del ring["record"]["keys"][first]["public_key"]
    yield "keyring entry without a key", with_line(0, _line_text(ring))
    ring = copy.deepcopy(lines[0])
    ring["record"]["keys"][first]["extra"] = 1
    yield "keyring entry with an unknown field", with_line(0, _line_text(ring))
    ring = copy.deepcopy(lines[0])
    ring["record"]["keys"][first]["public_key"] = ring["record"]["keys"][first]["public_key"].upper()
    yield "keyring key in upper case", with_line(0, _line_text(ring))
    yield "extra top-level field", with_line(i, good[i][:-1] + ',"zz":1}')
    fake = copy.deepcopy(lines[i]["record"])
    fake["kind"] = "attribute-release"
    yield "duplicate record key, first copy fake", with_line(i, good[i].replace(
        '"record":', '"record":' + json.dumps(fake, sort_keys=True, separators=(",", ":")) + ',"record":', 1))
    yield "duplicate key inside a payload", with_line(i, good[i].replace('"payload":{', '"payload":{"x":1,"x":2,', 1))
    for field in ("nonce", "head", "signature", "payload"):
        missing = copy.deepcopy(lines[i])
        del missing["record"][field]
        yield f"envelope without {field}", with_line(i, _line_text(missing))
    unknown = copy.deepcopy(lines[i])
    unknown["record"]["note"] = "hi"
    yield "envelope with an unknown field", with_line(i, _line_text(unknown))
    for field, value in (("seq", "0"), ("seq", True), ("seq", 0.0), ("seq", -1), ("timestamp", 1.5), ("payload", []),
                         ("sender", 1), ("head", "0" * 63), ("signature", "AB" * 64)):
        typed = copy.deepcopy(lines[i])
        typed["record"][field] = value
        yield f"envelope {field} = {value!r}", with_line(i, _line_text(typed))
    ends = copy.deepcopy(lines[-1])
    ends["record"]["note"] = 1
    yield "end record with an unknown field", with_line(len(lines) - 1, _line_text(ends))
    ends = copy.deepcopy(lines[-1])
    del ends["record"]["signatures"]
    yield "end record without signatures", with_line(len(lines) - 1, _line_text(ends))
    ends = copy.deepcopy(lines[-1])
    ends["record"]["signatures"][0]["extra"] = 1
    yield "end signature with an unknown field", with_line(len(lines) - 1, _line_text(ends))
    ends = copy.deepcopy(lines[-1])
    ends["record"]["signatures"] = "x"
    yield "end signatures a string", with_line(len(lines) - 1, _line_text(ends))
    unknown_type = copy.deepcopy(lines[i])
    unknown_type["record"]["type"] = "note"
    yield "unknown record type", with_line(i, _line_text(unknown_type))
    # Array data: junk, non-canonical padding bits, wrong length, bad dtype, negative shape.
    with_array = next(j for j in env if _first_array(lines[j]["record"]) is not None)
    for case, change in _array_edits():
        edited = copy.deepcopy(lines[with_array])
        change(_first_array(edited["record"]))
        yield case, with_line(with_array, _line_text(edited))
    padded = [j for j in env if (_first_array(lines[j]["record"]) or {}).get("data", "").endswith("=")]
    if padded:  # the same bytes spelled with the unused bits of the last base64 digit set
        edited = copy.deepcopy(lines[padded[0]])
        spec = _first_array(edited["record"])
        spec["data"] = _noncanonical(spec["data"])
        yield "non-canonical base64", with_line(padded[0], _line_text(edited))
    # Re-encodings of the same content: whitespace, key order, escapes, float spelling.
    yield "whitespace re-encoding", with_line(i, json.dumps(lines[i], sort_keys=True))
    yield "key order re-encoding", with_line(i, _reordered(lines[i]))
    yield "escaped ASCII", with_line(i, good[i].replace('"kind":"m', '"kind":"\\u006d', 1))
    yield "CRLF line end", ("\n".join(good[:i] + [good[i] + "\r"] + good[i + 1:]) + "\n").encode()
    yield "non-ASCII byte", with_line(i, good[i]).replace(b'"kind":"', b'"kind":"\xc3\xa9', 1)
    yield "invalid UTF-8", with_line(i, good[i]).replace(b'"kind":"', b'"kind":"\xff', 1)
    yield "NUL byte", with_line(i, good[i]).replace(b'"kind":"', b'"kind":"\x00', 1)
    yield "old format", with_line(0, good[0].replace(FORMAT, "parley-transcript-v3", 1))
    yield "binary garbage", bytes(range(256)) * 4 + b"\n"
    yield "only a newline", b"\n"
    yield "NaN for an integer", with_line(i, good[i].replace('"seq":0', '"seq":NaN', 1))


def _reordered(line: dict[str, Any]) -> str:
    """The same line with its keys in reverse order (valid JSON, not the writer's form)."""
    def rev(value: Any) -> Any:
        if isinstance(value, dict):
            return {k: rev(value[k]) for k in sorted(value, reverse=True)}
        return value
    return json.dumps(rev(line), separators=(",", ":"))


def _array_edits() -> list[tuple[str, Callable[[dict[str, Any]], None]]]:
    def junk(spec: dict[str, Any]) -> None:
        spec["data"] = spec["data"][:4] + "!*" + spec["data"][4:]

    def spaces(spec: dict[str, Any]) -> None:
        spec["data"] = " ".join(spec["data"][k:k + 4] for k in range(0, len(spec["data"]), 4))

    def short(spec: dict[str, Any]) -> None:
        spec["data"] = base64.b64encode(base64.b64decode(spec["data"])[:-1]).decode()

    def dtype(spec: dict[str, Any]) -> None:
        spec["dtype"] = "|O"

    def unknown_dtype(spec: dict[str, Any]) -> None:
        spec["dtype"] = "<q9"

    def shape(spec: dict[str, Any]) -> None:
        spec["shape"] = [-1]

    def extra(spec: dict[str, Any]) -> None:
        spec["order"] = "C"

    return [("junk in base64 data", junk), ("spaces in base64", spaces),
            ("array data too short", short), ("object dtype", dtype), ("unknown dtype", unknown_dtype),
            ("negative shape", shape), ("array spec with an unknown field", extra)]


def _noncanonical(data: str) -> str:
    """Same bytes, different base64: set the unused low bits of the last digit before the padding."""
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    stripped = data.rstrip("=")
    pad = len(data) - len(stripped)
    unused = 4 if pad == 2 else 2
    last = alphabet.index(stripped[-1])
    return stripped[:-1] + alphabet[last | ((1 << unused) - 1)] + "=" * pad


def byte_mutations(text: bytes, rng: np.random.Generator, count: int) -> Iterator[tuple[str, bytes]]:
    """Seeded random byte edits of a canonical file: flip, delete, insert, duplicate a span."""
    for _ in range(count):
        how = rng.choice(["flip", "delete", "insert", "duplicate"])
        at = int(rng.integers(0, len(text)))
        if how == "flip":
            out = text[:at] + bytes([text[at] ^ int(rng.integers(1, 256))]) + text[at + 1:]
        elif how == "delete":
            out = text[:at] + text[at + int(rng.integers(1, 64)):]
        elif how == "insert":
            out = text[:at] + bytes(rng.integers(0, 256, int(rng.integers(1, 8)), dtype=np.uint8)) + text[at:]
        else:
            span = text[at:at + int(rng.integers(1, 256))]
            out = text[:at] + span + text[at:]
        if out != text:
            yield str(how), out
