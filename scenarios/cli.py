"""The ``parley`` command: list, run and verify.

User mistakes (a bad key, an unknown scenario, a missing file) print one line,
``parley: error: ...``, and exit 2; a transcript that fails verification exits
1 naming the bad line. Tracebacks are kept for bugs.
"""

from __future__ import annotations

import argparse
import logging
import sys
from collections.abc import Sequence
from pathlib import Path

__all__ = ["main"]

EXIT_OK, EXIT_FAILED, EXIT_USAGE = 0, 1, 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="parley",
        description="Simulate the parties around a fairness audit on Ray and measure what leaks between them.",
        epilog="Examples: parley run; parley run adult-raw-single-query --set attack.targets=50; "
               "parley verify runs/x/transcript.jsonl",
    )
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")

    sub.add_parser("list", help="catalog scenarios, protocols, attacks, learners and data sets")

    run = sub.add_parser("run", help="run one scenario (default: adult-raw-double-query)")
    run.add_argument("scenario", nargs="?", help="catalog name or path to a TOML file")
    run.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                     help="override a field by dotted path, e.g. protocol.decimals=4 (repeatable)")
    run.add_argument("--out", type=Path, help="run folder (default: runs/<scenario>)")
    run.add_argument("--fresh", action="store_true",
                     help="discard the privacy ledger an earlier run left in the run folder (refused without it)")
    run.add_argument("--seed", type=int, help="root seed (same seed, same result.json)")
    run.add_argument("--address", help="join the Ray cluster at this address instead of starting a local one")
    run.add_argument("--explain", action="store_true",
                     help="narrate the run for a room: every message, who sent what, and what was learned after it")

    study = sub.add_parser("study", help="run a grid of scenarios in parallel on Ray (resumable)")
    study.add_argument("study", help="catalog study name or path to a study TOML file")
    study.add_argument("--out", type=Path, help="study folder (default: studies/<study>); re-running skips finished rows")
    study.add_argument("--workers", type=int, help="parallel workers (default: the CPUs Ray reports)")
    study.add_argument("--address", help="join the Ray cluster at this address instead of starting a local one")
    study.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY=VALUE",
                       help="study field (repeats=3, grid.protocol.decimals=[2,4]) or base-scenario field "
                            "(dataset.audit_size=500); repeatable")
    study.add_argument("--no-runs", action="store_true", help="do not keep each cell's run folder under cells/")

    compare = sub.add_parser("compare", help="every protocol against every applicable attack on one data set, "
                                             "with utility, a privacy audit and a report")
    compare.add_argument("--dataset", default="adult", help="adult (default), german or compas")
    compare.add_argument("--quick", action="store_true", help="small sizes, few cells, one repeat (about 3 minutes)")
    compare.add_argument("--out", type=Path, help="report folder (default: compare/<dataset>)")
    compare.add_argument("--address", help="join the Ray cluster at this address instead of starting a local one")
    compare.add_argument("--workers", type=int, help="parallel workers (default: the CPUs Ray reports)")

    verify = sub.add_parser("verify", help="check every signature, digest and chain link of a transcript")
    verify.add_argument("path", type=Path)
    return parser


def _cmd_list() -> int:
    from parley.parties.attacks import ATTACKS
    from parley.protocols import PROTOCOLS
    from parley.scenarios.catalog import DEFAULT_SCENARIO, scenario_names, scenario_path
    from parley.scenarios.datasets import DATASET_NAMES
    from parley.scenarios.spec import load_toml

    print("scenarios:")
    for name in scenario_names():
        data = load_toml(scenario_path(name))
        first = " ".join(str(data.get("description", "")).split())
        mark = " (default)" if name == DEFAULT_SCENARIO else ""
        print(f"  {name}{mark}\n      {first[:110]}{'...' if len(first) > 110 else ''}")
    print("protocols:")
    for name, cls in sorted(PROTOCOLS.items()):
        print(f"  {name:<16} {(cls.__doc__ or '').strip().splitlines()[0]}")
    print("attacks:")
    for name, cls in sorted(ATTACKS.items()):
        print(f"  {name:<16} [{', '.join(cls.threat_models)}] {cls.summary}")
    from parley.parties.learners import LEARNERS

    print("learners:")
    for name, cls in sorted(LEARNERS.items()):
        print(f"  {name:<22} [{', '.join(cls.flows)}] {cls.summary}")
    from parley.scenarios.catalog import study_names

    print("studies:")
    for name in study_names():
        print(f"  {name}")
    print("datasets:")
    print("  " + ", ".join(DATASET_NAMES))
    return EXIT_OK


def _cmd_run(args: argparse.Namespace) -> int:
    from parley.scenarios.catalog import DEFAULT_SCENARIO, resolve_scenario
    from parley.scenarios.report import HEADLINE, format_table
    from parley.scenarios.runner import run
    from parley.scenarios.spec import Scenario

    scenario = Scenario.from_toml(resolve_scenario(args.scenario or DEFAULT_SCENARIO))
    overrides = list(args.overrides) + ([f"seed={args.seed}"] if args.seed is not None else [])
    if overrides:
        scenario = scenario.with_overrides(overrides)
    out = args.out if args.out is not None else Path("runs") / scenario.name
    print(f"parley: running {scenario.name} ({scenario.protocol.name} protocol, {scenario.attack.name} attack) ...",
          file=sys.stderr)
    result = run(scenario, out=out, address=args.address, fresh=args.fresh)
    print(format_table(result.metrics, keys=HEADLINE))
    print(f"\nrun folder: {result.run_dir}")
    if args.explain:
        from parley.scenarios.explain import explain_record

        print("\n" + explain_record(result.record, result.transcript_path))
    return EXIT_OK


def _cmd_study(args: argparse.Namespace) -> int:
    from parley.scenarios.study import Study
    from parley.scenarios.study.engine import run_study

    study = Study.load(args.study)
    if args.overrides:
        study = study.with_overrides(args.overrides)
    out = args.out if args.out is not None else Path("studies") / study.name
    done = run_study(study, out, workers=args.workers, address=args.address, keep_runs=not args.no_runs)
    print(f"study {study.name}: {done.ran} rows run, {done.skipped} already done, {done.failed} failed, "
          f"{done.wall_s:.1f} s")
    print(f"results: {out / 'results.csv'}\nsummary: {out / 'summary.md'}")
    return EXIT_FAILED if done.failed else EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    from parley.scenarios.compare import compare

    out = args.out if args.out is not None else Path("compare") / args.dataset
    done = compare(args.dataset, out, quick=args.quick, address=args.address, workers=args.workers)
    stopped = done.results["status"] != "ok"
    bugs = int(done.results.loc[stopped, "failure"].astype(str).str.startswith("bug:").sum())
    print(f"compare {args.dataset}: {len(done.results)} runs, {int(stopped.sum()) - bugs} where the attack gave up "
          f"or was refused, {bugs} errors; {done.wall_s:.0f} s")
    print(f"report: {out / 'report.html'}\nmatrix: {out / 'matrix.csv'}")
    return EXIT_FAILED if bugs else EXIT_OK


def _cmd_verify(args: argparse.Namespace) -> int:
    from parley.parties.transcript import verify_transcript
    from parley.protocols.errors import TranscriptError

    if not args.path.is_file():
        print(f"parley: error: transcript {args.path} does not exist", file=sys.stderr)
        return EXIT_USAGE
    try:
        count = verify_transcript(args.path)
    except TranscriptError as exc:
        print(f"parley: verify FAILED: {args.path}: {exc}", file=sys.stderr)
        return EXIT_FAILED
    print(f"verified {count} messages in {args.path}: every signature, digest and chain link is intact")
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
        if args.command == "run":
            return _cmd_run(args)
        if args.command == "study":
            return _cmd_study(args)
        if args.command == "compare":
            return _cmd_compare(args)
        return _cmd_verify(args)
    except InternalError:
        raise
    except ParleyError as exc:
        print(f"parley: error: {exc}", file=sys.stderr)
        return EXIT_USAGE


if __name__ == "__main__":
    sys.exit(main())
