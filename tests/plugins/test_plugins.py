"""Plug-ins from outside parley: a package installed with pip adds protocols, attacks, a learner, a data set and an
exchange (a kind of protocol conversation of its own).

The package under ``fixture_pkg/`` (parley-toy-plugins, its own pyproject.toml declaring the
entry points) is built and installed with pip into a folder outside the parley tree; every check
runs in a subprocess with that folder on PYTHONPATH, as a user's environment would have it, so
the registries of this test process never see it. The subprocesses import the parley this process
imports (its folder follows the plug-ins' on PYTHONPATH), not another one the environment may hold.
A second distribution written here as pip lays one out (module and .dist-info; no build, to keep
the test short), parley-bad-plugins, carries a broken entry point and name clashes: each must give
a PluginError naming its distribution and entry point, on the command line one line and no traceback.

The exchange, ``toy-commit`` (a two-round commit-then-reveal check with a codec on the data center
and a passive attack, ``toy-peek``), is listed, narrated by ``--explain``, run in process and over
Ray, and placed by ``parley compare`` on its frontier, with no edit to parley.
"""

from __future__ import annotations

import hashlib
import importlib.util
import json
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
import setuptools

import parley
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
#: The folder holding the parley package this process imports: the subprocesses import the same one.
PARLEY_ROOT = Path(parley.__file__).resolve().parents[1]
#: The plug-ins of parley-toy-plugins, by the section of ``parley list`` that shows them.
TOY_PLUGINS = {"exchanges:": ("toy-commit",), "protocols:": ("toy-commit", "toy-round"),
               "attacks:": ("toy-flip", "toy-peek"), "learners:": ("toy-logit",), "datasets:": ("toy-blobs",)}
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
    env["PYTHONPATH"] = os.pathsep.join([*map(str, sites), str(PARLEY_ROOT), *filter(None, [env.get("PYTHONPATH")])])
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
    for section, names in TOY_PLUGINS.items():
        start = lines.index(section)
        end = next((i for i in range(start + 1, len(lines)) if not lines[i].startswith("  ")), len(lines))
        # a row is "  name  (origin) description", wrapped onto deeper-indented lines (a long name: all of them)
        rows: dict[str, str] = {}
        last = ""
        for line in lines[start + 1:end]:
            if line.startswith("   "):
                rows[last] += " " + line.strip()
            else:
                last = line.split()[0]
                rows[last] = line
        for name in names:
            assert f"({TOY})" in rows[name], rows[name]
        builtins = [row for key, row in rows.items() if key not in names]
        assert builtins and all("(parley)" in row for row in builtins), section
    # The exchange's protocol names it as its flow; its attack reads it, as a passive observer.
    text = " ".join(done.stdout.split())  # the descriptions as one text, unwrapped
    assert "[toy-commit] Commit, challenge, reveal, result" in text
    assert "toy-peek (parley-toy-plugins 0.1.0) [passive-observer] reads the revealed predictions" in text


def test_without_the_package_no_plugin_is_registered():
    """This test process does not have the package on its path: its registries hold the built-ins only."""
    from parley.parties.attacks import ATTACKS
    from parley.parties.learners import LEARNERS
    from parley.protocols import PROTOCOLS
    from parley.scenarios.datasets import DATASETS
    from parley.scenarios.exchanges import EXCHANGES

    for registry, names in ((EXCHANGES, ("toy-commit",)), (PROTOCOLS, ("toy-round", "toy-commit")),
                            (ATTACKS, ("toy-flip", "toy-peek")), (LEARNERS, ("toy-logit",)),
                            (DATASETS, ("toy-blobs",))):
        assert not set(names) & set(registry) and {str(o) for o in registry.origins().values()} == {"parley"}


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


# -- an exchange from outside parley: toy-commit, commit then reveal --------------------------------------------

COMMIT_SCENARIO = SCENARIOS / "toy-commit-peek.toml"
#: What ``--explain`` prints of the exchange's four messages (the plug-in's own sentences), in wire order.
COMMIT_NARRATION = (
    "#1 data-center -> compliance: toy-commit [toy-commit]",
    "a commitment to the base model's predictions on 300 people: SHA-256 ",
    "#2 compliance -> data-center: toy-challenge [toy-commit]",
    "a challenge: SP will be measured on 150 people, drawn by the compliance party after the commitment",
    "learned: the data center is bound to its predictions; only now does it learn which 150 people will be checked",
    "#3 data-center -> compliance: toy-reveal [toy-commit]",
    "the reveal: 300 predictions bit-packed into 38 bytes, with the salt that opens the commitment",
    "#4 compliance -> data-center: toy-result [toy-commit]",
    "the result: SP = ",
    "learned: the passive observer reads the 300 revealed predictions and SP = ",
)
#: The exchange's compare rows.
COMMIT_ROWS = ("toy-commit", "toy-commit share=0.9")


def _run_commit(sites: dict[str, Path], folder: Path, *extra: str) -> tuple[str, dict]:
    """``parley run toy-commit-peek.toml --out FOLDER EXTRA...``: what it printed and its result.json."""
    done = _parley(["run", str(COMMIT_SCENARIO), "--out", str(folder), *extra], sites["toy"], cwd=folder.parent)
    assert done.returncode == 0, done.stderr
    return done.stdout, json.loads((folder / "result.json").read_text())


@pytest.mark.system
def test_plugin_exchange_runs_in_process_and_is_narrated_by_explain(sites, tmp_path):
    printed, record = _run_commit(sites, tmp_path / "run", "--explain")
    at = 0
    for line in COMMIT_NARRATION:
        found = printed.find(line, at)
        assert found >= 0, f"--explain does not say {line!r} after position {at}:\n{printed}"
        at = found + len(line)
    m = record["metrics"]
    assert (record["protocol"], record["attack"], record["dataset"]) == ("toy-commit", "toy-peek", "toy-blobs")
    assert m["messages"] == 4 and m["refusals"] == 0 and m["checked"] == 150 and m["attacked"] == 300
    # The released SP: the exact SP of the committed predictions on 150 of the 300 people, rounded to 2 decimals.
    assert m["sp_released"] == round(m["sp_released"], 2)
    assert m["sp_error"] == pytest.approx(abs(m["sp_released"] - m["sp_exact"]), abs=1e-12)
    # toy-blobs' labels follow x1, whose mean is set by A: the predictions alone tell A far better than a coin.
    assert 55.0 < m["leakage"] < 100.0


@pytest.mark.system
def test_the_data_centers_codec_packs_the_revealed_predictions(sites, tmp_path):
    _, record = _run_commit(sites, tmp_path / "run")
    envelopes = read_transcript(tmp_path / "run" / "transcript.jsonl", verify=True)
    assert [(e.sender, e.kind) for e in envelopes] == [("data-center", "toy-commit"), ("compliance", "toy-challenge"),
                                                       ("data-center", "toy-reveal"), ("compliance", "toy-result")]
    commit, challenge, reveal, result = (e.payload for e in envelopes)
    # On the wire the reveal holds the packed bytes (300 people in 38 bytes), never the predictions the flow gave.
    assert "predictions" not in reveal and reveal["n"] == 300
    packed = reveal["packed"]
    assert isinstance(packed, np.ndarray) and packed.dtype == np.uint8 and packed.shape == (38,)
    assert not any(isinstance(v, np.ndarray) and v.dtype.kind == "f" for v in reveal.values())
    assert set(np.unpackbits(packed, count=300).tolist()) == {0, 1}
    # The round-1 commitment opens on exactly these bytes with the revealed salt; round 2 names round 1.
    opened = hashlib.sha256(f"{reveal['salt']}|300|".encode() + packed.tobytes()).hexdigest()
    assert opened == commit["commitment"]
    assert (reveal["commit_id"], reveal["nonce"]) == (challenge["query_id"], challenge["nonce"])
    assert challenge["people"].shape == (150,) and len(set(challenge["people"].tolist())) == 150
    assert result["opened"] is True and result["value"] == record["metrics"]["sp_released"]


@pytest.mark.system
@pytest.mark.ray
def test_plugin_exchange_runs_alike_over_ray_and_in_process(sites, tmp_path):
    """Same seed, same party secrets (one secrets file): the run over Ray actors is the run in process."""
    secrets = tmp_path / "secrets.key"
    records = {}
    for backend in ("local", "ray"):
        folder = tmp_path / backend
        _, records[backend] = _run_commit(sites, folder, "--seed", "5", "--secrets", str(secrets),
                                          "--set", f"backend={backend}")
        verified = _parley(["verify", str(folder)], sites["toy"], cwd=tmp_path)
        assert verified.returncode == 0, verified.stdout + verified.stderr
        assert f"verified 4 messages in {folder / 'transcript.jsonl'}" in verified.stdout
    assert [records[b]["spec"]["backend"] for b in ("local", "ray")] == ["local", "ray"]
    local, ray = (dict(records[b]["metrics"]) for b in ("local", "ray"))
    del local["wall_s"], ray["wall_s"]
    assert ray == local


@pytest.mark.system
@pytest.mark.ray
def test_compare_places_the_plugin_exchange_on_its_frontier(sites, tmp_path):
    """parley compare's grid narrowed to the exchange's rows and its attack (the command line cannot narrow it)."""
    out = tmp_path / "compare"
    code = textwrap.dedent(f"""\
        from parley.scenarios.compare import compare
        compare("adult", {str(out)!r}, quick=True, rows={COMMIT_ROWS!r}, attacks=("toy-peek",), backend="local",
                audit=False, progress=False, workers=2)
        """)
    done = _python(code, sites["toy"], cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    matrix = pd.read_csv(out / "matrix.csv", index_col=0)
    assert list(matrix.index) == list(COMMIT_ROWS) and list(matrix.columns) == ["toy-peek [passive-observer]"]
    front = pd.read_csv(out / "frontier.csv").set_index("protocol")
    assert list(front.index) == list(COMMIT_ROWS)
    toy = front.loc["toy-commit"]
    assert (toy["flow"], toy["family"]) == ("toy-commit", "toy-commit")
    assert toy["worst_attack"] == "toy-peek [passive-observer]"
    # The exchange's utility (lower is better) and the attack's leakage, both measured.
    assert toy["utility_label"] == "|released SP - exact SP of the committed predictions on the audit set|"
    assert not toy["higher_is_better"] and 0.0 <= toy["utility"] < 1.0 and 0.0 <= toy["unfairness"] <= 1.0
    assert 0.0 <= toy["worst_leakage"] <= 100.0 and toy["worst_passive-observer"] == toy["worst_leakage"]
    assert front["on_frontier"].any()  # of the exchange's two rows, at least one is undominated
    assert "toy-commit" in (out / "report.md").read_text(encoding="utf-8")


def test_docs_show_the_fixture_package_verbatim():
    """docs/plugins.md's complete example is the package this test installs, file for file."""
    text = DOCS.read_text(encoding="utf-8")
    for path in [FIXTURE / "pyproject.toml", *sorted((FIXTURE / "parley_toy_plugins").glob("*.py")),
                 SCENARIOS / "toy-round-flip.toml", SCENARIOS / "toy-commit-peek.toml"]:
        assert path.read_text(encoding="utf-8").strip() in text, f"docs/plugins.md does not show {path.name} as is"
