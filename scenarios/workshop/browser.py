"""Headless Chromium driven over the DevTools protocol on a pipe: open pages, click, type, screenshot.

Chromium started with ``--remote-debugging-pipe`` reads DevTools commands on its file descriptor 3 and
writes replies and events on 4, each a JSON message ended by a NUL byte: no port, no websocket library,
no browser download (the machine's ``/usr/bin/chromium``). Clicks and keys go through ``Input.*``, as a
person's would: the page sees real mouse and keyboard events.
"""

from __future__ import annotations

import base64
import contextlib
import fcntl
import json
import os
import subprocess
import tempfile
import time
from pathlib import Path
from typing import Any

__all__ = ["CHROMIUM", "Browser", "BrowserError", "Page"]

CHROMIUM = Path("/usr/bin/chromium")
#: The flags this machine's closed network needs (no background connections, no sandbox as root).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars",
         "--disable-background-timer-throttling", "--disable-renderer-backgrounding"]


class BrowserError(RuntimeError):
    """A DevTools command failed, or a page did not reach the state waited for."""


class Browser:
    """One headless Chromium; :meth:`open` gives a :class:`Page` per tab. Use it as a context manager."""

    def __init__(self, executable: Path = CHROMIUM, timeout: float = 20.0) -> None:
        self.timeout = timeout
        self._profile = tempfile.TemporaryDirectory(prefix="parley-chromium-", ignore_cleanup_errors=True)
        to_chrome, self._write = os.pipe()
        self._read, from_chrome = os.pipe()

        def fds() -> None:  # in the child: the pipe's ends on the descriptors Chromium reads (3) and writes (4)
            # copies above 10 first, so that moving one onto 3 or 4 never overwrites the other
            high = [fcntl.fcntl(fd, fcntl.F_DUPFD, 10) for fd in (to_chrome, from_chrome)]
            os.dup2(high[0], 3)
            os.dup2(high[1], 4)

        self.process = subprocess.Popen(
            [str(executable), *FLAGS, "--remote-debugging-pipe", f"--user-data-dir={self._profile.name}",
             "about:blank"], pass_fds=(3, 4), preexec_fn=fds,
            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        os.close(to_chrome)
        os.close(from_chrome)
        self._buffer = b""
        self._next = 0
        self._stash: dict[int, dict[str, Any]] = {}

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """End Chromium and remove its profile."""
        for fd in (self._write, self._read):
            with contextlib.suppress(OSError):
                os.close(fd)
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        self._profile.cleanup()  # a Chromium child may still write into it as it exits: cleanup errors are ignored

    def send(self, method: str, params: dict[str, Any] | None = None, session: str | None = None) -> dict[str, Any]:
        """Run one DevTools command and return its result (events that arrive meanwhile are dropped)."""
        self._next += 1
        ident = self._next
        message: dict[str, Any] = {"id": ident, "method": method, "params": params or {}}
        if session is not None:
            message["sessionId"] = session
        os.write(self._write, json.dumps(message).encode() + b"\0")
        deadline = time.monotonic() + self.timeout
        while ident not in self._stash:
            if time.monotonic() > deadline:
                raise BrowserError(f"no reply to {method} within {self.timeout} s")
            while b"\0" in self._buffer:
                raw, self._buffer = self._buffer.split(b"\0", 1)
                reply = json.loads(raw)
                if "id" in reply:
                    self._stash[reply["id"]] = reply
            if ident not in self._stash:
                chunk = os.read(self._read, 1 << 20)
                if not chunk:
                    raise BrowserError("Chromium closed its DevTools pipe")
                self._buffer += chunk
        reply = self._stash.pop(ident)
        if "error" in reply:
            raise BrowserError(f"{method}: {reply['error'].get('message')}")
        return dict(reply.get("result", {}))

    def open(self, url: str, width: int = 1280, height: int = 900) -> Page:
        """A new tab of ``width`` x ``height`` CSS pixels showing ``url``, once its document has loaded."""
        target = self.send("Target.createTarget", {"url": "about:blank"})["targetId"]
        session = self.send("Target.attachToTarget", {"targetId": target, "flatten": True})["sessionId"]
        page = Page(self, session)
        self.send("Emulation.setDeviceMetricsOverride",
                  {"width": width, "height": height, "deviceScaleFactor": 1, "mobile": False}, session)
        page.goto(url)
        return page


class Page:
    """One tab: evaluate script, wait for a condition, click, type, choose, screenshot."""

    def __init__(self, browser: Browser, session: str) -> None:
        self.browser = browser
        self.session = session

    def send(self, method: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
        return self.browser.send(method, params, self.session)

    def goto(self, url: str) -> None:
        """Load ``url`` and wait until its document is complete."""
        self.send("Page.navigate", {"url": url})
        self.wait("document.readyState === 'complete' && location.href !== 'about:blank'")

    def eval(self, expression: str) -> Any:
        """The value of ``expression`` in the page (awaited if it is a promise)."""
        result = self.send("Runtime.evaluate", {"expression": expression, "returnByValue": True,
                                                "awaitPromise": True})
        if "exceptionDetails" in result:
            raise BrowserError(f"{expression[:80]}: {result['exceptionDetails'].get('text')} "
                               f"{result['exceptionDetails'].get('exception', {}).get('description', '')}")
        return result.get("result", {}).get("value")

    def wait(self, condition: str, timeout: float = 20.0) -> Any:
        """Poll ``condition`` until it is truthy; its value. BrowserError after ``timeout`` seconds."""
        deadline = time.monotonic() + timeout
        while True:
            try:
                value = self.eval(condition)
            except BrowserError:
                value = None
            if value:
                return value
            if time.monotonic() > deadline:
                raise BrowserError(f"timed out waiting for {condition!r}")
            time.sleep(0.05)

    def click(self, selector: str) -> None:
        """A real mouse click (press and release) in the middle of the element ``selector``."""
        box = self.wait(f"(function () {{ const e = document.querySelector({json.dumps(selector)});"
                        " if (!e || e.disabled) return null; e.scrollIntoView({block: 'center'});"
                        " const r = e.getBoundingClientRect(); return [r.x + r.width / 2, r.y + r.height / 2]; })()")
        for kind in ("mousePressed", "mouseReleased"):
            self.send("Input.dispatchMouseEvent", {"type": kind, "x": box[0], "y": box[1], "button": "left",
                                                   "clickCount": 1})

    def type(self, selector: str, text: str) -> None:
        """Click into the field ``selector``, clear it and type ``text`` (key events, as a keyboard would)."""
        self.click(selector)
        self.eval(f"document.querySelector({json.dumps(selector)}).select()")
        self.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": "Backspace", "code": "Backspace",
                                             "windowsVirtualKeyCode": 8})
        self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": "Backspace", "code": "Backspace",
                                             "windowsVirtualKeyCode": 8})
        for char in text:
            self.send("Input.dispatchKeyEvent", {"type": "keyDown", "key": char, "text": char})
            self.send("Input.dispatchKeyEvent", {"type": "keyUp", "key": char})

    def choose(self, selector: str, value: str) -> None:
        """Pick ``value`` in the ``<select>`` ``selector`` (focused, then set with a change event)."""
        self.eval(f"(function () {{ const e = document.querySelector({json.dumps(selector)}); e.focus();"
                  f" e.value = {json.dumps(value)}; e.dispatchEvent(new Event('change', {{bubbles: true}}));"
                  " return e.value; })()")

    def text(self, selector: str) -> str:
        """The visible text of ``selector``."""
        return str(self.eval(f"document.querySelector({json.dumps(selector)}).innerText"))

    def screenshot(self, png: Path, full: bool = True) -> Path:
        """A PNG of the page (the whole page if ``full``, else the viewport)."""
        params: dict[str, Any] = {"format": "png", "captureBeyondViewport": full}
        if full:
            size = self.eval("[document.documentElement.scrollWidth, document.documentElement.scrollHeight]")
            params["clip"] = {"x": 0, "y": 0, "width": size[0], "height": size[1], "scale": 1}
        png.parent.mkdir(parents=True, exist_ok=True)
        png.write_bytes(base64.b64decode(self.send("Page.captureScreenshot", params)["data"]))
        return png
