"""Serve the workshop app with uvicorn: in the foreground (``parley workshop``) or in a thread (tests)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

import uvicorn
from starlette.applications import Starlette

__all__ = ["free_port", "serve", "serving"]

NOT_STARTED = "the workshop server did not start on {host}:{port} within {timeout} s"


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port on ``host`` that nothing listens on now."""
    with socket.socket() as sock:
        sock.bind((host, 0))
        return int(sock.getsockname()[1])


def serve(app: Starlette, host: str = "127.0.0.1", port: int = 8000) -> None:
    """Serve ``app`` until Ctrl-C."""
    uvicorn.run(app, host=host, port=port, log_level="warning")


@contextmanager
def serving(app: Starlette, host: str = "127.0.0.1", port: int | None = None,
            timeout: float = 20.0) -> Iterator[str]:
    """Serve ``app`` in a thread of this process; yields its base URL, stops it on exit."""
    port = free_port(host) if port is None else port
    server = uvicorn.Server(uvicorn.Config(app, host=host, port=port, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=server.run, name="parley-workshop", daemon=True)
    thread.start()
    deadline = time.monotonic() + timeout
    while not server.started:
        if not thread.is_alive() or time.monotonic() > deadline:
            raise RuntimeError(NOT_STARTED.format(host=host, port=port, timeout=timeout))
        time.sleep(0.02)
    try:
        yield f"http://{host}:{port}"
    finally:
        server.should_exit = True
        thread.join(timeout=10)
