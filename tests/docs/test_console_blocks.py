"""Docs that cannot go stale: every shell session quoted in README.md and docs/ runs, and prints what it quotes.

The conventions (placeholders, comments, directives) are in tests/docs/console.py and
docs/design.md ("Docs that run"). Refresh the quotes from real output with
``python tests/docs/test_console_blocks.py --refresh [--slow] [PAGE ...]``, then read the diff.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path

import pytest

if __name__ == "__main__":  # run as a script from the repository root
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from tests.docs.console import PAGES, REPO, SETUPS, Outcome, all_blocks, parse_page, rewrite, run_page

PAGES_WITH_BLOCKS = [page for page in PAGES if parse_page(page)]
PAGES_WITH_SLOW = [page for page in PAGES if any(b.slow and b.not_run is None for b in parse_page(page))]
#: A quoted ``parley run``, ``study`` or ``compare`` that runs as parley does by default, over Ray (not a refusal
#: quoted as ``parley: error: ...``): its page's sessions are slow docs sessions of the system tier (docs/design.md,
#: "Test tiers").
OVER_RAY = re.compile(r"^parley (?:run|study|compare)\b(?!.*(?:backend=local|--help))")


def _over_ray(page: Path) -> bool:
    return any(OVER_RAY.match(command.text) and not "".join(command.expected[:1]).startswith("parley: error:")
               for block in parse_page(page) if block.quotes_output and not block.not_run and not block.slow
               for command in block.commands)


def _tiered(page: Path):
    return pytest.param(page, marks=[pytest.mark.ray, pytest.mark.system]) if _over_ray(page) else page


def _id(page: Path) -> str:
    return str(page.relative_to(REPO))


def test_every_block_is_run_checked_or_marked_with_a_reason() -> None:
    blocks = all_blocks()
    assert blocks
    for block in blocks:
        assert block.commands or block.not_run, f"{block.where}: no `$ ` command and no not-run reason"
        assert all(name in SETUPS for name in block.setups), f"{block.where}: unknown setup {block.setups}"
        assert not (block.not_run and (block.slow or block.setups)), f"{block.where}: not-run takes no other directive"
    not_run = [b for b in blocks if b.not_run]
    slow = [b for b in blocks if b.slow and not b.not_run]
    print(f"\n{len(blocks)} session blocks: {len(blocks) - len(not_run)} run or checked "
          f"({len(slow)} of them only with -m reliability), {len(not_run)} not run:")
    for block in not_run:
        print(f"  {block.where}: {block.not_run}")


def _report(outcome: Outcome) -> str:
    refresh = "`python tests/docs/test_console_blocks.py --refresh`"
    return f"{len(outcome.failures)} quote(s) out of date; refresh with {refresh} and read the diff:\n\n" \
        + "\n\n".join(outcome.failures)


@pytest.mark.parametrize("page", [_tiered(page) for page in PAGES_WITH_BLOCKS], ids=_id)
def test_quoted_sessions_print_what_they_quote(page: Path, tmp_path: Path) -> None:
    outcome = run_page(page, tmp_path, slow=False)
    assert not outcome.failures, _report(outcome)


@pytest.mark.reliability
@pytest.mark.slow
@pytest.mark.ray  # the slow sessions run studies and catalog scenarios over Ray
@pytest.mark.parametrize("page", PAGES_WITH_SLOW, ids=_id)
def test_slow_quoted_sessions_print_what_they_quote(page: Path, tmp_path: Path) -> None:
    outcome = run_page(page, tmp_path, slow=True)
    assert not outcome.failures, _report(outcome)


def main(argv: list[str]) -> int:
    """Run the pages named (default: all); with --refresh rewrite every quote that differs from the real output."""
    import tempfile

    refresh, slow = "--refresh" in argv, "--slow" in argv
    names = [arg for arg in argv if not arg.startswith("--")]
    pages = [REPO / name for name in names] if names else PAGES_WITH_BLOCKS
    failed = 0
    for page in pages:
        with tempfile.TemporaryDirectory(prefix="parley-docs-") as folder:
            outcome = run_page(page, Path(folder), slow=slow, refresh=refresh)
        print(f"{_id(page)}: {len(outcome.ran)} run, {len(outcome.checked)} checked, {len(outcome.not_run)} not run, "
              f"{len(outcome.failures)} out of date")
        for failure in outcome.failures:
            print(failure, "\n")
        if refresh and outcome.refreshed:
            rewrite(page, outcome.refreshed)
        failed += len(outcome.failures)
    return 1 if failed and not refresh else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
