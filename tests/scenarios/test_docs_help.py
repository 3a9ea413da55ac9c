"""The help texts docs/cli.md quotes are the ones the command prints (docs that cannot go stale)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.docs.console import run_parley

CLI_DOC = Path(__file__).resolve().parents[2] / "docs" / "cli.md"
#: A fenced block that starts with a `$ parley ... --help` line, and what follows up to the fence.
HELP_BLOCK = re.compile(r"```text\n\$ (parley(?: [a-z]+)? --help)\n(.*?)```", re.S)


def _help(command: str) -> str:
    """What ``command`` prints, run as the docs runner runs every quoted command (tests/docs/console.py)."""
    status, out = run_parley(command.split()[1:])  # COLUMNS=80: argparse wraps to the terminal width
    assert status in (0, 2), out
    return out


def _blocks() -> list[tuple[str, str]]:
    return HELP_BLOCK.findall(CLI_DOC.read_text(encoding="utf-8"))


def test_cli_doc_quotes_every_help_text():
    assert sorted(command for command, _ in _blocks()) == sorted(
        ["parley --help", "parley run --help", "parley study --help", "parley compare --help",
         "parley verify --help"])


@pytest.mark.parametrize("command, quoted", _blocks(), ids=[command for command, _ in _blocks()])
def test_quoted_help_is_what_the_command_prints(command, quoted):
    refresh = "python tests/scenarios/test_docs_help.py refreshes it"
    assert quoted == _help(command), f"docs/cli.md quotes an old `{command}`: {refresh}"


if __name__ == "__main__":  # rewrite every quoted help text from the command itself
    text = CLI_DOC.read_text(encoding="utf-8")
    CLI_DOC.write_text(HELP_BLOCK.sub(lambda m: f"```text\n$ {m.group(1)}\n{_help(m.group(1))}```", text),
                       encoding="utf-8")
