"""parley: simulate the parties around a fairness audit and measure what leaks between them.

The public API is small; everything else lives in three subpackages, kept as the
project's top-level folders and installed under this package:

- :mod:`parley.protocols`: fairness metrics, budgets, answer mechanisms, DP mathematics (pure);
- :mod:`parley.parties`: signed messages, the transcript, the ledger, the roles, attacks, learners;
- :mod:`parley.scenarios`: scenario specs, data sets, the runner, studies, comparisons, the CLI.

Importing :mod:`parley` imports neither Ray nor the data sets: each function below
imports what it needs when called.

>>> import parley
>>> sorted(parley.__all__)
['ParleyError', 'Scenario', 'Study', '__version__', 'compare', 'run', 'study', 'verify']

``Scenario`` and ``Study`` are the validated specs behind ``run`` and ``study``:

>>> scenario = parley.Scenario.from_dict({"name": "doc", "dataset": {"name": "synthetic"},
...                                       "attack": {"name": "double-query"}})
>>> scenario.with_values({"protocol.decimals": 4}).protocol.params.decimals
4
>>> parley.Study.load("smoke").name
'smoke'

Every mistake parley reports on purpose is a ``ParleyError``, with a message naming the field:

>>> try:
...     scenario.with_overrides(["protocol.decimals=true"])
... except parley.ParleyError as error:
...     print(error)
protocol.decimals: Input should be a valid integer (got True)

``__version__`` is the installed distribution's version (``parley-fairness``):

>>> parley.__version__ != ""
True
"""

from __future__ import annotations

import os as _os
import sys as _sys
from collections.abc import Mapping, Sequence
from importlib import metadata as _metadata
from importlib.util import spec_from_file_location as _spec_from_file_location
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from importlib.machinery import ModuleSpec
    from types import ModuleType


class _CheckoutFinder:
    """Finds exactly ``parley.parties``, ``parley.protocols`` and ``parley.scenarios`` in a source checkout.

    They are the checkout's top-level folders, mapped as ``package-dir`` in pyproject.toml maps them
    in the wheel; their own modules are then found through the subpackage's ``__path__``. No other
    name is mapped: ``parley.tests`` and ``parley.setup`` do not exist, in a checkout as in the wheel.
    """

    def __init__(self, checkout: str) -> None:
        self.checkout = checkout

    def find_spec(self, fullname: str, path: Sequence[str] | None = None,
                  target: ModuleType | None = None) -> ModuleSpec | None:
        """The spec of one of the three subpackages, from its folder; None for any other name."""
        if fullname not in ("parley.parties", "parley.protocols", "parley.scenarios"):
            return None
        folder = _os.path.join(self.checkout, fullname[len("parley."):])
        return _spec_from_file_location(fullname, _os.path.join(folder, "__init__.py"),
                                        submodule_search_locations=[folder])


# In a source checkout (parley/ beside the three folders) register the subpackages, once per process;
# in an installed wheel they are parley/parties/ etc. and nothing is registered.
_HERE = _os.path.dirname(_os.path.abspath(__file__))
_CHECKOUT = _os.path.dirname(_HERE)
if (not _os.path.isdir(_os.path.join(_HERE, "protocols"))
        and _os.path.isfile(_os.path.join(_CHECKOUT, "protocols", "__init__.py"))
        and not any(getattr(finder, "checkout", None) == _CHECKOUT for finder in _sys.meta_path)):
    _sys.meta_path.append(_CheckoutFinder(_CHECKOUT))

from parley.protocols.errors import ParleyError  # noqa: E402

if TYPE_CHECKING:
    from parley.scenarios.compare.run import Comparison
    from parley.scenarios.runner import Result
    from parley.scenarios.spec import Scenario
    from parley.scenarios.study.engine import StudyRun
    from parley.scenarios.study.plan import Study

__all__ = ["ParleyError", "Scenario", "Study", "__version__", "compare", "run", "study", "verify"]

try:
    __version__ = _metadata.version("parley-fairness")
except _metadata.PackageNotFoundError:  # a source checkout that was never installed
    __version__ = "0+unknown"


def __getattr__(name: str) -> Any:
    """``parley.Scenario`` and ``parley.Study`` are imported on first use (they pull in pydantic and pandas)."""
    if name == "Scenario":
        from parley.scenarios.spec import Scenario

        return Scenario
    if name == "Study":
        from parley.scenarios.study.plan import Study

        return Study
    raise AttributeError(f"module 'parley' has no attribute {name!r}")


def _scenario(scenario: str | Path | Scenario) -> Scenario:
    from parley.scenarios.catalog import resolve_scenario
    from parley.scenarios.spec import Scenario

    if isinstance(scenario, Scenario):
        return scenario
    return Scenario.from_toml(resolve_scenario(str(scenario)))


def run(scenario: str | Path | Scenario, out: str | Path | None = None, *, address: str | None = None,
        fresh: bool = False, secrets: str | Path | None = None, **values: Any) -> Result:
    """Run one scenario end to end and write its run folder.

    Parameters
    ----------
    scenario : str, path or Scenario
        A catalog name (``parley list``), a TOML file, or a :class:`Scenario`.
    out : path-like, optional
        The run folder, used as given (an earlier run's spent ledger there is refused unless ``fresh``).
        Default: a new folder ``runs/<scenario name>/<run-id>`` for every run (its start time and the
        changed ``values``), as ``parley run`` makes; ``runs/<scenario name>/latest`` then points at it.
    address : str, optional
        A Ray cluster to join (``"auto"`` or ``HOST:PORT``); by default a private local instance.
    fresh : bool
        Discard the privacy ledger an earlier run left in ``out`` (without it, such a folder is refused).
    secrets : path-like, optional
        A secrets file for the parties' private randomness (noise, keys, masks): read if it exists, else
        written with fresh secrets. The same file replays the same releases; keep it out of the run folder.
        Default: fresh secrets from OS entropy, kept nowhere (the seed never gives the noise).
    **values
        Fields to change, by dotted path with ``__`` for the dot (``attack__targets=5``).

    Returns
    -------
    Result
        ``metrics`` (the figures of ``result.json``), ``run_dir`` and ``transcript_path``.

    Examples
    --------
    >>> import tempfile, parley
    >>> scenario = parley.Scenario.from_dict({
    ...     "name": "doc-single-query", "backend": "local",
    ...     "dataset": {"name": "synthetic", "audit_size": 100, "minority": 20},
    ...     "protocol": {"name": "raw"}, "attack": {"name": "single-query", "targets": 4}})
    >>> result = parley.run(scenario, out=tempfile.mkdtemp())
    >>> result.metrics["leakage"], result.metrics["queries"]
    (100.0, 4)
    """
    from parley.scenarios.runner import run as _run

    spec = _scenario(scenario)
    if values:
        spec = spec.with_values({key.replace("__", "."): value for key, value in values.items()})
    if out is not None:
        return _run(spec, out=Path(out), address=address, fresh=fresh, secrets=secrets)
    from parley.scenarios.run_folder import new_run_folder, point_latest

    folder = new_run_folder(spec.name, [f"{key.replace('__', '.')}={value}" for key, value in values.items()])
    result = _run(spec, out=folder, address=address, fresh=fresh, secrets=secrets)
    point_latest(folder)
    return result


def study(study: str | Path | Study, out: str | Path | None = None, *, workers: int | None = None,
          address: str | None = None, progress: bool = False, secrets: str | Path | None = None) -> StudyRun:
    """Run a study (a grid of scenarios, repeated); resumable: finished rows are not run again.

    Parameters
    ----------
    study : str, path or Study
        A catalog study name, a TOML file, or a :class:`Study`.
    out : path-like, optional
        The study folder (default: ``studies/<study name>``): ``results.csv``, ``summary.md``, plots.
    workers : int, optional
        Parallel study workers (default: the CPUs Ray reports).
    address : str, optional
        A Ray cluster to join; by default a private local instance.
    progress : bool
        Show a progress bar on stderr.
    secrets : path-like, optional
        A secrets file for the rows' private randomness (see :func:`run`); default: fresh from OS entropy.

    Examples
    --------
    >>> import tempfile, parley
    >>> grid = parley.Study.from_dict({
    ...     "name": "doc-grid", "scenario": {
    ...         "name": "doc-base", "backend": "local",
    ...         "dataset": {"name": "synthetic", "audit_size": 60, "minority": 10},
    ...         "protocol": {"name": "raw"}, "attack": {"name": "single-query", "targets": 2}},
    ...     "grid": {"protocol.decimals": [2, 6]}})
    >>> done = parley.study(grid, out=tempfile.mkdtemp(), workers=1)
    >>> done.ran, done.failed
    (2, 0)
    """
    from parley.scenarios.study.engine import run_study
    from parley.scenarios.study.plan import Study as _Study

    spec = study if isinstance(study, _Study) else _Study.load(str(study))
    folder = Path(out) if out is not None else Path("studies") / spec.name
    return run_study(spec, folder, workers=workers, address=address, progress=progress, secrets=secrets)


def compare(dataset: str = "adult", out: str | Path | None = None, *, quick: bool = False,
            address: str | None = None, workers: int | None = None, secrets: str | Path | None = None) -> Comparison:
    """Every protocol against every applicable attack on one data set: matrix, frontier, audit, report.

    Examples
    --------
    >>> import parley
    >>> try:
    ...     parley.compare("no-such-data")
    ... except parley.ParleyError as error:
    ...     print(error)
    compare runs on a named data set (one of adult, german, compas), got 'no-such-data'
    """
    from parley.scenarios.compare.run import compare as _compare

    folder = Path(out) if out is not None else Path("compare") / dataset
    return _compare(dataset, folder, quick=quick, address=address, workers=workers, secrets=secrets)


def verify(transcript: str | Path, *, keys: Mapping[str, str] | None = None, head: str | None = None) -> int:
    """Check a transcript: every signature, digest, chain link, sequence number, nonce and end signature.

    Returns the number of messages. With ``keys`` (party name -> key fingerprint) and ``head``
    (the final chain head), both as ``result.json`` stores them under ``transcript``, the check is
    also against those anchors, so a transcript rewritten under fresh keys fails.

    Raises :class:`parley.protocols.errors.TranscriptError` naming the first bad line, or its
    subclass ``IncompleteTranscriptError`` when every line verifies but the parties' end record is
    missing (an interrupted run).

    Examples
    --------
    >>> import tempfile, parley
    >>> scenario = parley.Scenario.from_dict({
    ...     "name": "doc-verify", "backend": "local",
    ...     "dataset": {"name": "synthetic", "audit_size": 100, "minority": 20},
    ...     "protocol": {"name": "raw"}, "attack": {"name": "single-query", "targets": 2}})
    >>> result = parley.run(scenario, out=tempfile.mkdtemp())
    >>> anchors = result.record["transcript"]
    >>> parley.verify(result.transcript_path, keys=anchors["keys"], head=anchors["head"]) == result.metrics["messages"]
    True
    """
    from parley.parties.transcript import check_transcript

    return check_transcript(Path(transcript), keys=keys, head=head).messages
