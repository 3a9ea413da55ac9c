"""Limits on what a payload may hold, checked before anything else touches it.

A receive path hashes the payload (:func:`parley.parties.wire.payload_digest`),
the network logs it (:mod:`parley.parties.transcript`) and the compliance party
turns a query into an (m, n) float64 matrix. Each of these costs time or memory
in the size of the payload, and some fail outright on hostile values: a list
nested 5,000 deep exhausts Python's recursion limit, a 5,000-digit integer
exceeds Python's int-to-string limit, a lone surrogate character cannot be
encoded as UTF-8. The functions here refuse such payloads with a typed
:class:`~parley.protocols.errors.WireError` *before* those steps run, at a cost
bounded by the limits themselves:

* :func:`check_payload` walks the payload once, without recursion, and stops
  at the first of: nesting deeper than :data:`MAX_DEPTH`, more than
  :data:`MAX_NODES` values, an integer of more than :data:`MAX_INT_BITS` bits,
  a string that is not valid Unicode (a lone surrogate), or more than
  :data:`MAX_PAYLOAD_BYTES` of array and string data (array sizes are read from
  their headers, never copied). Its work is at most ``MAX_NODES`` steps and it
  allocates no more than the walk's stack.

The compliance party's own bound on a query's shape (models x people, before
the matrix is built) is :data:`parley.protocols.queries.MAX_QUERY_VALUES`.

Reasons: :data:`INVALID_PAYLOAD` (the same code as
:data:`parley.parties.wire.INVALID_PAYLOAD`) for values no party can read, and
:data:`PAYLOAD_TOO_LARGE` for payloads over a size limit.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import numpy as np

from parley.protocols.errors import WireError

__all__ = [
    "INVALID_PAYLOAD",
    "MAX_DEPTH",
    "MAX_INT_BITS",
    "MAX_NODES",
    "MAX_PAYLOAD_BYTES",
    "PAYLOAD_TOO_LARGE",
    "check_payload",
    "payload_size",
    "readable",
]

#: Refusal code of a value no party can read (same string as ``parley.parties.wire.INVALID_PAYLOAD``).
INVALID_PAYLOAD = "invalid-payload"
#: Refusal code of a payload over a size limit.
PAYLOAD_TOO_LARGE = "payload-too-large"

#: Deepest nesting of lists and dicts (parley's own payloads nest at most 4 deep).
MAX_DEPTH = 64
#: Most values (containers, scalars, arrays) in one payload.
MAX_NODES = 1_000_000
#: Widest integer: 1,024 bits (about 308 decimal digits; sequence numbers and sizes need 64).
MAX_INT_BITS = 1024
#: Most bytes of array and string data in one payload: the largest query of float64 values
#: (:data:`parley.protocols.queries.MAX_QUERY_VALUES`) plus 1 MiB for everything else.
MAX_PAYLOAD_BYTES = 8 * (1 << 24) + (1 << 20)

TOO_DEEP = "payload nests lists and dicts deeper than {limit} levels (at {path})"
TOO_MANY_NODES = "payload holds more than {limit} values"
INT_TOO_WIDE = "payload integer at {path} has {bits} bits, above the limit of {limit}"
BAD_UNICODE = "payload string at {path} is not valid Unicode ({error})"
TOO_MANY_BYTES = "payload holds {size} bytes of arrays and strings, above the limit of {limit}"


def _string_bytes(value: str, path: str) -> int:
    """UTF-8 size of ``value``; a lone surrogate (or any unencodable code point) is refused."""
    try:
        return len(value.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise WireError(INVALID_PAYLOAD, BAD_UNICODE.format(path=path, error=exc.reason)) from None


def _key_path(path: str, key: Any) -> str:
    """Path of a dict entry for messages; a key that is not printable text is shown by its type."""
    if type(key) is str:
        try:
            key.encode("utf-8")
            return f"{path}.{key[:40]}"
        except UnicodeEncodeError:
            pass
    return f"{path}.<{type(key).__name__}>"


def check_payload(payload: Any, *, max_bytes: int = MAX_PAYLOAD_BYTES) -> int:
    """Refuse a payload no party should process; return its size in bytes of arrays and strings.

    One iterative walk (no recursion, so no nesting depth can exhaust the
    stack), stopping at the first violation. Types it does not know are left
    to the digest, which refuses them with its own message.

    Parameters
    ----------
    payload : Any
        The payload (normally a dict) as received.
    max_bytes : int
        Size limit; default :data:`MAX_PAYLOAD_BYTES`.

    Returns
    -------
    int
        Bytes of array data (``nbytes``, read from the array header) and
        UTF-8 string data.

    Raises
    ------
    WireError
        :data:`INVALID_PAYLOAD` for nesting deeper than :data:`MAX_DEPTH`, an
        integer wider than :data:`MAX_INT_BITS` bits or a string that is not
        valid Unicode; :data:`PAYLOAD_TOO_LARGE` for more than
        :data:`MAX_NODES` values or ``max_bytes`` bytes.
    """
    size, nodes = 0, 0
    stack: list[tuple[Any, int, str]] = [(payload, 0, "payload")]
    while stack:
        value, depth, path = stack.pop()
        nodes += 1
        if nodes > MAX_NODES:
            raise WireError(PAYLOAD_TOO_LARGE, TOO_MANY_NODES.format(limit=MAX_NODES))
        kind = type(value)
        if kind is np.ndarray:
            size += int(value.nbytes)
        elif kind is str:
            size += _string_bytes(value, path)
        elif kind is int or isinstance(value, np.integer):
            bits = int(value).bit_length()
            if bits > MAX_INT_BITS:
                raise WireError(INVALID_PAYLOAD, INT_TOO_WIDE.format(path=path, bits=bits, limit=MAX_INT_BITS))
        elif kind is dict or kind is list or kind is tuple or isinstance(value, Mapping):
            if depth >= MAX_DEPTH:
                raise WireError(INVALID_PAYLOAD, TOO_DEEP.format(limit=MAX_DEPTH, path=path[:200]))
            if len(value) > MAX_NODES:
                raise WireError(PAYLOAD_TOO_LARGE, TOO_MANY_NODES.format(limit=MAX_NODES))
            if isinstance(value, Mapping):
                for key in value:
                    stack.append((key, depth + 1, f"{path}.<key>"))
                    stack.append((value[key], depth + 1, _key_path(path, key)))
            else:
                stack.extend((item, depth + 1, f"{path}[{i}]") for i, item in enumerate(value))
        if size > max_bytes:
            raise WireError(PAYLOAD_TOO_LARGE, TOO_MANY_BYTES.format(size=size, limit=max_bytes))
    return size


def payload_size(payload: Any) -> int:
    """Bytes of arrays and strings in ``payload`` (:func:`check_payload` without a size limit)."""
    return check_payload(payload, max_bytes=1 << 62)


def readable(text: str) -> str:
    """``text`` with every code point UTF-8 cannot encode (lone surrogates) written as a backslash escape.

    For what a party echoes back in a refusal (a hostile sender name, id or detail), so the refusal
    itself is always a payload that can be hashed and signed.
    """
    return text.encode("utf-8", "backslashreplace").decode("utf-8")
