"""Headless Chromium for the tests that look at parley's HTML pages as a person would."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
#: Why a browser test skips on a machine without Chromium (.ci/run installs it).
NO_CHROMIUM = "/usr/bin/chromium is absent (apt-get install chromium)"
#: The flags this machine's closed network needs (no background connections, no sandbox as root).
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync", "--hide-scrollbars"]
#: Put first in <head>: records every script error of the page.
ERROR_PROBE = """<script>window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push(String(e.message)); });</script>"""
#: Put last in <body>: after load, writes each image's alt and natural width, and the script errors, into the DOM.
LOAD_PROBE = """<script>window.addEventListener('load', function () {
  var out = document.createElement('pre'); out.id = 'img-check';
  out.textContent = Array.prototype.map.call(document.images, function (img) {
    return img.alt + '=' + (img.complete ? img.naturalWidth : -1); }).join(';');
  document.body.appendChild(out);
  var errors = document.createElement('pre'); errors.id = 'script-errors';
  errors.textContent = (window.__errors || []).join('\\n'); document.body.appendChild(errors); });</script>"""


def _run(args: list[str], profile: Path) -> str:
    command = [str(CHROMIUM), *FLAGS, f"--user-data-dir={profile}", *args]
    return subprocess.run(command, capture_output=True, text=True, timeout=120, check=True).stdout


def probe_page(html_path: Path, profile: Path) -> tuple[dict[str, int], list[str], str]:
    """Load a copy of the page with the probes: (image widths by alt text, script errors, the DOM after load)."""
    text = html_path.read_text(encoding="utf-8")
    probed = html_path.with_name(html_path.stem + "-probed.html")
    probed.write_text(text.replace("<head>", "<head>" + ERROR_PROBE, 1).replace("</body>", LOAD_PROBE + "</body>"),
                      encoding="utf-8")
    dom = _run(["--virtual-time-budget=5000", "--dump-dom", probed.as_uri()], profile)
    probed.unlink()
    found = re.search(r'<pre id="img-check">([^<]*)</pre>', dom)
    assert found, "the probe script did not run: " + dom[:300]
    widths = {alt: int(width) for alt, width in (item.rsplit("=", 1) for item in found.group(1).split(";") if item)}
    errors = re.search(r'<pre id="script-errors">([^<]*)</pre>', dom)
    return widths, [e for e in (errors.group(1).split("\n") if errors else []) if e], dom


def screenshot(html_path: Path, png: Path, profile: Path, size: str = "1100,1500") -> Path:
    """A PNG of the page as a browser window of ``size`` shows it."""
    png.parent.mkdir(parents=True, exist_ok=True)
    _run([f"--window-size={size}", f"--screenshot={png}", html_path.as_uri()], profile)
    return png
