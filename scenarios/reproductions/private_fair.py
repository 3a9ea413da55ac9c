"""The private-fair-learning paper's tables (Figure 1, the debiased estimates of Sec. 4)."""

from __future__ import annotations

from parley.scenarios.reproductions.table import Table

TABLES: tuple[Table, ...] = ()
