"""The generated reproduction tables, one module per paper: what each reads, and how it is drawn.

:mod:`parley.scenarios.reproduce` records, renders and checks them; a table is added here by a
:class:`~parley.scenarios.reproductions.table.Table` in its paper's module.
"""

from __future__ import annotations

from parley.scenarios.reproductions import correction, distributed, private_fair, query_leakage
from parley.scenarios.reproductions.table import Table

__all__ = ["TABLES", "Table"]

TABLES: dict[str, Table] = {t.name: t for t in (*query_leakage.TABLES, *correction.TABLES, *distributed.TABLES,
                                                   *private_fair.TABLES)}
