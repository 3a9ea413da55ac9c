"""Plug-ins from outside parley: a package installed with pip adds a protocol, an attack, a learner and a data set.

The package under ``fixture_pkg/`` (parley-toy-plugins, its own pyproject.toml declaring the
entry points) is built and installed with pip into a folder outside the parley tree; every check
runs in a subprocess with that folder on PYTHONPATH, as a user's environment would have it, so
the registries of this test process never see it. A second distribution written here as pip
lays one out (module and .dist-info; no build, to keep the test short), parley-bad-plugins,
carries a broken entry point and name clashes: each must give a PluginError naming its
distribution and entry point, on the command line one line and no traceback.
"""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import setuptools

from parley.parties.transcript import read_transcript
from parley.protocols.registry import (
    PLUGIN_LOAD_FAILED,
    PLUGIN_NAME_MISMATCH,
    PLUGIN_NAME_TAKEN,
    PLUGIN_NOT_A_CLASS,
)

HERE = Path(__file__).parent
FIXTURE = HERE / "fixture_pkg"
SCENARIOS = HERE / "scenarios"
DOCS = HERE.parents[1] / "docs" / "plugins.md"
TOY = "parley-toy-plugins 0.1.0"
BAD = "parley-bad-plugins 0.1.0"

# parley-bad-plugins as pip would install it: its module and its .dist-info (METADATA, entry_points.txt).
BAD_METADATA = "Metadata-Version: 2.1\nName: parley-bad-plugins\nVersion: 0.1.0\n"
BAD_ENTRY_POINTS = """\
[parley.protocols]
broken = parley_bad_plugins.missing:Nothing

[parley.attacks]
double-query = parley_bad_plugins:Impostor

[parley.learners]
toy-logit = parley_bad_plugins:OtherLogit

[parley.datasets]
not-a-class = parley_bad_plugins:NOT_A_CLASS
wrong-name = parley_bad_plugins:Misnamed
"""

BAD_MODULE = """\
from parley.parties.attacks import Attack
from parley.parties.learners import Learner
from parley.scenarios.datasets import Dataset

NOT_A_CLASS = "a string"


class Impostor(Attack):
    name = "double-query"


class OtherLogit(Learner):
    name = "toy-logit"
    flows = ("fairness-certificate",)


class Misnamed(Dataset):
    name = "misnamed"

    def load(self, rng):
        raise AssertionError("never loaded")
"""

# Read every registry of the subprocess; print what each gave (its names, or the error type and text).
PROBE = """\
import json
from parley.parties.attacks import ATTACKS
from parley.parties.learners import LEARNERS
from parley.protocols import PROTOCOLS
from parley.scenarios.datasets import DATASETS

out = {}
for key, registry in (("protocols", PROTOCOLS), ("attacks", ATTACKS), ("learners", LEARNERS), ("datasets", DATASETS)):
    results = []
    for _ in range(2):  # a failure must come back on every look-up, not only the first
        try:
            results.append({n: str(o) for n, o in registry.origins().items()})
        except Exception as exc:
            results.append([type(exc).__name__, str(exc)])
    out[key] = results
print(json.dumps(out))
"""


def _pip_install(source: Path, target: Path) -> subprocess.Popen:
    """pip install ``source`` (no dependencies) into the folder ``target``, without network where possible."""
    command = [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index", "--target", str(target),
               str(source)]
    # Without build isolation pip builds with this environment's setuptools, which needs the wheel package
    # before setuptools 70.1; otherwise pip builds in an isolated environment from its configured indexes.
    major_minor = tuple(int(p) for p in setuptools.__version__.split(".")[:2])
    if importlib.util.find_spec("wheel") is not None or major_minor >= (70, 1):
        command.insert(command.index("--target"), "--no-build-isolation")
    else:
        command.remove("--no-index")
    return subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)


@pytest.fixture(scope="module")
def sites(tmp_path_factory) -> dict[str, Path]:
    """parley-toy-plugins built and installed by pip; parley-bad-plugins laid out as an installed distribution."""
    root = tmp_path_factory.mktemp("plugins")
    targets = {"toy": root / "toy-site", "bad": root / "bad-site"}
    proc = _pip_install(FIXTURE, targets["toy"])
    (targets["bad"] / "parley_bad_plugins").mkdir(parents=True)
    (targets["bad"] / "parley_bad_plugins" / "__init__.py").write_text(BAD_MODULE)
    info = targets["bad"] / "parley_bad_plugins-0.1.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text(BAD_METADATA)
    (info / "entry_points.txt").write_text(BAD_ENTRY_POINTS)
    output, _ = proc.communicate(timeout=300)
    assert proc.returncode == 0, f"pip install of {FIXTURE} failed:\n{output}"
    assert (targets["toy"] / "parley_toy_plugins-0.1.0.dist-info" / "entry_points.txt").is_file()
    return targets


def _env(*sites: Path) -> dict[str, str]:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([*map(str, sites), *filter(None, [env.get("PYTHONPATH")])])
    return env


def _parley(args: list[str], *sites: Path, cwd: Path) -> subprocess.CompletedProcess:
    script = Path(sys.executable).with_name("parley")
    command = [str(script)] if script.is_file() else [sys.executable, "-m", "parley.scenarios.cli"]
    return subprocess.run(command + args, env=_env(*sites), cwd=cwd, capture_output=True, text=True, timeout=300)


def _python(code: str, *sites: Path, cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-c", code], env=_env(*sites), cwd=cwd, capture_output=True, text=True,
                          timeout=300)


@pytest.mark.system  # pip-installed plug-ins (the sites fixture): the system tier
def test_parley_list_shows_each_plugin_with_its_origin(sites, tmp_path):
    done = _parley(["list"], sites["toy"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    for section, name in (("protocols:", "toy-round"), ("attacks:", "toy-flip"), ("learners:", "toy-logit"),
                          ("datasets:", "toy-blobs")):
        start = lines.index(section)
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
        rows = {line.split()[0]: line for line in lines[start + 1:end]}
        assert f"({TOY})" in rows[name], rows[name]
        builtins = [row for key, row in rows.items() if key != name]
        assert builtins and all("(parley)" in row for row in builtins), section


def test_without_the_package_no_plugin_is_registered():
    """This test process does not have the package on its path: its registries hold the built-ins only."""
    from parley.parties.attacks import ATTACKS
    from parley.parties.learners import LEARNERS
    from parley.protocols import PROTOCOLS
    from parley.scenarios.datasets import DATASETS

    for registry, name in ((PROTOCOLS, "toy-round"), (ATTACKS, "toy-flip"), (LEARNERS, "toy-logit"),
                           (DATASETS, "toy-blobs")):
        assert name not in registry and {str(o) for o in registry.origins().values()} == {"parley"}


@pytest.mark.system
def test_plugin_protocol_and_attack_run_like_builtins(sites, tmp_path):
    done = _parley(["run", str(SCENARIOS / "toy-round-flip.toml"), "--out", str(tmp_path / "run")], sites["toy"],
                   cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    m = record["metrics"]
    assert (record["protocol"], record["attack"]) == ("toy-round", "toy-flip")
    # One query of 31 models reveals all 30 targets: each flip moves SP by at least 1/n, far above the 1e-4 grid.
    assert m["attacked"] == 30 and m["correct"] == 30 and m["leakage"] == 100.0 and m["queries"] == 1
    # The answers are the plug-in's: rounded to multiples of 1e-4 (off the exact values by at most half a step).
    assert 0.0 < m["avg_query_error"] <= 0.5e-4 + 1e-12
    # The verified transcript carries the plug-in's own note in every answer.
    released = [e.payload for e in read_transcript(tmp_path / "run" / "transcript.jsonl", verify=True)
                if e.kind == "metric-answer"]
    assert len(released) == 2 and all(p["step"] == 1e-4 for p in released)  # the honest query, then the attack's


@pytest.mark.system
def test_plugin_learner_trains_the_certified_model(sites, tmp_path):
    done = _parley(["run", str(SCENARIOS / "toy-logit-certificate.toml"), "--out", str(tmp_path / "run")],
                   sites["toy"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    m = json.loads((tmp_path / "run" / "result.json").read_text())["metrics"]
    # A logistic regression on synthetic data whose labels follow X: well above chance, below perfect.
    assert 0.6 < m["target_train_accuracy"] < 0.95
    # The certificate certifies the SP of the plug-in learner's predictions on the training set.
    assert m["certified"] is True and m["certificate_value"] == pytest.approx(m["target_train_sp"], abs=1e-12)
    assert m["attacked"] == 600 and 50.0 < m["leakage"] <= 100.0


@pytest.mark.system
def test_plugin_dataset_is_split_and_attacked_like_a_builtin(sites, tmp_path):
    done = _parley(["run", str(SCENARIOS / "toy-blobs-double-query.toml"), "--out", str(tmp_path / "run")],
                   sites["toy"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    record = json.loads((tmp_path / "run" / "result.json").read_text())
    m = record["metrics"]
    assert (record["dataset"], record["protected"]) == ("toy-blobs", "blob")
    assert m["attack_N0"] + m["attack_N1"] == 200  # the audit set parley drew from the plug-in's table
    assert m["leakage"] == 100.0 and m["attacked"] == 20 and m["base_accuracy"] > 0.7


@pytest.mark.system
def test_specs_validate_plugin_tables_against_the_plugin_params(sites, tmp_path):
    code = textwrap.dedent(f"""\
        import json
        from parley.protocols.errors import ConfigError
        from parley.scenarios.spec import Scenario
        out = {{}}
        base = Scenario.from_toml({str(SCENARIOS / "toy-round-flip.toml")!r})
        for assignments in ("protocol.stepp=0.1", "protocol.step=2", "dataset.name=toy-blobs",
                            "dataset.name=toy-blobs dataset.rows=3"):
            try:
                out[assignments] = base.with_overrides(assignments.split()).to_dict()["dataset"]
            except ConfigError as exc:
                out[assignments] = str(exc)
        print(json.dumps(out))
        """)
    done = _python(code, sites["toy"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    assert out["protocol.stepp=0.1"] == "unknown key 'protocol.stepp'; allowed keys: step"
    assert out["protocol.step=2"].startswith("protocol.step: Input should be less than or equal to 1")
    assert out["dataset.name=toy-blobs"] == {"name": "toy-blobs", "audit_size": 200, "train_size": None,
                                             "rows": 2000, "minority": 0.3}
    too_few = "dataset.rows: Input should be greater than or equal to 10 (got 3)"
    assert out["dataset.name=toy-blobs dataset.rows=3"] == too_few


@pytest.mark.system
def test_broken_and_clashing_plugins_give_typed_errors_naming_distribution_and_entry_point(sites, tmp_path):
    done = _python(PROBE, sites["toy"], sites["bad"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    out = json.loads(done.stdout)
    for key, results in out.items():
        assert results[0] == results[1], f"{key}: a second look-up differs from the first"
    load_failed = PLUGIN_LOAD_FAILED.format(
        what="protocol", entry_point="broken", group="parley.protocols", value="parley_bad_plugins.missing:Nothing",
        dist=BAD, error="ModuleNotFoundError: No module named 'parley_bad_plugins.missing'")
    assert out["protocols"][0] == ["PluginError", load_failed]
    assert out["attacks"][0] == ["PluginError", PLUGIN_NAME_TAKEN.format(
        what="attack", entry_point="double-query", group="parley.attacks", value="parley_bad_plugins:Impostor",
        dist=BAD, name="double-query", origin="parley")]
    # Two plug-ins under one name: whichever loads second is refused, naming the first's distribution.
    kind, message = out["learners"][0]
    assert kind == "PluginError" and "takes the name 'toy-logit', already registered by" in message
    assert BAD in message and TOY in message
    not_a_class = PLUGIN_NOT_A_CLASS.format(
        what="dataset", entry_point="not-a-class", group="parley.datasets", value="parley_bad_plugins:NOT_A_CLASS",
        dist=BAD, got="an object of type str", base="parley.scenarios.datasets._registry.Dataset")
    misnamed = PLUGIN_NAME_MISMATCH.format(
        what="dataset", entry_point="wrong-name", group="parley.datasets", value="parley_bad_plugins:Misnamed",
        dist=BAD, name="misnamed")
    assert out["datasets"][0][0] == "PluginError"
    assert set(out["datasets"][0][1].split("; ")) == {not_a_class, misnamed}


@pytest.mark.system
def test_the_command_line_reports_a_broken_plugin_in_one_line(sites, tmp_path):
    done = _parley(["list"], sites["bad"], cwd=tmp_path)
    message = PLUGIN_LOAD_FAILED.format(
        what="protocol", entry_point="broken", group="parley.protocols", value="parley_bad_plugins.missing:Nothing",
        dist=BAD, error="ModuleNotFoundError: No module named 'parley_bad_plugins.missing'")
    assert done.returncode == 2
    assert done.stderr.strip().splitlines() == [f"parley: error: {message}"]


def test_docs_show_the_fixture_package_verbatim():
    """docs/plugins.md's complete example is the package this test installs, file for file."""
    text = DOCS.read_text(encoding="utf-8")
    for path in [FIXTURE / "pyproject.toml", *sorted((FIXTURE / "parley_toy_plugins").glob("*.py")),
                 SCENARIOS / "toy-round-flip.toml"]:
        assert path.read_text(encoding="utf-8").strip() in text, f"docs/plugins.md does not show {path.name} as is"
