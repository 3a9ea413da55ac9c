"""Studies: grids of scenarios, planned in :mod:`.plan`, run by :mod:`.engine` (Ray), reported by :mod:`.report`.

Importing this package does not import Ray.
"""

from parley.scenarios.study.plan import Study

__all__ = ["Study"]
