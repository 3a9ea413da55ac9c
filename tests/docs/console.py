"""The docs runner: every shell session quoted in the Markdown of README.md and docs/ is run and compared.

A *session block* is a fenced block in ```console, or any fenced block with a line that starts
with ``$ `` (the prompt). Its ``$`` lines are commands; the lines after a command, up to the next
command or comment, are what it prints (stdout and stderr, in the order a terminal shows them).
The conventions, also described in docs/design.md ("Docs that run"):

- ``...`` in a quoted output stands for any text (as doctest's ELLIPSIS), on a line or across
  lines; a hexadecimal digest shortened to its first digits and ``...`` (``30650dbc...``) stands
  for any digest (keys and heads are fresh in every run).
- ``/tmp`` in a block names the runner's temporary folder of the page, so documented paths such
  as ``/tmp/smoke-doc2`` work without touching the machine's /tmp; relative paths resolve there
  too, and ``docs/`` and ``tests/`` are the repository's.
- Progress bars (tqdm's lines, redrawn in place on a terminal) are left out of what a command
  printed; ``# text`` at the start of a block or after a blank line is a comment.
- A block whose commands print nothing in the quote is a list of commands: each ``parley`` command
  is parsed and its scenario or study is built with every ``--set`` (the checks ``parley`` makes
  before anything runs), and another command must name a file of the repository
  (``tests/...``, ``docs/...``) that exists; they are not run.
- An HTML comment on the line before the fence changes how a block is run:
  ``<!-- docs: not-run: REASON -->`` (listed and counted by the test), ``<!-- docs: slow -->``
  (runs only with ``-m reliability``) and ``<!-- docs: setup: NAME -->`` (a setup of
  :data:`SETUPS` runs before the block), separated by ``;``.

The blocks of one page run in order in one folder, so a page can run a scenario and then verify
its transcript. ``parley`` commands run in this process (``parley.scenarios.cli.main``), or in a
process of their own once a setup installed plug-ins; other commands run in ``bash`` with this
Python first on the PATH and this checkout first on the import path.
"""

from __future__ import annotations

import contextlib
import difflib
import io
import os
import re
import shlex
import subprocess
import sys
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
#: The pages the runner reads.
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
FENCE = re.compile(r"^```(\w*)\s*$")
DIRECTIVE = re.compile(r"^<!--\s*docs:\s*(.*?)\s*-->\s*$")
#: Shell syntax that sends a ``parley`` command to bash instead of running it in this process.
SHELL_SYNTAX = re.compile(r"[|&;<>`$(){}*]")
HEX_ELIDED = re.compile(r"[0-9a-f]{6,}\\\.\\\.\\\.")
ELLIPSIS = re.escape("...")
TMP = "/tmp/"
TMP_PATH = re.compile(r"(?<![\w./-])/tmp(?![\w.-])")
#: A progress bar's line (tqdm's format, ``study smoke:  42%|####  | 5/12 [...]``).
PROGRESS = re.compile(r"^[^|\n]*:\s+\d+%\|.*\|")


@dataclass
class Command:
    """One ``$`` command of a block and the output the page quotes for it."""

    text: str
    line: int
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    """A session block of a page: where it is, its commands, and its directives."""

    page: Path
    line: int
    lang: str
    commands: list[Command]
    not_run: str | None = None
    slow: bool = False
    setups: list[str] = field(default_factory=list)
    #: Line indices (0-based, into the page) of the block's body: first and one past the last.
    body: tuple[int, int] = (0, 0)

    @property
    def where(self) -> str:
        return f"{self.page.relative_to(REPO)}:{self.line}"

    @property
    def quotes_output(self) -> bool:
        return any(command.expected for command in self.commands)


def _directives(text: str, block: Block) -> None:
    if text.startswith("not-run:") and text.split(":", 1)[1].strip():  # the reason is the rest of the comment
        block.not_run = text.split(":", 1)[1].strip()
        return
    for part in (p.strip() for p in text.split(";")):
        if part == "slow":
            block.slow = True
        elif part.startswith("setup:"):
            block.setups.append(part.split(":", 1)[1].strip())
        else:
            raise ValueError(f"{block.where}: unknown docs directive {part!r} (not-run: REASON, slow, setup: NAME)")


def _complete(command: str) -> bool:
    """Whether a command typed over several lines is finished (a here-document or an open quote)."""
    heredoc = re.search(r"<<-?'?(\w+)'?", command)
    if heredoc:
        return command.rstrip().endswith("\n" + heredoc.group(1))
    try:
        shlex.split(command, comments=True)
    except ValueError:
        return False
    return True


def parse_commands(body: list[str], first_line: int) -> list[Command]:
    """The commands of a block body and the output quoted under each."""
    commands: list[Command] = []
    i = 0
    while i < len(body):
        line = body[i]
        comment = line.startswith("# ") and (i == 0 or not body[i - 1].strip())
        if line.startswith("$ "):
            text, start = line[2:], i
            while not _complete(text) and i + 1 < len(body):
                i += 1
                text += "\n" + body[i]
            commands.append(Command(text=text, line=first_line + start))
        elif comment:
            while i + 1 < len(body) and body[i + 1].startswith("# "):
                i += 1
        elif commands and not (not line.strip() and i + 1 < len(body) and body[i + 1].startswith("# ")):
            commands[-1].expected.append(line)
        i += 1
    for command in commands:
        while command.expected and not command.expected[-1].strip():
            command.expected.pop()
    return commands


def parse_page(page: Path) -> list[Block]:
    """Every session block of ``page``."""
    lines = page.read_text(encoding="utf-8").splitlines()
    blocks: list[Block] = []
    i = 0
    while i < len(lines):
        opened = FENCE.match(lines[i])
        if not opened:
            i += 1
            continue
        start = i
        i += 1
        while i < len(lines) and lines[i].rstrip() != "```":
            i += 1
        body = lines[start + 1:i]
        lang = opened.group(1)
        if lang == "console" or any(line.startswith("$ ") for line in body):
            block = Block(page=page, line=start + 1, lang=lang, commands=parse_commands(body, start + 2),
                          body=(start + 1, i))
            directive = DIRECTIVE.match(lines[start - 1]) if start else None
            if directive:
                _directives(directive.group(1), block)
            blocks.append(block)
        i += 1
    return blocks


def all_blocks() -> list[Block]:
    return [block for page in PAGES for block in parse_page(page)]


def pattern(expected: str) -> re.Pattern[str]:
    """The regular expression a quoted output stands for (``...`` and shortened digests)."""
    text = re.escape(expected)
    text = HEX_ELIDED.sub("[0-9a-f]+", text)
    return re.compile(text.replace(ELLIPSIS, ".*?"), re.S)


def normalise(text: str) -> str:
    """Trailing spaces and blank lines dropped, and progress-bar lines (redrawn in place on a terminal) left out."""
    lines = [line.rstrip() for line in text.rstrip().splitlines() if not PROGRESS.match(line)]
    while lines and not lines[0]:
        lines.pop(0)
    return "\n".join(lines)


def matches(expected: list[str], actual: str) -> bool:
    return pattern(normalise("\n".join(expected))).fullmatch(normalise(actual)) is not None


def refreshed(expected: list[str], actual: str) -> list[str]:
    """The quote rewritten from ``actual``, keeping the quoted lines (placeholders included) that still match.

    Lines are aligned with difflib; a line that is only ``...`` (lines left out) is kept where
    the real output has lines in its place.
    """
    if matches(expected, actual):
        return expected
    real = normalise(actual).splitlines()
    own = [pattern(line.rstrip()) for line in expected]
    key_expected = list(range(len(expected)))
    key_real = [next((j for j, p in enumerate(own) if expected[j].strip() != "..." and p.fullmatch(line)), -1 - i)
                for i, line in enumerate(real)]
    out: list[str] = []
    for tag, i1, i2, j1, j2 in difflib.SequenceMatcher(None, key_expected, key_real, autojunk=False).get_opcodes():
        if tag == "equal" or (tag == "replace" and all(line.strip() == "..." for line in expected[i1:i2])):
            out += expected[i1:i2]
        else:
            out += real[j1:j2]
    return out


@dataclass
class Session:
    """The folder a page's blocks run in, and the exit status of the last command (for ``echo $?``)."""

    folder: Path
    status: int = 0
    #: Folders of installed plug-in packages a setup added: parley then runs in a process of its own that sees them.
    sites: list[Path] = field(default_factory=list)

    def local(self, text: str) -> str:
        """The command with ``/tmp`` (alone or as a path's start) turned into the page's folder."""
        return TMP_PATH.sub(str(self.folder).replace("\\", "\\\\"), text)

    def public(self, text: str) -> str:
        return text.replace(str(self.folder), "/tmp")


def environment(sites: list[Path] | None = None) -> dict[str, str]:
    """What a command sees: this checkout (after ``sites``) on the import path, this Python first on the PATH."""
    path = os.pathsep.join([*map(str, sites or []), str(REPO)])
    return {**os.environ, "PYTHONPATH": path, "COLUMNS": "80",
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ.get('PATH', '')}"}


def run_parley(argv: list[str]) -> tuple[int, str]:
    """``parley ARGV`` in this process: its exit status and what it printed (stdout and stderr interleaved)."""
    from parley.scenarios.cli import main

    buffer = io.StringIO()
    old = {key: os.environ.get(key) for key in ("COLUMNS", "PYTHONPATH")}
    os.environ.update(COLUMNS="80", PYTHONPATH=str(REPO))  # argparse wraps help to COLUMNS; Ray workers import
    try:
        with contextlib.redirect_stdout(buffer), contextlib.redirect_stderr(buffer):
            try:
                status = main(argv)
            except SystemExit as exc:  # argparse: --help, a usage error
                status = exc.code if isinstance(exc.code, int) else 1
    finally:
        for key, value in old.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
    return status, buffer.getvalue()


def _in_process(text: str) -> list[str] | None:
    """The argv of a plain ``parley`` command, or None when it needs a shell."""
    words = shlex.split(text, comments=True)
    if words and words[0] == "parley" and not SHELL_SYNTAX.search(_unquoted(text).split("#", 1)[0]):
        return words[1:]
    return None


def _unquoted(text: str) -> str:
    """``text`` with its quoted parts removed (shell syntax inside quotes is data)."""
    return re.sub(r"'[^']*'|\"[^\"]*\"", "", text)


def run_command(session: Session, command: Command) -> str:
    """Run one command in the session's folder; what it printed, in the page's terms."""
    text = session.local(command.text)
    argv = _in_process(text)
    if argv is not None and not session.sites:
        here = Path.cwd()
        os.chdir(session.folder)
        try:
            session.status, out = run_parley(argv)
        finally:
            os.chdir(here)
    else:
        done = subprocess.run(["bash", "-c", f"(exit {session.status}); {text}"], cwd=session.folder,
                              env=environment(session.sites), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              text=True, timeout=1800)
        session.status, out = done.returncode, done.stdout
    return session.public(out)


def dry_check(text: str) -> str | None:
    """Check a ``parley`` command the page lists without output: None if valid, else what is wrong."""
    from parley.protocols.errors import ParleyError
    from parley.scenarios.catalog import DEFAULT_SCENARIO, resolve_scenario
    from parley.scenarios.cli import _parser
    from parley.scenarios.spec import Scenario
    from parley.scenarios.study import Study

    argv = _in_process(text)
    if argv is None:
        named = [word for word in re.split(r"[\s=:]+", text) if word.startswith(("tests/", "docs/"))]
        if not named:
            return f"`{text}` is not a plain parley command and names no file: give it its output or a not-run reason"
        missing = [word for word in named if not (REPO / word.split("::")[0]).exists()]
        return f"`{text}` names files that do not exist: {missing}" if missing else None
    err = io.StringIO()
    try:
        with contextlib.redirect_stderr(err):
            args = _parser().parse_args(argv)
        if args.command == "run":
            scenario = Scenario.from_toml(resolve_scenario(args.scenario or DEFAULT_SCENARIO))
            overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])
            if overrides:
                scenario.with_overrides(overrides)
        elif args.command == "study":
            study = Study.load(args.study)
            if args.overrides:
                study.with_overrides(args.overrides)
    except SystemExit:
        return f"`{text}`: {err.getvalue().strip()}"
    except ParleyError as exc:
        return f"`{text}`: parley: error: {exc}"
    return None


#: Setups a block can ask for (``<!-- docs: setup: NAME -->``), each run in the page's folder.
SETUPS: dict[str, Callable[[Session], None]] = {}


def setup(name: str) -> Callable[[Callable[[Session], None]], Callable[[Session], None]]:
    def register(function: Callable[[Session], None]) -> Callable[[Session], None]:
        SETUPS[name] = function
        return function
    return register


@setup("tampered-transcripts")
def _tampered(session: Session) -> None:
    """docs/cli.md's edited copies of the default run's transcript, made with tests/reliability/tamper.py."""
    folder = session.folder
    import copy
    import json

    from tests.reliability import tamper

    lines = tamper.load(folder / "runs/adult-raw-double-query/latest/transcript.jsonl")
    env = tamper.envelopes(lines)
    second_query = [i for i in env if lines[i]["record"]["kind"] == "metric-query"][1]
    i = env[1]  # the second line
    swapped = list(lines)
    swapped[env[0]], swapped[env[1]] = swapped[env[1]], swapped[env[0]]
    fake = copy.deepcopy(lines[i]["record"])
    fake["kind"] = "attribute-release"
    text = [json.dumps(line, sort_keys=True, separators=(",", ":")) for line in lines]
    text[i] = text[i].replace('"record":', '"record":' + json.dumps(fake, sort_keys=True, separators=(",", ":"))
                              + ',"record":', 1)
    files = {
        "deleted.jsonl": tamper.render(tamper.rechain(tamper._without(lines, {second_query}))),
        "answer-first.jsonl": tamper.render(tamper.rechain(swapped)),
        "cut-10.jsonl": tamper.render(tamper.rechain([lines[0], *[lines[j] for j in env[:10]], lines[-1]])),
        "interrupted.jsonl": tamper.render(lines[:-1]),
        "duplicate-record.jsonl": "\n".join(text) + "\n",
        "forged/transcript.jsonl": tamper.render(tamper.rekeyed(lines)),
    }
    for name, content in files.items():
        (folder / name).parent.mkdir(parents=True, exist_ok=True)
        (folder / name).write_text(content, encoding="ascii")


@setup("my-scenario")
def _my_scenario(session: Session) -> None:
    """``my-scenario.toml``: a copy of the default catalog scenario, as a user starts one."""
    folder = session.folder
    from parley.scenarios.catalog import DEFAULT_SCENARIO, scenario_path

    (folder / "my-scenario.toml").write_text(scenario_path(DEFAULT_SCENARIO).read_text(encoding="utf-8"))


@setup("studydemo")
def _studydemo(session: Session) -> None:
    """docs/studies.md's ``studydemo/``: the study ``train-rows.toml`` it quotes and the ``base.toml`` it describes."""
    folder = session.folder
    page = (REPO / "docs" / "studies.md").read_text(encoding="utf-8")
    study = re.search(r"```toml\n(name = \"train-rows\".*?)```", page, re.S)
    assert study, "docs/studies.md no longer quotes studydemo/train-rows.toml"
    (folder / "studydemo").mkdir(exist_ok=True)
    (folder / "studydemo" / "train-rows.toml").write_text(study.group(1), encoding="utf-8")
    (folder / "studydemo" / "base.toml").write_text(STUDYDEMO_BASE, encoding="utf-8")


@setup("toy-plugins")
def _toy_plugins(session: Session) -> None:
    """docs/plugins.md's example package installed with pip into the page's folder, and its ``toy-round-flip.toml``."""
    from tests.plugins.test_plugins import FIXTURE, _pip_install

    site = session.folder / "toy-site"
    if not site.exists():
        proc = _pip_install(FIXTURE, site)
        output, _ = proc.communicate(timeout=600)
        assert proc.returncode == 0, f"pip install of {FIXTURE} failed:\n{output}"
    page = (REPO / "docs" / "plugins.md").read_text(encoding="utf-8")
    scenario = re.search(r"```toml\n(name = \"toy-round-flip\".*?)```", page, re.S)
    assert scenario, "docs/plugins.md no longer quotes toy-round-flip.toml"
    (session.folder / "toy-round-flip.toml").write_text(scenario.group(1), encoding="utf-8")
    session.sites = [site]


#: "a synthetic double-query scenario with an audit set of 200" (docs/studies.md).
STUDYDEMO_BASE = """name = "base"
description = "A curious data center runs double queries on a synthetic audit set of 200."
threat_model = "curious-data-center"
backend = "local"

[dataset]
name = "synthetic"
audit_size = 200

[protocol]
name = "raw"

[attack]
name = "double-query"
"""


@dataclass
class Outcome:
    """What running a page's blocks found: mismatches (where, what) and the blocks run, checked, not run."""

    failures: list[str] = field(default_factory=list)
    ran: list[Block] = field(default_factory=list)
    checked: list[Block] = field(default_factory=list)
    not_run: list[Block] = field(default_factory=list)
    refreshed: dict[int, list[str]] = field(default_factory=dict)


def run_page(page: Path, folder: Path, *, slow: bool, refresh: bool = False) -> Outcome:
    """Run (or check) every block of ``page`` in ``folder``; with ``slow`` the slow blocks too."""
    outcome = Outcome()
    session = Session(folder)
    for name in ("docs", "tests"):
        if not (folder / name).exists():
            (folder / name).symlink_to(REPO / name)
    for block in parse_page(page):
        if block.not_run is not None:
            outcome.not_run.append(block)
            continue
        if block.slow and not slow:
            continue
        for name in block.setups:
            SETUPS[name](session)
        if not block.quotes_output:
            here = Path.cwd()
            os.chdir(folder)
            try:
                problems = [dry_check(session.local(command.text)) for command in block.commands] or [
                    f"{block.where}: a console block without a `$ ` command: mark it not-run with a reason"]
            finally:
                os.chdir(here)
            outcome.failures += [f"{block.where}: {problem}" for problem in problems if problem]
            outcome.checked.append(block)
            continue
        outcome.ran.append(block)
        for command in block.commands:
            actual = run_command(session, command)
            if not matches(command.expected, actual):
                diff = "\n".join(difflib.unified_diff(command.expected, normalise(actual).splitlines(),
                                                      "quoted", "printed", lineterm=""))
                outcome.failures.append(f"{page.relative_to(REPO)}:{command.line}: `{command.text}` prints "
                                        f"something else:\n{diff}")
                if refresh:
                    outcome.refreshed[command.line] = refreshed(command.expected, actual)
    return outcome


def rewrite(page: Path, replacements: dict[int, list[str]]) -> None:
    """Replace the quoted output of the commands at the given page lines (1-based) with new lines."""
    lines = page.read_text(encoding="utf-8").splitlines()
    commands = {c.line: c for block in parse_page(page) for c in block.commands}
    for line in sorted(replacements, reverse=True):
        command = commands[line]
        start = line - 1 + command.text.count("\n") + 1
        lines[start:start + len(command.expected)] = replacements[line]
    page.write_text("\n".join(lines) + "\n", encoding="utf-8")
