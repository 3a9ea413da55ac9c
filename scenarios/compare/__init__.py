"""``parley compare``: the plan, the run, the whole-scenario audit and the report."""

from parley.scenarios.compare.run import compare

__all__ = ["compare"]
