"""Ray for a run: a private local instance, or a cluster joined by address, with parley shipped to its workers."""

from __future__ import annotations

import atexit
import contextlib
import functools
import importlib.util
import os
import shutil
import socket
import sys
import tempfile
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import ray

from parley.protocols.errors import InternalError, ParleyError

__all__ = ["CONNECT_TIMEOUT_S", "ClusterError", "cluster_runtime_env", "ensure_ray"]

#: Seconds a connection to a cluster may take before parley gives up on the address (the GCS check waits twice this).
CONNECT_TIMEOUT_S = 15.0
#: The subpackages installed under ``parley`` (and shipped to a cluster's workers with it).
SUBPACKAGES = ("parties", "protocols", "scenarios")

BAD_ADDRESS = "--address must be HOST:PORT (what `ray start --head` prints) or 'auto', got {address!r}"
UNREACHABLE = ("no Ray cluster answers at {address} ({reason}); start one with `ray start --head` and pass the "
               "address it prints, or --address auto for the cluster running on this machine")
NOT_RAY = ("{address} answers but not as a Ray cluster's GCS ({reason}); pass the address `ray start --head` "
           "prints (port 6379 unless --port was given)")
TOKEN_REFUSED = ("the Ray cluster at {address} refused this machine's authentication token (from {source}); "
                 "give this machine the cluster's token (`ray get-auth-token` on its head) in ~/.ray/auth_token, "
                 "RAY_AUTH_TOKEN_PATH or RAY_AUTH_TOKEN")
TOKEN_MISSING = ("the Ray cluster at {address} requires token authentication and this machine sends no token; "
                 "put the cluster's token (`ray get-auth-token` on its head) in ~/.ray/auth_token or RAY_AUTH_TOKEN")
NO_LOCAL_CLUSTER = ("--address auto: no Ray cluster runs on this machine; start one with `ray start --head`, "
                    "or leave --address out for a private instance")
JOIN_FAILED = "could not join the Ray cluster at {address}: {error}"


class ClusterError(ParleyError):
    """A Ray cluster that cannot be joined: bad address, nothing answering, refused token."""


def ensure_ray(address: str | None = None, num_cpus: int | None = None) -> None:
    """Start a private local Ray instance, or join the cluster at ``address``, unless already connected.

    Without ``address`` parley never joins a cluster that happens to run on this machine (nor the one
    ``RAY_ADDRESS`` names): it starts its own instance. With ``address`` (``HOST:PORT`` as ``ray start
    --head`` prints it, or ``"auto"`` for the cluster running on this machine) it first checks, within
    :data:`CONNECT_TIMEOUT_S`, that a Ray cluster answers there and accepts this machine's token, then
    joins it and ships parley's code to its workers (:func:`cluster_runtime_env`).

    Raises
    ------
    ClusterError
        A malformed or unreachable address, something other than a Ray cluster at it, a refused or
        missing token, or a join that failed.
    """
    if ray.is_initialized():
        return
    kwargs: dict[str, Any] = {"include_dashboard": False, "log_to_driver": False, "configure_logging": False}
    if not address:  # a private instance: never join a cluster that happens to run on this machine
        ray.init(address="local", num_cpus=num_cpus, **kwargs)
        return
    address = address.strip()
    if address != "auto" and not address.startswith("ray://"):
        _check_cluster(address)
    try:
        with _quiet_stderr():
            ray.init(address=address, runtime_env=cluster_runtime_env(), **kwargs)
    except ClusterError:
        raise
    except Exception as exc:
        if address == "auto" and isinstance(exc, ConnectionError):
            raise ClusterError(NO_LOCAL_CLUSTER) from None
        if _is_auth_error(exc):
            raise ClusterError(_token_message(address)) from None
        first = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
        raise ClusterError(JOIN_FAILED.format(address=address, error=f"{type(exc).__name__}: {first}")) from None


def _split_address(address: str) -> tuple[str, int]:
    host, sep, port = address.rpartition(":")
    host = host.strip("[]")
    if not sep or not host or not port.isdigit() or not 0 < int(port) < 65536:
        raise ClusterError(BAD_ADDRESS.format(address=address))
    return host, int(port)


def _check_cluster(address: str) -> None:
    """Fail fast, with one line, unless a Ray cluster that accepts this machine answers at ``address``.

    A TCP connection first (a refused port, an unknown host or a silent one fail here within
    :data:`CONNECT_TIMEOUT_S`; Ray's own client would retry for minutes), then one request to the
    cluster's GCS, which says whether it is a Ray cluster and whether it accepts our token.
    """
    host, port = _split_address(address)
    try:
        socket.create_connection((host, port), timeout=CONNECT_TIMEOUT_S).close()
    except socket.gaierror:
        raise ClusterError(UNREACHABLE.format(address=address, reason=f"unknown host {host!r}")) from None
    except TimeoutError:
        raise ClusterError(UNREACHABLE.format(address=address,
                                              reason=f"no answer within {CONNECT_TIMEOUT_S:.0f} s")) from None
    except OSError as exc:
        raise ClusterError(UNREACHABLE.format(address=address, reason=exc.strerror or type(exc).__name__)) from None
    _enable_token_auth()
    outcome: dict[str, BaseException | None] = {}

    def probe() -> None:
        try:
            from ray._raylet import GcsClient  # type: ignore[attr-defined]

            GcsClient(address=address).internal_kv_get(b"parley-probe", None, timeout=CONNECT_TIMEOUT_S)
            outcome["error"] = None
        except BaseException as exc:  # handed to the caller's thread
            outcome["error"] = exc

    # Ray's GCS client retries a port that accepts connections but does not answer for tens of
    # seconds; the probe runs in a daemon thread so that the wait is ours to bound.
    with _quiet_stderr():
        thread = threading.Thread(target=probe, name="parley-gcs-probe", daemon=True)
        thread.start()
        thread.join(CONNECT_TIMEOUT_S * 2)
    if "error" not in outcome:
        raise ClusterError(NOT_RAY.format(address=address, reason=f"no answer within {2 * CONNECT_TIMEOUT_S:.0f} s"))
    error = outcome["error"]
    if error is None:
        return
    if _is_auth_error(error):
        raise ClusterError(_token_message(address))
    detail = (str(error).strip().splitlines() or [""])[0].removeprefix("RPC error:").strip()
    reason = f"{type(error).__name__}: {detail}" if detail else type(error).__name__
    raise ClusterError(NOT_RAY.format(address=address, reason=reason[:200]))


def _enable_token_auth() -> None:
    """Send this machine's Ray token when there is one and ``RAY_AUTH_MODE`` does not say otherwise.

    Ray (2.5x-2.6x) turns token authentication on for a cluster started while ``~/.ray/auth_token``
    exists, but a client that joins by explicit address only sends a token when ``RAY_AUTH_MODE=token``;
    parley does what Ray does for ``address="auto"``: a token present means token mode.
    """
    try:
        from ray._private.authentication.authentication_token_setup import (
            maybe_enable_token_auth_if_token_available,
        )
    except ImportError:  # a Ray without token authentication
        return
    maybe_enable_token_auth_if_token_available(warn_if_disabled=False)


def _token_source() -> str | None:
    """Where Ray reads this machine's token from, or None if there is none."""
    if os.environ.get("RAY_AUTH_TOKEN"):
        return "the RAY_AUTH_TOKEN variable"
    path = os.environ.get("RAY_AUTH_TOKEN_PATH")
    if path:
        return path if Path(path).is_file() else None
    default = Path.home() / ".ray" / "auth_token"
    return str(default) if default.is_file() else None


def _token_message(address: str) -> str:
    source = _token_source()
    if source is None or os.environ.get("RAY_AUTH_MODE", "").lower() == "disabled":
        return TOKEN_MISSING.format(address=address)
    return TOKEN_REFUSED.format(address=address, source=source)


def _is_auth_error(exc: BaseException) -> bool:
    auth_error = getattr(ray.exceptions, "AuthenticationError", None)
    return (auth_error is not None and isinstance(exc, auth_error)) or "InvalidAuthToken" in str(exc)


@contextlib.contextmanager
def _quiet_stderr() -> Iterator[None]:
    """Drop what Ray's C++ core writes to file descriptor 2 meanwhile (its retry and auth warnings).

    Whatever goes wrong in the block becomes one :class:`ClusterError` line; Ray's lines about
    it would only bury that line.
    """
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as held:
        os.dup2(held.fileno(), 2)
        try:
            yield
        finally:
            os.dup2(saved, 2)
            os.close(saved)


@functools.lru_cache(maxsize=1)
def cluster_runtime_env() -> dict[str, Any]:
    """The Ray ``runtime_env`` that ships this parley, code and data, to every worker of a cluster.

    A copy of the installed package (``parley`` with its ``parties``, ``protocols`` and ``scenarios``
    subpackages, the catalog and the bundled data sets; no bytecode) goes into a temporary folder
    and Ray's ``py_modules`` uploads it once per content hash: the workers import exactly the
    driver's parley, whether or not their own Python environment has one. Pass it to ``ray.init``
    when you connect to a cluster yourself.
    """
    package = importlib.util.find_spec("parley")  # found, not imported: parties stay below the public API
    if package is None or package.origin is None:
        raise InternalError("bug: the parley package has no folder to ship")
    root = Path(tempfile.mkdtemp(prefix="parley-ship-")) / "parley"
    atexit.register(shutil.rmtree, root.parent, ignore_errors=True)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc", "*.egg-info")
    shutil.copytree(Path(package.origin).parent, root, ignore=ignore)
    for sub in SUBPACKAGES:  # an editable install keeps them beside parley/, not inside it
        if not (root / sub).is_dir():
            spec = importlib.util.find_spec(f"parley.{sub}")
            if spec is None or not spec.submodule_search_locations:
                raise InternalError(f"bug: parley.{sub} has no folder to ship")
            shutil.copytree(Path(list(spec.submodule_search_locations)[0]), root / sub, ignore=ignore)
    return {"py_modules": [str(root)]}
