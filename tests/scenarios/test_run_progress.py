"""`parley run`'s status line: on a terminal it shows what the run has done; elsewhere nothing is added to stderr."""

from __future__ import annotations

import fcntl
import io
import json
import os
import struct
import subprocess
import sys
import termios
from pathlib import Path

import pytest

from parley.scenarios.progress import ERASE, RunProgress, Status, StatusLine, describe

ROOT = Path(__file__).resolve().parents[2]
#: From the worktree: the `parley` console script may import another installed copy of parley.
PARLEY = [sys.executable, "-m", "parley.scenarios.cli"]
#: The start line; {variant} names the --set overrides (" with backend=local, attack.targets=6").
RUNNING = "parley: running {name}{variant} ({protocol} protocol, {attack} attack) ...\n"
VARIANT = " with backend=local, attack.targets=6"


class Clock:
    """A clock the test moves by hand (no test here depends on how fast the machine is)."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_the_line_is_drawn_at_most_once_per_interval_and_erased_at_the_end():
    clock, stream = Clock(), io.StringIO()
    line = StatusLine(stream, interval=0.25, clock=clock)
    progress = RunProgress(line, clock=clock)
    for _ in range(10):  # ten envelopes at the same instant: one drawing
        progress(object())
    assert stream.getvalue() == "\rparley: 1 message" + ERASE
    clock.now += 0.25
    progress(object())
    assert stream.getvalue().endswith("\rparley: 11 messages" + ERASE)
    line.clear()
    assert stream.getvalue().endswith("\r" + ERASE)
    assert "\n" not in stream.getvalue()  # it rewrites one line, never scrolls


def test_nothing_is_erased_that_was_never_drawn():
    stream = io.StringIO()
    StatusLine(stream).clear()
    assert stream.getvalue() == ""


def test_time_left_comes_from_the_attacks_plan_and_is_left_out_without_one():
    clock, stream = Clock(), io.StringIO()
    counts = {"answered": 5, "planned": 20, "pinned": 4}
    progress = RunProgress(StatusLine(stream, clock=clock), spent=lambda: 0.5, limit=2.0, clock=clock)
    progress.watch(lambda: counts)
    clock.now += 10.0  # 5 models in 10 s: 15 more take about 30 s
    assert progress.status() == Status(messages=0, answered=5, planned=20, pinned=4, epsilon_spent=0.5,
                                       epsilon_limit=2.0, eta_s=30.0)
    assert describe(progress.status()) == ("parley: 0 messages, 5 of 20 queries answered, 4 people pinned down, "
                                           "epsilon 0.5 of 2 spent, about 30 s left")
    counts.update(planned=None, pinned=None)  # an attack without a plan, deciding only at its end
    assert describe(progress.status()) == "parley: 0 messages, 5 queries answered, epsilon 0.5 of 2 spent"
    counts.update(answered=0, planned=20)  # no answer yet: no pace to extrapolate
    assert progress.status().eta_s is None


def test_a_line_wider_than_the_terminal_is_clipped_so_it_never_wraps():
    stream = io.StringIO()  # no terminal size: 80 columns
    StatusLine(stream).show("x" * 200)
    assert stream.getvalue() == "\r" + "x" * 79 + ERASE


def _run_on_a_terminal(args: list[str], columns: int = 250) -> tuple[int, bytes, str]:
    """Run parley with stderr on a pseudo-terminal; (exit status, what the terminal got, stdout)."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 50, columns, 0, 0))
    proc = subprocess.Popen([*PARLEY, *args], cwd=ROOT, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                            stderr=slave)
    os.close(slave)
    chunks = []
    while True:  # read as it comes, until the child closes the terminal (EIO on Linux)
        try:
            data = os.read(master, 65536)
        except OSError:
            break
        if not data:
            break
        chunks.append(data)
    os.close(master)
    out = proc.stdout.read().decode()
    proc.stdout.close()
    return proc.wait(timeout=600), b"".join(chunks), out


def _statuses(terminal: bytes) -> list[str]:
    """Every drawing of the status line, in order."""
    text = terminal.decode()
    return [part.removesuffix(ERASE) for part in text.split("\r") if part.startswith("parley: ") and
            part.endswith(ERASE)]


def test_on_a_terminal_the_line_counts_queries_and_people_pinned_down(tmp_path):
    out = tmp_path / "run"
    code, terminal, stdout = _run_on_a_terminal(["run", "adult-raw-single-query", "--set", "backend=local",
                                                 "--set", "attack.targets=6", "--out", str(out)])
    assert code == 0, terminal
    record = json.loads((out / "result.json").read_text())
    metrics = record["metrics"]
    statuses = _statuses(terminal)
    assert statuses, terminal
    # The last drawing holds the final counts: what result.json reports, the knowledge series' last step.
    assert statuses[-1] == describe(Status(messages=metrics["messages"], answered=metrics["queries"], planned=6,
                                           pinned=record["knowledge"][-1][1]))
    assert metrics["queries"] == 6 and record["knowledge"][-1][1] == metrics["correct"] == 6
    text = terminal.decode()
    assert text.startswith(RUNNING.format(name="adult-raw-single-query", variant=VARIANT, protocol="raw",
                                         attack="single-query")
                           .replace("\n", "\r\n"))  # the terminal turns \n into \r\n
    assert text.endswith("\r" + ERASE)  # erased at the end: the terminal is left as it was
    assert "\n" not in text.split("\r\n", 1)[1]  # one line rewritten in place, no scrolling
    assert "leakage" in stdout and "\r" not in stdout  # stdout (a pipe here) gets no status


@pytest.mark.system  # a parley process of its own on a terminal: the default tier keeps the queries one
def test_on_a_terminal_the_line_shows_the_budget_spent_against_the_budget(tmp_path):
    out = tmp_path / "run"
    code, terminal, _ = _run_on_a_terminal(["run", "adult-conceal", "--set", "backend=local",
                                            "--set", "budget.epsilon=100", "--out", str(out)])
    assert code == 0, terminal
    metrics = json.loads((out / "result.json").read_text())["metrics"]
    last = _statuses(terminal)[-1]
    assert f"{metrics['queries']} queries answered" in last
    assert f"epsilon {metrics['epsilon_spent']:.4g} of 100 spent" in last
    assert "left" not in last  # compressed sensing keeps no query plan: no time left is made up


@pytest.mark.system  # a parley process of its own: the default tier keeps the terminal one and the line's unit tests
def test_with_stderr_piped_nothing_is_added(tmp_path):
    done = subprocess.run([*PARLEY, "run", "adult-raw-single-query", "--set", "backend=local",
                           "--set", "attack.targets=6", "--out", str(tmp_path / "run")],
                          cwd=ROOT, capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert done.stderr == RUNNING.format(name="adult-raw-single-query", variant=VARIANT, protocol="raw",
                                         attack="single-query")
