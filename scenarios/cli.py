"""The ``parley`` command: list, show, run, study, compare and verify.

User mistakes (a bad key, an unknown scenario, a missing file, an output folder that
cannot be one) print one line, ``parley: error: ...``, and exit 2; a transcript that
fails verification exits 1 naming the bad line, one without the parties' end record (an
interrupted run) exits 3; Ctrl-C prints one line and exits 130 (a run or study started
again resumes). A bug prints one line saying so and where its traceback was written, and
exits 70.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from parley.protocols.registry import Registry

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE, EXIT_INCOMPLETE = 0, 1, 2, 3
#: 128 + SIGINT, as a shell reports a command stopped by Ctrl-C.
EXIT_INTERRUPTED = 130
#: sysexits' EX_SOFTWARE: an internal error (a bug in parley).
EXIT_BUG = 70
#: 128 + SIGPIPE, as a shell reports a command whose reader went away.
EXIT_BROKEN_PIPE = 141
ADDRESS_HELP = ("join the Ray cluster at HOST:PORT (what `ray start --head` prints), or 'auto' for the one running "
                "on this machine; parley's code travels to its workers. Default: a private Ray instance, never a "
                "running cluster")

NOT_A_FOLDER = "{what} {path} is a file, not a folder; name a folder with --out"
CANNOT_WRITE = "cannot write the {what} {path}: {reason}; name another folder with --out"
INTERRUPTED = "parley: interrupted; run the same command again to resume"
#: Ctrl-C of ``parley run``: the folder is kept, marked; {again} says what running the same command does.
RUN_INTERRUPTED = "parley: interrupted; run folder {path} is kept, marked interrupted ({status}); {again}"
AGAIN_NEW = "running the same command again starts a new run in a new folder"
AGAIN_OUT = "running the same command again starts the run over in {path}"
AGAIN_OUT_SPENT = ("running the same command again is refused while its ledger holds what this run spent: add "
                   "--fresh to discard it, or choose another --out")
AGAIN_SHARED = "; what it spent stays spent in ledger {ledger}"
#: Printed before a run that names a ledger holding earlier runs' spending.
LEDGER_CARRIES = "parley: ledger {ledger} carries over what earlier runs spent: {spent}"
#: Printed after a run some of whose queries a named ledger's budget refused.
LEDGER_REFUSED = "parley: ledger {ledger} refused {count} queries: its budget is spent ({spent})"
BUG = "parley: internal error (a bug in parley, please report it): {error}; traceback in {log}"


def writable_folder(path: Path, what: str) -> Path:
    """``path`` as a folder parley can write into, created if missing; a ConfigError naming it otherwise.

    Checked before anything runs, so a folder that cannot be written costs no work and leaves
    nothing half-written.
    """
    import tempfile

    from parley.protocols.errors import ConfigError

    if path.exists() and not path.is_dir():
        raise ConfigError(NOT_A_FOLDER.format(what=what, path=path))
    try:
        path.mkdir(parents=True, exist_ok=True)
        with tempfile.TemporaryFile(dir=path):
            pass
    except OSError as exc:
        raise ConfigError(CANNOT_WRITE.format(what=what, path=path, reason=exc.strerror or exc)) from None
    return path


def _out_folder(path: Path, kind: Literal["run", "study"], name: str, replace: bool) -> Path:
    """``--out`` of a run or a study: refused if it holds another's results (unless ``replace``), then writable.

    The refusal comes first and touches nothing; with ``replace`` the earlier results are deleted only
    once the folder is known to be writable (see :mod:`parley.scenarios.out_folder`).
    """
    from parley.scenarios.out_folder import check_out, clear

    foreign = check_out(path, kind, name, replace)
    out = writable_folder(path, f"{kind} folder")
    if foreign is not None:
        clear(out, foreign)
    return out


def _bug_log(error: BaseException) -> Path:
    """Write the traceback of ``error`` to a file of its own and return its path."""
    import tempfile
    import traceback

    handle, name = tempfile.mkstemp(prefix="parley-bug-", suffix=".log")
    with open(handle, "w", encoding="utf-8") as log:
        log.write("".join(traceback.format_exception(error)))
    return Path(name)


BAD_KEYS_MSG = "--keys takes fingerprints (64 hex digits) or name=fingerprint pairs, comma-separated; got {got!r}"
BAD_HEAD_MSG = "--head takes the final head printed by `parley run` (64 hex digits); got {got!r}"
BAD_EXPECT_MSG = "cannot read expected keys and head from {path}: {why}"
NO_TRANSCRIPT_MSG = "transcript {path} does not exist"
#: ``parley verify`` given a result.json (any ``.json``): what to give instead.
NOT_A_TRANSCRIPT_MSG = ("{path} is not a transcript: parley verify takes a run folder ({folder}) or its transcript "
                        "({transcript}); a result.json goes with --expect, as the keys and head to check it against")
#: ``parley verify``'s last line once the anchors matched; {anchors} names where each came from.
MATCHES_MSG = "matches the {anchors}"
#: Added when an anchor came from a result.json beside the transcript (a run folder given alone, by default).
SAME_FOLDER_MSG = (", which is in the same folder: this proves the folder's files agree with each other, not that "
                   "it is the folder that was published\nto prove that, verify against anchors from a copy you trust: "
                   "--expect RESULT_JSON, or --keys and --head")


SECRETS_HELP = ("the parties' secrets (noise, keys, masks): read from FILE, or fresh ones written there if it does "
                "not exist; the same FILE and seed give the same releases. Default: fresh from OS entropy, kept "
                "nowhere. Keep FILE out of the folders you publish")


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="parley",
        description="Simulate the parties around a fairness audit on Ray and measure what leaks between them.",
        epilog="Examples: parley run; parley run adult-raw-single-query --set attack.targets=50; "
               "parley verify runs/x/transcript.jsonl",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("list", help="catalog scenarios, protocols, attacks, learners and data sets")
    show = sub.add_parser("show", help="a scenario, study, protocol, attack, learner, data set or exchange: its "
                                       "description and every key it takes, with type, default and range")
    show.add_argument("name", help="a name `parley list` lists (a name that is several things shows each)")

    run = sub.add_parser("run", help="run one scenario (default: adult-raw-double-query)")
    run.add_argument("scenario", nargs="?", help="catalog name or path to a TOML file")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a field by dotted path, e.g. protocol.decimals=4 (repeatable)")
    run.add_argument("--out", type=Path,
                     help="run folder (default: a new folder runs/<scenario>/<run-id> for every run, named by its "
                          "start time and --set overrides; runs/<scenario>/latest points at the newest completed)")
    run.add_argument("--ledger", metavar="NAME|PATH",
                     help="a privacy ledger shared by the runs that name it (the same compliance party coming "
                          "back): NAME is runs/ledgers/NAME.sqlite; never reset unless --fresh. Default: each run "
                          "its own ledger in its folder")
    run.add_argument("--fresh", action="store_true",
                     help="with --out: discard the privacy ledger an earlier run left in that folder (refused "
                          "without it); with --ledger: start that ledger anew")
    run.add_argument("--replace", action="store_true",
                     help="with --out: delete another scenario's or a study's results that the folder holds "
                          "(refused without it)")
    run.add_argument("--seed", type=int, help="root seed of the simulated world (public: result.json prints it)")
    run.add_argument("--secrets", type=Path, metavar="FILE", help=SECRETS_HELP)
    run.add_argument("--address", help=ADDRESS_HELP)
    run.add_argument("--open", action="store_true", help="open the run's report.html in a web browser afterwards")
    run.add_argument("--explain", action="store_true",
                     help="narrate the run for a room: every message, who sent what, and what was learned after it")
    run.add_argument("--exact", action="store_true",
                     help="with --explain: answers with every digit the wire holds (default: 4 significant digits)")

    study = sub.add_parser("study", help="run a grid of scenarios in parallel on Ray (resumable)")
    study.add_argument("study", help="catalog study name or path to a study TOML file")
    study.add_argument("--out", type=Path,
                       help="study folder (default: studies/<study>); re-running skips finished rows")
    study.add_argument("--workers", type=int, help="parallel workers (default: the CPUs Ray reports)")
    study.add_argument("--address", help=ADDRESS_HELP)
    study.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="study field (repeats=3, grid.protocol.decimals=[2,4]) or base-scenario field "
                            "(dataset.audit_size=500); repeatable")
    study.add_argument("--secrets", type=Path, metavar="FILE", help=SECRETS_HELP)
    study.add_argument("--no-runs", action="store_true", help="do not keep each cell's run folder under cells/")
    study.add_argument("--party-hosts", choices=("worker", "actors"), default="worker",
                       help="where a cell's parties run: inside its study worker's process (default), or each "
                            "in a Ray actor of its own, restored if its process dies")
    study.add_argument("--replace", action="store_true",
                       help="delete another study's or a run's results that the study folder holds (refused "
                            "without it)")

    compare = sub.add_parser("compare", help="every protocol against every applicable attack on one data set, "
                                             "with utility, a privacy audit and a report")
    compare.add_argument("--dataset", default="adult", help="adult (default), german or compas")
    compare.add_argument("--quick", action="store_true", help="small sizes, few cells, one repeat (about 3 minutes)")
    compare.add_argument("--out", type=Path, help="report folder (default: compare/<dataset>)")
    compare.add_argument("--address", help=ADDRESS_HELP)
    compare.add_argument("--workers", type=int, help="parallel workers (default: the CPUs Ray reports)")
    compare.add_argument("--secrets", type=Path, metavar="FILE", help=SECRETS_HELP)
    compare.add_argument("--row", action="append", dest="rows", metavar="LABEL",
                         help="only this protocol row (repeatable; the labels are the report's, e.g. 'laplace ε=1')")
    compare.add_argument("--attack", action="append", dest="attacks", metavar="NAME",
                         help="only this attack's columns (repeatable)")
    compare.add_argument("--no-audit", action="store_true", help="skip the whole-scenario privacy audit")

    verify = sub.add_parser(
        "verify", help="check a transcript: signatures, digests, chain, sequences, nonces and the parties' end record",
        description="Exit 0: intact; 1: verification failed (the line and what failed are named); 2: usage error; "
                    "3: incomplete (no end record signed by the parties: the run was interrupted).")
    verify.add_argument("path", type=Path, help="a transcript.jsonl, a run folder, or a scenario's folder of runs "
                        "(runs/NAME: its latest run)")
    verify.add_argument("--keys", help="expected key fingerprints, comma-separated (name=fingerprint or fingerprint)")
    verify.add_argument("--head", help="expected final head")
    verify.add_argument("--expect", type=Path, metavar="RESULT_JSON",
                        help="read the expected keys and head from a result.json kept apart from the transcript "
                             "(default for a run folder: its own result.json)")

    workshop = sub.add_parser("workshop", help="serve a live threat-model workshop: a projector page and a page per "
                                               "participant (needs the workshop extra)")
    workshop.add_argument("--host", default="127.0.0.1",
                          help="address to listen on (default 127.0.0.1; 0.0.0.0 lets laptops in the room join)")
    workshop.add_argument("--port", type=int, default=8000, help="port (default 8000)")
    workshop.add_argument("--roster", type=int, default=12, help="people of the audit set the room plays for")
    workshop.add_argument("--secrets", type=Path, metavar="FILE", help=SECRETS_HELP)
    workshop.add_argument("--cards", type=Path, metavar="OUT",
                          help="draw the printable cards (one page each: HTML, and PDF by headless Chromium) into "
                               "OUT from docs/workshop, and serve nothing")
    return parser


def _first_line(text: str | None) -> str:
    lines = (text or "").strip().splitlines()
    return lines[0] if lines else ""


def _wrapped(text: str, indent: str, first: str | None = None) -> str:
    """``text`` wrapped to the terminal's width at word boundaries (never cut), each line indented."""
    import shutil
    import textwrap

    width = max(40, shutil.get_terminal_size().columns)
    return "\n".join(textwrap.wrap(" ".join(text.split()), width, initial_indent=indent if first is None else first,
                                    subsequent_indent=indent, break_on_hyphens=False)) or (first or indent).rstrip()


def _list_plugins(title: str, registry: Registry[Any], detail: Callable[[Any], str]) -> None:
    origins = registry.origins()
    width = max(map(len, origins), default=0)
    print(f"{title}:")
    for name, origin in origins.items():
        head = f"  {name:<{width}}  "
        text = f"({origin}) {detail(registry[name])}"
        if len(head) <= 30:
            print(_wrapped(text, " " * len(head), first=head))
        else:  # long names: each description on the lines under its name
            print(f"  {name}\n{_wrapped(text, '      ')}")


def _cmd_list() -> int:
    from parley.parties.attacks import ATTACKS
    from parley.parties.encodings import ENCODINGS
    from parley.parties.learners import LEARNERS
    from parley.protocols import PROTOCOLS
    from parley.scenarios.catalog import DEFAULT_SCENARIO, scenario_names, scenario_path
    from parley.scenarios.datasets import DATASETS
    from parley.scenarios.exchanges import EXCHANGES
    from parley.scenarios.spec import load_toml

    print("scenarios:")
    for name in scenario_names():
        data = load_toml(scenario_path(name))
        first = " ".join(str(data.get("description", "")).split())
        mark = " (default)" if name == DEFAULT_SCENARIO else ""
        print(f"  {name}{mark}\n{_wrapped(first, '      ')}")
    # Every plug-in with its origin: "parley" for a built-in, else the distribution that provides it.
    for title, registry, detail in (
            ("exchanges", EXCHANGES, lambda cls: _first_line(cls.__doc__)),
            ("protocols", PROTOCOLS, lambda cls: f"[{cls.flow}{', ' + cls.encoding if cls.encoding else ''}] "
                                                 f"{_first_line(cls.__doc__)}"),
            ("encodings", ENCODINGS, lambda cls: _first_line(cls.__doc__)),
            ("attacks", ATTACKS, lambda cls: f"[{', '.join(cls.threat_models)}] {cls.summary}"),
            ("learners", LEARNERS, lambda cls: f"[{', '.join(cls.flows)}] {cls.summary}")):
        _list_plugins(title, registry, detail)
    from parley.scenarios.catalog import study_names

    print("studies:")
    for name in study_names():
        print(f"  {name}")
    _list_plugins("datasets", DATASETS, lambda cls: cls.summary)
    print("\n" + _wrapped("`parley show NAME` shows the full description of any of them and every key it takes.",
                          ""))
    return EXIT_OK


def _cmd_show(name: str) -> int:
    from parley.scenarios.show import show

    print(show(name))
    return EXIT_OK


def _join(address: str | None) -> None:
    """Join the cluster at ``--address`` before any work, so that a wrong address fails at once, in one line."""
    if address:
        from parley.parties.ray.cluster import ensure_ray

        ensure_ray(address)


def _cmd_run(args: argparse.Namespace) -> int:
    from parley.scenarios.catalog import DEFAULT_SCENARIO, resolve_scenario
    from parley.scenarios.spec import Scenario

    scenario = Scenario.from_toml(resolve_scenario(args.scenario or DEFAULT_SCENARIO))
    overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])
    if overrides:
        scenario = scenario.with_overrides(overrides)
    # The runner (parties, exchanges, data loading) is imported only once the scenario is valid: a mistake
    # in it is reported without that cost.
    from parley.scenarios.datasets import dataset_of, load_table
    from parley.scenarios.progress import StatusLine
    from parley.scenarios.report import HEADLINE, SWAP_NOTE, format_table
    from parley.scenarios.run_folder import (
        STATUS_FILE,
        ledger_path,
        mark,
        new_run_folder,
        point_latest,
        spends_budget,
    )
    from parley.scenarios.runner import run

    ledger = ledger_path(args.ledger) if args.ledger is not None else None
    # A file's data is read before any folder is made: its mistakes (a bad label, a missing column) leave nothing.
    table = None if dataset_of(scenario.dataset).seeded else load_table(scenario.dataset)
    if args.out is not None:
        out = _out_folder(args.out, "run", scenario.name, args.replace)
    else:  # a folder of its own: no run overwrites another, and no earlier ledger can refuse this one
        out = writable_folder(new_run_folder(scenario.name, overrides), "run folder")
    variant = f" with {', '.join(overrides)}" if overrides else ""
    print(f"parley: running {scenario.name}{variant} ({scenario.protocol.name} protocol, {scenario.attack.name} "
          "attack) ...", file=sys.stderr)
    if ledger is not None and spends_budget(scenario):  # a protocol that spends nothing ignores the ledger
        _ledger_note(ledger, LEDGER_CARRIES)
    try:
        _join(args.address)
        # On a terminal, one self-rewriting status line while the run goes; elsewhere (a pipe, CI, a file) nothing.
        line = StatusLine(sys.stderr) if sys.stderr.isatty() else None
        result = run(scenario, out=out, address=args.address, fresh=args.fresh, progress=line, secrets=args.secrets,
                     ledger=ledger, table=table)
    except KeyboardInterrupt:
        if args.out is None and not (out / STATUS_FILE).exists():  # stopped before the run began: marked all the same
            mark(out, "interrupted", scenario.name, overrides=overrides)
        print(_interrupted(out, args.out is not None, ledger), file=sys.stderr)
        return EXIT_INTERRUPTED
    if args.out is None:
        point_latest(out)
    print(format_table(result.metrics, keys=HEADLINE))
    if ledger is not None and result.record.get("ledger") and result.metrics.get("budget_refusals"):
        _ledger_note(ledger, LEDGER_REFUSED, count=result.metrics["budget_refusals"])
    if result.metrics.get("leakage_up_to_swap"):
        print(f"\n{SWAP_NOTE.format(as_labelled=result.metrics['leakage_as_labelled'])}")
    print(f"\nrun folder: {result.run_dir}")
    anchors = result.record.get("transcript") or {}
    if anchors.get("head"):
        print(f"transcript head: {anchors['head']}")
        print("key fingerprints: " + ",".join(f"{n}={fp}" for n, fp in anchors["keys"].items()))
    print(f"secrets: {args.secrets if args.secrets is not None else 'fresh'} ({result.record['secrets']['note']})")
    if args.open:
        import webbrowser

        page = (result.run_dir / "report.html").resolve()
        if not webbrowser.open(page.as_uri()):
            print(f"parley: no web browser to open {page}; open it by hand", file=sys.stderr)
    if args.explain:
        from parley.scenarios.explain import explain_record

        print("\n" + explain_record(result.record, result.transcript_path, exact=args.exact))
    return EXIT_OK


def _ledger_note(ledger: Path, template: str, **more: Any) -> None:
    """Print ``template`` with what the named ``ledger`` holds, if it holds debits (its integrity is checked)."""
    from parley.scenarios.run_folder import ledger_debits

    debits, spent = ledger_debits(ledger)
    if debits:
        print(template.format(ledger=ledger, spent=spent, **more), file=sys.stderr)


def _has_debits(path: Path) -> bool:
    """Does the ledger file ``path`` exist and hold debits (a ledger that cannot be read counts as spent)?"""
    from parley.protocols.errors import ParleyError
    from parley.scenarios.run_folder import ledger_debits

    try:
        return ledger_debits(path)[0] > 0
    except (ParleyError, OSError, ValueError):
        return True


def _interrupted(out: Path, explicit: bool, ledger: Path | None) -> str:
    """The line after Ctrl-C of ``parley run``: where the run is, and what running the same command does."""
    from parley.scenarios.run_folder import STATUS_FILE
    from parley.scenarios.world import LEDGER_FILE

    if not explicit:
        again = AGAIN_NEW
    elif ledger is None and _has_debits(out / LEDGER_FILE):
        again = AGAIN_OUT_SPENT
    else:
        again = AGAIN_OUT.format(path=out)
    if ledger is not None and ledger.is_file():
        again += AGAIN_SHARED.format(ledger=ledger)
    return RUN_INTERRUPTED.format(path=out, status=out / STATUS_FILE, again=again)


def _cmd_study(args: argparse.Namespace) -> int:
    from parley.scenarios.study import Study
    from parley.scenarios.study.engine import run_study

    study = Study.load(args.study)
    if args.overrides:
        study = study.with_overrides(args.overrides)
    out = _out_folder(args.out if args.out is not None else Path("studies") / study.name, "study", study.name,
                      args.replace)
    _join(args.address)
    done = run_study(study, out, workers=args.workers, address=args.address, keep_runs=not args.no_runs,
                     party_hosts=args.party_hosts, secrets=args.secrets)
    print(f"study {study.name}: {done.ran} rows run, {done.skipped} already done, {done.failed} failed, "
          f"{done.wall_s:.1f} s")
    print(f"results: {out / 'results.csv'}\nsummary: {out / 'summary.md'}")
    return EXIT_FAILED if done.failed else EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    from parley.scenarios.compare import compare

    out = writable_folder(args.out if args.out is not None else Path("compare") / args.dataset, "report folder")
    _join(args.address)
    done = compare(args.dataset, out, quick=args.quick, address=args.address, workers=args.workers,
                   secrets=args.secrets, audit=not args.no_audit, rows=tuple(args.rows) if args.rows else None,
                   attacks=tuple(args.attacks) if args.attacks else None)
    stopped = done.results["status"] != "ok"
    bugs = int(done.results.loc[stopped, "failure"].astype(str).str.startswith("bug:").sum())
    print(f"compare {args.dataset}: {len(done.results)} runs, {int(stopped.sum()) - bugs} where the attack gave up "
          f"or was refused, {bugs} errors; {done.wall_s:.0f} s")
    print(f"report: {out / 'report.html'}\nmatrix: {out / 'matrix.csv'}")
    return EXIT_FAILED if bugs else EXIT_OK


def _is_hex64(text: str) -> bool:
    return len(text) == 64 and all(c in "0123456789abcdef" for c in text)


def _parse_keys(text: str) -> dict[str, str] | list[str]:
    """``--keys``: all name=fingerprint pairs (checked by name) or all bare fingerprints (checked as a set)."""
    from parley.protocols.errors import ConfigError

    items = [item.strip() for item in text.split(",") if item.strip()]
    named = [item.partition("=") for item in items]
    if items and all(sep for _, sep, _ in named) and all(_is_hex64(fp) for _, _, fp in named):
        return {name: fp for name, _, fp in named}
    if items and all(_is_hex64(item) for item in items):
        return items
    raise ConfigError(BAD_KEYS_MSG.format(got=text[:200]))


def _read_expected(path: Path) -> tuple[dict[str, str], str]:
    """Keys and head from a result.json (its ``transcript`` field)."""
    import json

    from parley.protocols.errors import ConfigError

    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        anchors = record["transcript"]
        keys, head = anchors["keys"], anchors["head"]
        if type(keys) is not dict or not all(type(v) is str and _is_hex64(v) for v in keys.values()) \
                or type(head) is not str or not _is_hex64(head):
            raise ValueError("transcript.keys or transcript.head is malformed")
    except (OSError, ValueError, RecursionError, KeyError, TypeError) as exc:
        raise ConfigError(BAD_EXPECT_MSG.format(path=path, why=f"{type(exc).__name__}: {str(exc)[:200]}")) from None
    return keys, head


def _cmd_verify(args: argparse.Namespace) -> int:
    from parley.parties.transcript import check_transcript
    from parley.protocols.errors import ConfigError, IncompleteTranscriptError, TranscriptError

    path, expect = args.path, args.expect
    if path.suffix == ".json":  # a run's result.json (it holds the anchors, not the messages)
        raise ConfigError(NOT_A_TRANSCRIPT_MSG.format(path=path, folder=path.parent,
                                                      transcript=path.parent / "transcript.jsonl"))
    if path.is_dir() and not (path / "transcript.jsonl").exists() and (path / "latest").exists():
        path = path / "latest"  # a scenario's folder of runs (runs/NAME): its newest completed run
    if path.is_dir():
        if expect is None and args.keys is None and args.head is None and (path / "result.json").is_file():
            expect = path / "result.json"
        path = path / "transcript.jsonl"
    if not path.is_file():
        print(f"parley: error: {NO_TRANSCRIPT_MSG.format(path=path)}", file=sys.stderr)
        return EXIT_USAGE
    keys: dict[str, str] | list[str] | None = None
    head: str | None = None
    if expect is not None:
        keys, head = _read_expected(expect)
    if args.keys is not None:
        keys = _parse_keys(args.keys)
    if args.head is not None:
        if not _is_hex64(args.head):
            raise ConfigError(BAD_HEAD_MSG.format(got=args.head[:200]))
        head = args.head
    try:
        verified = check_transcript(path, keys=keys, head=head)
    except IncompleteTranscriptError as exc:
        print(f"parley: verify INCOMPLETE: {path}: {exc}", file=sys.stderr)
        return EXIT_INCOMPLETE
    except TranscriptError as exc:
        print(f"parley: verify FAILED: {path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"verified {verified.messages} messages in {path}: every signature, digest, chain link, sequence number "
          f"and nonce is intact, and every party signed the final head")
    print(f"head: {verified.head}")
    print("keys: " + ",".join(f"{n}={fp}" for n, fp in verified.keys.items()))
    if keys is None or head is None:
        print("not checked against expected keys and head: a rewrite with fresh keys is ruled out only by "
              "--keys and --head (printed by `parley run`, stored in result.json) or --expect RESULT_JSON")
    else:
        print(_matches(path, expect, args.keys is not None, args.head is not None))
    return EXIT_OK


def _matches(transcript: Path, expect: Path | None, keys_given: bool, head_given: bool) -> str:
    """The success line: which anchors matched, from where, and what a result.json beside the transcript proves."""
    if keys_given and head_given:
        return MATCHES_MSG.format(anchors="keys and head given with --keys and --head")
    if keys_given or head_given:
        anchors = f"keys of {'--keys' if keys_given else expect} and head of {'--head' if head_given else expect}"
    else:
        anchors = f"keys and head of {expect}"
    own = expect is not None and expect.resolve().parent == transcript.resolve().parent
    return MATCHES_MSG.format(anchors=anchors) + (SAME_FOLDER_MSG if own else "")


def _cmd_workshop(args: argparse.Namespace) -> int:
    from parley.parties.run_secrets import RunSecrets
    from parley.protocols.errors import ConfigError

    if args.cards is not None:
        from parley.scenarios.workshop.cards import CHROMIUM, write_cards

        for path in write_cards(args.cards):
            print(path)
        if not CHROMIUM.exists():
            print(f"parley workshop: no PDFs ({CHROMIUM} is absent): print the HTML pages from a browser",
                  file=sys.stderr)
        return EXIT_OK
    try:
        from parley.scenarios.workshop.app import create_app
        from parley.scenarios.workshop.game import Room
        from parley.scenarios.workshop.server import serve
    except ImportError as exc:
        raise ConfigError(f"parley workshop needs the workshop extra ({exc.name} is missing): "
                          "pip install 'parley-fairness[workshop]'") from None
    if args.roster < 2:
        raise ConfigError(f"--roster needs at least 2 people (one of each group), got {args.roster}")
    room = Room(roster=args.roster, secrets=RunSecrets.resolve(args.secrets))
    shown = "127.0.0.1" if args.host in ("0.0.0.0", "::") else args.host
    app = create_app(room)  # the facilitator's key: in the projector's and the replay's address only
    print(f"parley workshop: participants http://{shown}:{args.port}/play; facilitator only (the key is yours): "
          f"projector http://{shown}:{args.port}/projector?key={app.state.key}, replay "
          f"http://{shown}:{args.port}/replay?key={app.state.key} (Ctrl-C ends it)", file=sys.stderr)
    try:
        serve(app, host=args.host, port=args.port)
    finally:
        room.close()
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``parley`` console script."""
    from parley.protocols.errors import InternalError, ParleyError

    parser = _parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    # Ray's notice that it enabled token authentication is not the user's business (the auth stays on).
    logging.getLogger("ray._private.authentication.authentication_token_setup").setLevel(logging.ERROR)
    if args.command is None:
        parser.print_help()
        return EXIT_USAGE
    try:
        if args.command == "list":
            return _cmd_list()
        if args.command == "show":
            return _cmd_show(args.name)
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "study":
            return _cmd_study(args)
        if args.command == "compare":
            return _cmd_compare(args)
        if args.command == "workshop":
            return _cmd_workshop(args)
        return _cmd_verify(args)
    except KeyboardInterrupt:
        print(INTERRUPTED, file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # the reader went away (`parley list | head`): stop quietly, as other tools do
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # no second error at interpreter exit
        return EXIT_BROKEN_PIPE
    except InternalError as exc:
        print(BUG.format(error=exc, log=_bug_log(exc)), file=sys.stderr)
        return EXIT_BUG
    except ParleyError as exc:
        print(f"parley: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    except Exception as exc:  # anything parley did not raise on purpose is a bug
        print(BUG.format(error=f"{type(exc).__name__}: {exc}", log=_bug_log(exc)), file=sys.stderr)
        return EXIT_BUG


if __name__ == "__main__":
    sys.exit(main())
