"""A scenario script: run a catalog scenario, check its transcript, then run one built in code.

Usage: python docs/examples/scenario_script.py [OUTDIR]

OUTDIR receives one run folder per scenario (default: a fresh temporary folder).
"""

import sys
import tempfile
from pathlib import Path

from parley.parties.transcript import verify_transcript
from parley.scenarios.catalog import scenario_path
from parley.scenarios.runner import run
from parley.scenarios.spec import Scenario

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="parley-example-"))

# 1. The default catalog scenario: a curious data center runs double queries on Adult
#    (raw answers). with_values changes fields by dotted path and re-validates the spec;
#    here the attack reveals 10 random individuals instead of 20.
scenario = Scenario.from_toml(scenario_path("adult-raw-double-query"))
scenario = scenario.with_values({"attack.targets": 10})
result = run(scenario, out=out / scenario.name)

metrics = result.metrics
print(f"leakage: {metrics['leakage']}")  # balanced accuracy of the reconstructed race, in %
print(f"queries: {metrics['queries']}")  # models the compliance party answered for the attack

# Every signature, payload digest and chain link of the wire log, checked again from the file.
count = verify_transcript(result.transcript_path)
print(f"transcript verified: {count} messages")

# 2. A scenario built in code: synthetic data with exactly 30 disadvantaged individuals among
#    200, answers rounded to 6 decimals, and one contrived single-query model per target.
synthetic = Scenario.from_dict({
    "name": "synthetic-single-query",
    "dataset": {"name": "synthetic", "audit_size": 200, "minority": 30},
    "protocol": {"name": "raw", "decimals": 6},
    "attack": {"name": "single-query", "targets": 5},
})
result = run(synthetic, out=out / synthetic.name)

# One row per run: scenario fields and metrics side by side, ready to concatenate.
row = result.to_pandas()
print(row[["scenario", "dataset", "protocol", "attack", "leakage", "queries", "attack_N0"]].to_string(index=False))
print(f"run folders: {out}")
