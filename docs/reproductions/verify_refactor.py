"""Run small scenarios of every built-in protocol with one secrets file; print a digest of each result's numbers.

Used to check that a refactor of the protocol modules changed no number before the reproduction digests were
re-recorded: run it at two commits from outside both checkouts and diff the outputs::

    PYTHONPATH=CHECKOUT python docs/reproductions/verify_refactor.py SECRETS > OUT.json
"""

import hashlib
import json
import sys
import tempfile
from pathlib import Path

import parley
from parley.parties.run_secrets import RunSecrets
from parley.scenarios.catalog import scenario_path

SYN = {"name": "synthetic", "audit_size": 80, "minority": 20}
LIKELIHOOD = {"name": "likelihood"}
CASES = {
    "raw": {"protocol": {"name": "raw"}, "attack": {"name": "single-query", "targets": 3}},
    "laplace": {"protocol": {"name": "laplace", "epsilon": 1.0}, "attack": LIKELIHOOD},
    "smooth-cauchy": {"protocol": {"name": "smooth-cauchy", "epsilon": 1.0}, "attack": LIKELIHOOD},
    "smooth-laplace": {"protocol": {"name": "smooth-laplace", "epsilon": 0.5, "delta": 1e-6}, "attack": LIKELIHOOD},
    "dp-counts": {"protocol": {"name": "dp-counts", "epsilon": 1.0}, "attack": LIKELIHOOD},
    "dp-counts-g": {"protocol": {"name": "dp-counts", "epsilon": 1.0, "noise": "gaussian", "delta": 1e-6},
                    "attack": LIKELIHOOD, "composition": "zcdp"},
    "mpc-dp": {"protocol": {"name": "mpc-dp", "epsilon": 1.0}, "attack": LIKELIHOOD},
    "he": {"protocol": {"name": "he"}, "attack": {"name": "differencing"}, "threat_model": "passive-observer"},
}
SMALL = {"dataset.audit_size": 300, "dataset.train_size": 600}
CATALOG = {"compas-cov-threshold": {"learner.hypotheses": 40}, "adult-rr-audit": SMALL, "adult-correction": SMALL}


def _digest(scenario: parley.Scenario, secrets: RunSecrets) -> str:
    metrics = parley.run(scenario, out=tempfile.mkdtemp(), secrets=secrets).metrics
    numbers = {k: v for k, v in metrics.items() if "wall" not in k and not k.endswith("_s")}  # timings differ
    return hashlib.sha256(json.dumps(numbers, sort_keys=True, default=str).encode()).hexdigest()[:16]


def main(secrets_path: str) -> None:
    secrets = RunSecrets.resolve(Path(secrets_path))
    out = {name: _digest(parley.Scenario.from_dict({"name": f"v-{name}", "backend": "local", "dataset": SYN, **t}),
                         secrets) for name, t in CASES.items()}
    for name, values in CATALOG.items():
        scenario = parley.Scenario.from_toml(scenario_path(name)).with_values({"backend": "local", **values})
        out[name] = _digest(scenario, secrets)
    print(json.dumps(out, indent=1))


if __name__ == "__main__":
    main(sys.argv[1])
