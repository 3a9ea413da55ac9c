"""Strict parsing of one transcript line: exactly what the writer writes, its arrays and keyring included."""

from __future__ import annotations

import binascii
import json
import math
import secrets
from collections.abc import Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any

import numpy as np
from pydantic import ValidationError

from parley.parties.transcript.blobs import BLOB_BYTES, _BlobError, _BlobFile
from parley.parties.transcript.chain import FORMAT
from parley.parties.wire import (
    _ALL_FIELDS,
    _HEADER_FIELDS,
    LOWER_HEX,
    Envelope,
    KeyEntry,
    Keyring,
    b64decode_strict,
)
from parley.protocols.errors import TranscriptError

__all__ = ["MAX_ARRAY_DIMS", "MAX_DEPTH", "MAX_INT_DIGITS", "MAX_LINE_CHARS"]

#: Bounds of the verifying reader (far above anything a run writes).
MAX_LINE_CHARS = 1 << 31
MAX_DEPTH = 32
MAX_INT_DIGITS = 20
MAX_ARRAY_DIMS = 32

NOT_JSON_MSG = "not a JSON object ({error})"
NOT_ASCII_MSG = "not a transcript line (a byte outside ASCII at offset {offset})"
TOO_LONG_MSG = f"line longer than {MAX_LINE_CHARS:,} characters"
TOO_DEEP_MSG = f"nested deeper than {MAX_DEPTH} levels"
TOO_DEEP_PARSER_MSG = "nested too deep for the JSON parser"
BIG_INT_MSG = f"integer with more than {MAX_INT_DIGITS} digits"
DUPLICATE_KEY_MSG = "duplicate key {key!r}"
SURROGATE_MSG = "string with a lone surrogate at {path}"
NOT_CANONICAL_MSG = "not in canonical form (sorted keys, compact separators, ASCII escapes): the line was re-encoded"
FIELDS_MSG = "{what} must have exactly the fields {expected}, got {got}"
FIELD_TYPE_MSG = "{what} field {field!r} must be {expected}, got {got}"
MISSING_FIELD_MSG = "missing field {field!r}"
NO_KEYRING_MSG = "the first line must be the keyring record of a {format} transcript"
OLD_FORMAT_MSG = ("transcript format {got!r} is not {format!r}: written by an older parley, whose digests, end "
                  "records or array storage this one does not read (verify it with the parley that wrote it)")
BAD_KEYRING_MSG = "malformed keyring ({error})"
BAD_ENVELOPE_MSG = "not a valid envelope ({error})"
BAD_ARRAY_MSG = "array at {path} is malformed ({error})"

_ND_TAG = "__ndarray__"


class _Malformed(ValueError):
    """Raised inside the JSON parser's hooks; turned into a TranscriptError with the line number."""


def _pairs(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in pairs:
        if key in out:
            raise _Malformed(DUPLICATE_KEY_MSG.format(key=key[:80]))
        out[key] = value
    return out


def _bounded_int(text: str) -> int:
    if len(text) - text.startswith("-") > MAX_INT_DIGITS:
        raise _Malformed(BIG_INT_MSG)
    return int(text)


def _check_tree(value: Any, depth: int, path: str, arrays: list[dict[str, Any]]) -> None:
    """Depth bound and no lone surrogates over a parsed line (ASCII strings cost nothing); collects array specs."""
    if depth > MAX_DEPTH:
        raise _Malformed(TOO_DEEP_MSG)
    kind = type(value)
    if kind is str:
        if not value.isascii():
            try:
                value.encode("utf-8")
            except UnicodeEncodeError:
                raise _Malformed(SURROGATE_MSG.format(path=path)) from None
    elif kind is dict:
        spec = value.get(_ND_TAG)
        if type(spec) is dict and type(spec.get("data")) is str:
            arrays.append(spec)
        for key, item in value.items():
            _check_tree(key, depth + 1, path, arrays)
            _check_tree(item, depth + 1, f"{path}.{key[:40]}", arrays)
    elif kind is list:
        for i, item in enumerate(value):
            _check_tree(item, depth + 1, f"{path}[{i}]", arrays)


def _is_canonical(line: dict[str, Any], text: str, arrays: list[dict[str, Any]]) -> bool:
    """Is ``text`` exactly the writer's rendering of ``line``?

    Array data is taken out before rendering and spliced back, as the writer does,
    so the megabytes of base64 are compared, never re-escaped. Data that would need
    escaping cannot match: spliced raw, it differs from its escaped form in ``text``.
    """
    token = f"@{secrets.token_hex(8)}:"
    datas = [spec["data"] for spec in arrays]
    try:
        for i, spec in enumerate(arrays):
            spec["data"] = f"{token}{i}."
        rendered = json.dumps(line, sort_keys=True, separators=(",", ":")) + "\n"
    finally:
        for spec, data in zip(arrays, datas, strict=True):
            spec["data"] = data
    for i, data in enumerate(datas):
        rendered = rendered.replace(f"{token}{i}.", data, 1)
    return rendered == text


def _parse_line(number: int, raw: bytes) -> dict[str, Any]:
    """One line, parsed strictly and required to be in the writer's canonical form."""
    try:
        text = raw.decode("ascii")
    except UnicodeDecodeError as exc:
        raise TranscriptError(number, NOT_ASCII_MSG.format(offset=exc.start)) from None
    try:
        line = json.loads(text, object_pairs_hook=_pairs, parse_int=_bounded_int)
        arrays: list[dict[str, Any]] = []
        _check_tree(line, 0, "line", arrays)
    except json.JSONDecodeError as exc:
        raise TranscriptError(number, NOT_JSON_MSG.format(error=exc.msg)) from None
    except _Malformed as exc:
        raise TranscriptError(number, NOT_JSON_MSG.format(error=str(exc))) from None
    except RecursionError:
        raise TranscriptError(number, NOT_JSON_MSG.format(error=TOO_DEEP_PARSER_MSG)) from None
    except ValueError as exc:  # e.g. Python's own limit on integer digits
        raise TranscriptError(number, NOT_JSON_MSG.format(error=str(exc)[:200])) from None
    if type(line) is not dict:
        raise TranscriptError(number, NOT_JSON_MSG.format(error="top level is not an object"))
    _exact_fields(number, "a line", line, ("hash", "prev", "record"))
    if type(line["record"]) is not dict:
        raise TranscriptError(number, NOT_JSON_MSG.format(error="record is not an object"))
    for name in ("prev", "hash"):
        _hex_field(number, "the line", line, name, 64)
    if not _is_canonical(line, text, arrays):
        raise TranscriptError(number, NOT_CANONICAL_MSG)
    return line


def _exact_fields(number: int, what: str, record: Mapping[str, Any], expected: Iterable[str]) -> None:
    expected = sorted(expected)
    if sorted(record) != expected:
        got = sorted(record)
        missing = [f for f in expected if f not in record]
        if len(missing) == 1 and len(got) == len(expected) - 1:
            raise TranscriptError(number, MISSING_FIELD_MSG.format(field=missing[0]))
        raise TranscriptError(number, FIELDS_MSG.format(what=what, expected=", ".join(expected),
                                                        got=", ".join(map(repr, got[:20])) or "none"))


def _hex_field(number: int, what: str, record: Mapping[str, Any], name: str, length: int) -> None:
    value = record[name]
    if type(value) is not str or len(value) != length or not LOWER_HEX.issuperset(value):
        raise TranscriptError(number, FIELD_TYPE_MSG.format(what=what, field=name,
                                                            expected=f"{length} lowercase hex digits",
                                                            got=repr(value)[:80]))


_B64 = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"


def _canonical_base64(data: str, nbytes: int) -> bool:
    """Is ``data`` (already decoded strictly to ``nbytes`` bytes) the one base64 spelling of those bytes?

    Strict decoding still accepts set bits in the unused low bits of the last digit
    before the padding; those, and any length other than 4 ceil(n / 3), make a second
    spelling. Checked in O(1) instead of re-encoding megabytes.
    """
    if len(data) != 4 * ((nbytes + 2) // 3):
        return False
    pad = 2 if data.endswith("==") else 1 if data.endswith("=") else 0
    if pad == 0:
        return True
    unused = 4 if pad == 2 else 2
    return _B64.index(data[-pad - 1]) & ((1 << unused) - 1) == 0


def _decode_array(spec: Any, path: str, blobs: _BlobFile) -> np.ndarray:
    """A transcript array, accepted only in the exact form the writer produces."""
    if type(spec) is not dict or sorted(spec) not in (["data", "dtype", "shape"], ["blob", "dtype", "shape"]):
        raise ValueError("expected exactly the fields data, dtype, shape (or blob, dtype, shape)")
    dtype, shape = spec["dtype"], spec["shape"]
    if type(dtype) is not str:
        raise ValueError("dtype must be a string")
    try:
        dt = np.dtype(dtype)
    except TypeError:
        raise ValueError(f"unknown dtype {dtype[:40]!r}") from None
    if dt.kind not in "biuf" or dt.str != dtype:
        raise ValueError(f"dtype {dtype[:40]!r} is not a canonical numeric dtype")
    if type(shape) is not list or len(shape) > MAX_ARRAY_DIMS or any(type(d) is not int or d < 0 for d in shape):
        raise ValueError("shape must be a list of non-negative integers")
    nbytes = math.prod(shape) * dt.itemsize
    if ("blob" in spec) != (nbytes >= BLOB_BYTES):
        raise ValueError(f"an array of {nbytes} bytes is stored {'raw' if 'blob' in spec else 'as base64'} "
                         f"(arrays of at least {BLOB_BYTES} bytes go to the blob file, smaller ones in the line)")
    if "blob" in spec:
        # The writer appends each array where the previous one ended, so a blob file holds each array once, in order.
        if type(spec["blob"]) is not int or spec["blob"] != blobs.used:
            raise ValueError(f"blob offset {str(spec['blob'])[:40]} is not where the previous array's bytes end "
                             f"({blobs.used})")
        raw = blobs.read(blobs.used, nbytes)
        blobs.used += nbytes
        blobs.seen.update(raw)
        return np.frombuffer(raw, dtype=dt).reshape(shape)
    data = spec["data"]
    if type(data) is not str:
        raise ValueError("data must be base64 text")
    try:
        raw = b64decode_strict(data)
    except binascii.Error as exc:
        raise ValueError(f"data is not base64 ({exc})") from None
    if not _canonical_base64(data, len(raw)):
        raise ValueError("data is not canonical base64")
    if len(raw) != nbytes:
        raise ValueError(f"data holds {len(raw)} bytes, dtype and shape need {nbytes}")
    return np.frombuffer(raw, dtype=dt).reshape(shape)


def _decode_strict(value: Any, path: str, blobs: _BlobFile) -> Any:
    """Inverse of :func:`parley.parties.wire.encode_payload` that accepts only what it produces."""
    if type(value) is dict:
        if _ND_TAG in value:
            if len(value) != 1:
                raise ValueError(f"{path}: {_ND_TAG} beside other keys")
            try:
                return _decode_array(value[_ND_TAG], path, blobs)
            except ValueError as exc:
                raise ValueError(BAD_ARRAY_MSG.format(path=path, error=exc)) from None
        return {k: _decode_strict(v, f"{path}.{k}", blobs) for k, v in value.items()}
    if type(value) is list:
        return [_decode_strict(v, f"{path}[{i}]", blobs) for i, v in enumerate(value)]
    return value


_ENVELOPE_TYPES: dict[str, type] = {"id": str, "sender": str, "recipient": str, "kind": str, "protocol": str,
                                    "seq": int, "nonce": str, "timestamp": int, "head": str, "digest": str,
                                    "signature": str, "payload": dict}


def _strict_envelope(number: int, record: dict[str, Any], blobs: _BlobFile) -> Envelope:
    _exact_fields(number, "an envelope record", record, ("type", *_ALL_FIELDS))
    for name, expected in _ENVELOPE_TYPES.items():
        if type(record[name]) is not expected:
            raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error=FIELD_TYPE_MSG.format(
                what="envelope", field=name, expected=expected.__name__, got=type(record[name]).__name__)))
    if record["seq"] < 0:
        raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error="seq must be >= 0"))
    _hex_field(number, "envelope", record, "digest", 64)
    _hex_field(number, "envelope", record, "head", 64)
    _hex_field(number, "envelope", record, "signature", 128)
    try:
        payload = _decode_strict(record["payload"], "payload", blobs)
    except _BlobError as exc:
        raise TranscriptError(number, str(exc)) from None
    except ValueError as exc:
        raise TranscriptError(number, BAD_ENVELOPE_MSG.format(error=exc)) from None
    fields = {k: record[k] for k in _HEADER_FIELDS}
    return Envelope.model_construct(**fields, payload=payload, signature=record["signature"])


def _strict_keyring(number: int, record: dict[str, Any]) -> Keyring:
    if record.get("type") != "keyring":
        raise TranscriptError(number, NO_KEYRING_MSG.format(format=FORMAT))
    if record.get("format") != FORMAT:
        raise TranscriptError(number, OLD_FORMAT_MSG.format(got=str(record.get("format"))[:80], format=FORMAT))
    _exact_fields(number, "the keyring record", record, ("format", "keys", "type"))
    keys = record["keys"]
    if type(keys) is not dict or not keys:
        raise TranscriptError(number, BAD_KEYRING_MSG.format(error="keys must be a non-empty object"))
    ring = Keyring()
    for name, data in keys.items():
        try:
            entry = KeyEntry.model_validate(data, strict=True)
        except ValidationError as exc:
            first = exc.errors()[0]
            where = ".".join(map(str, first["loc"])) or "entry"
            error = f"{name[:40]!r}: {where}: {first['msg']}"
            raise TranscriptError(number, BAD_KEYRING_MSG.format(error=error)) from None
        if entry.name != name:
            error = f"entry {name[:40]!r} names {entry.name[:40]!r}"
            raise TranscriptError(number, BAD_KEYRING_MSG.format(error=error))
        for field_name in ("public_key", "kx_public"):
            value = getattr(entry, field_name)
            if value is None:
                continue
            if len(value) != 64 or not LOWER_HEX.issuperset(value):
                raise TranscriptError(number, BAD_KEYRING_MSG.format(
                    error=f"{name[:40]!r}: {field_name} must be 64 lowercase hex digits"))
        ring.add(entry)
    return ring


def _raw_lines(path: Path) -> Iterator[tuple[int, bytes]]:
    with path.open("rb") as fh:
        number = 0
        while True:
            raw = fh.readline(MAX_LINE_CHARS + 1)
            if not raw:
                return
            number += 1
            if len(raw) > MAX_LINE_CHARS:
                raise TranscriptError(number, TOO_LONG_MSG)
            yield number, raw
