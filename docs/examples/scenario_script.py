"""A scenario script: run a catalog scenario, check its transcript, then run one built in code.

Usage: python docs/examples/scenario_script.py [OUTDIR]

OUTDIR receives one run folder per scenario (default: a fresh temporary folder).
"""

import sys
import tempfile
from pathlib import Path

import parley

out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(tempfile.mkdtemp(prefix="parley-example-"))

# 1. The default catalog scenario: a curious data center runs double queries on Adult
#    (raw answers). Keyword arguments change fields by dotted path, "__" for the dot, and
#    the spec is validated again; here the attack reveals 10 random individuals instead of 20.
result = parley.run("adult-raw-double-query", out=out / "adult-raw-double-query", attack__targets=10)

metrics = result.metrics
print(f"leakage: {metrics['leakage']}")  # balanced accuracy of the reconstructed race, in %
print(f"queries: {metrics['queries']}")  # models the compliance party answered for the attack

# Every signature, payload digest and chain link of the wire log, checked again from the file.
count = parley.verify(result.transcript_path)
print(f"transcript verified: {count} messages")

# 2. A scenario built in code: synthetic data with exactly 30 disadvantaged individuals among
#    200, answers rounded to 6 decimals, and one contrived single-query model per target.
synthetic = parley.Scenario.from_dict({
    "name": "synthetic-single-query",
    "dataset": {"name": "synthetic", "audit_size": 200, "minority": 30},
    "protocol": {"name": "raw", "decimals": 6},
    "attack": {"name": "single-query", "targets": 5},
})
result = parley.run(synthetic, out=out / synthetic.name)

# One row per run: scenario fields and metrics side by side, ready to concatenate.
row = result.to_pandas()
print(row[["scenario", "dataset", "protocol", "attack", "leakage", "queries", "attack_N0"]].to_string(index=False))
print(f"run folders: {out}")
