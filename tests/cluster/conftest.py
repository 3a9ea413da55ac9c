"""A real two-node Ray cluster on this machine whose nodes' Python has no parley.

The nodes are started the way an operator starts them (``ray start --head``, ``ray start
--address``), each with its own ``--temp-dir`` and ports, from a virtual environment that
holds every package of the test's environment except parley. Token authentication is on, as
it is by default once ``~/.ray/auth_token`` exists: the nodes and the ``parley`` commands get a
home folder of their own with a fresh token. The second node runs in a mount namespace of
its own, where a private tmpfs hides the driver's folder: whatever it wrote at the driver's
paths would be invisible to the driver, as on another machine. Both nodes are always stopped,
by process id, even when a test fails.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import uuid
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

#: Generous bounds for a loaded 2-core machine: a node start, a `parley` command.
START_TIMEOUT_S = 180
COMMAND_TIMEOUT_S = 240

PARLEY = str(Path(sys.executable).with_name("parley"))


@dataclass
class TwoNodeCluster:
    """What the tests need: the head's address, the nodes' Python and the environment to run parley in."""

    address: str
    python: Path
    env: dict[str, str]
    driver_dir: Path
    temp_dirs: list[Path]
    private_mount: bool
    nodes: int = 0
    notes: list[str] = field(default_factory=list)

    def parley(self, *args: str, env: dict[str, str] | None = None,
               timeout: float = COMMAND_TIMEOUT_S) -> subprocess.CompletedProcess:
        """Run the ``parley`` command as a user on the head's machine would (cwd: the driver's folder)."""
        return subprocess.run([PARLEY, *args], cwd=self.driver_dir, env=env or self.env, capture_output=True,
                              text=True, timeout=timeout)

    def gcs(self, code: str) -> str:
        """Run ``code`` in the nodes' Python with a GCS client ``gcs`` bound to the head; its stdout."""
        script = ("import os\nos.environ['RAY_AUTH_MODE'] = 'token'\nfrom ray._raylet import GcsClient\n"
                  f"gcs = GcsClient(address={self.address!r})\n{code}\n")
        proc = subprocess.run([str(self.python), "-c", script], env=self.env, capture_output=True, text=True,
                              timeout=COMMAND_TIMEOUT_S, cwd=self.driver_dir)
        assert proc.returncode == 0, proc.stderr[-2000:]
        return proc.stdout


def _venv_without_parley(dest: Path) -> Path:
    """A venv whose site-packages links every entry of ours except parley (package, metadata, editable hooks)."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", "--clear", str(dest)], check=True,
                   env={k: v for k, v in os.environ.items() if k != "PYTHONPATH"})
    target = dest / "lib" / f"python{sys.version_info.major}.{sys.version_info.minor}" / "site-packages"
    for folder in [Path(p) for p in sys.path if p.endswith("site-packages") and Path(p).is_dir()]:
        for entry in folder.iterdir():
            if "parley" in entry.name.lower() or entry.name == "__pycache__":
                continue
            link = target / entry.name
            if not link.exists() and not link.is_symlink():
                link.symlink_to(entry)
    return dest / "bin" / "python"


def _free_ports(count: int) -> list[int]:
    sockets = []
    try:
        for _ in range(count):
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            sockets.append(s)
        return [s.getsockname()[1] for s in sockets]
    finally:
        for s in sockets:
            s.close()


def _node_ports() -> list[str]:
    names = ["--node-manager-port", "--object-manager-port", "--runtime-env-agent-port", "--dashboard-agent-grpc-port",
             "--dashboard-agent-listen-port", "--metrics-export-port"]
    return [arg for name, port in zip(names, _free_ports(len(names)), strict=True) for arg in (name, str(port))]


def _can_unshare() -> list[str] | None:
    """The unshare prefix that gives a process a mount namespace of its own here, if any."""
    if shutil.which("unshare") is None:
        return None
    for prefix in (["unshare", "--mount"], ["unshare", "--map-root-user", "--mount"]):
        probe = subprocess.run([*prefix, "sh", "-c", "mount -t tmpfs none /mnt 2>/dev/null || exit 1"],
                               capture_output=True)
        if probe.returncode == 0:
            return prefix
    return None


def _our_pids(marks: list[str]) -> list[int]:
    """Processes whose command line names one of our nodes' temp folders (our nodes' processes only)."""
    pids = []
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit() or int(entry.name) == os.getpid():
            continue
        try:
            cmdline = (entry / "cmdline").read_bytes().decode(errors="replace")
        except OSError:
            continue
        if any(mark in cmdline for mark in marks):
            pids.append(int(entry.name))
    return pids


def _stop(marks: list[str]) -> None:
    """Terminate our nodes' processes by id, then kill what is left (never another helper's Ray).

    Ray's daemons (the GCS server, both raylets, the autoscaler's monitor) outlived a SIGTERM by more
    than 8 s here, so a longer grace only delays the kill: the nodes are thrown away with their folder.
    """
    for sig, wait in ((signal.SIGTERM, 2.0), (signal.SIGKILL, 10.0)):
        pids = _our_pids(marks)
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + wait
        while _our_pids(marks) and time.monotonic() < deadline:
            time.sleep(0.2)


@pytest.fixture(scope="session")
def two_node_cluster() -> Iterator[TwoNodeCluster]:
    root = Path(tempfile.mkdtemp(prefix="plc-", dir="/tmp"))  # short: Ray's socket paths must stay < 108 chars
    marks = [str(root / "ray-head"), str(root / "ray-node")]
    try:
        python = _venv_without_parley(root / "venv")
        home = root / "home"
        (home / ".ray").mkdir(parents=True)
        (home / ".ray" / "auth_token").write_text(uuid.uuid4().hex + uuid.uuid4().hex)
        env = {k: v for k, v in os.environ.items() if not k.startswith("RAY_") and k != "PYTHONPATH"}
        env.update(HOME=str(home), PYTHONUNBUFFERED="1")
        driver_dir = root / "driver"
        driver_dir.mkdir()
        port = _free_ports(1)[0]
        address = f"127.0.0.1:{port}"
        ray_cli = [str(python), "-m", "ray.scripts.scripts", "start", "--node-ip-address", "127.0.0.1",
                   "--num-cpus", "1", "--disable-usage-stats", "--object-store-memory", str(80 * 1024 ** 2)]
        # The head: RAY_AUTH_MODE unset and a token in ~/.ray, so Ray turns token authentication on.
        head = subprocess.run([*ray_cli, "--head", "--port", str(port), "--temp-dir", marks[0],
                               "--include-dashboard", "false", *_node_ports()],
                              env=env, capture_output=True, text=True, timeout=START_TIMEOUT_S, cwd=root)
        assert head.returncode == 0, head.stderr[-3000:]
        assert "Token authentication is enabled" in head.stderr, "the head did not turn token authentication on"
        unshare = _can_unshare()
        worker_cmd = [*ray_cli, "--address", address, "--temp-dir", marks[1], *_node_ports()]
        if unshare is not None:  # the second node sees its own empty tmpfs where the driver's folder is
            script = f'mount -t tmpfs parley-private "{driver_dir}" && exec "$@"'
            worker_cmd = [*unshare, "sh", "-c", script, "sh", *worker_cmd]
        worker = subprocess.run(worker_cmd, env={**env, "RAY_AUTH_MODE": "token"}, capture_output=True, text=True,
                                timeout=START_TIMEOUT_S, cwd=root)
        assert worker.returncode == 0, worker.stderr[-3000:]
        cluster = TwoNodeCluster(address=address, python=python, env=env, driver_dir=driver_dir,
                                 temp_dirs=[Path(m) for m in marks], private_mount=unshare is not None)
        # Wait (polling the GCS, bounded) until both nodes are registered and alive.
        deadline = time.monotonic() + START_TIMEOUT_S
        while cluster.nodes < 2 and time.monotonic() < deadline:
            out = cluster.gcs("print(sum(v.state == 0 for v in gcs.get_all_node_info(timeout=30).values()))")
            cluster.nodes = int(out.strip().splitlines()[-1])
        assert cluster.nodes == 2, f"the cluster at {address} has {cluster.nodes} alive nodes, not 2"
        yield cluster
    finally:
        _stop(marks)
        shutil.rmtree(root, ignore_errors=True)
