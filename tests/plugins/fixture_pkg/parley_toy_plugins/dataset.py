"""``toy-blobs``: two groups of points, a label that depends on them, a fixed generator seed."""

from __future__ import annotations

from typing import Literal

import numpy as np
import pandas as pd
from pydantic import Field

from parley.scenarios.datasets import Dataset, DatasetParamsBase, Table


class ToyBlobsParams(DatasetParamsBase):
    name: Literal["toy-blobs"] = Field(default="toy-blobs", description="the data set (picks this parameter model)")
    rows: int = Field(default=2000, ge=10, description="rows in the table")
    minority: float = Field(default=0.3, gt=0.0, lt=1.0, description="share of a = 0")
    audit_size: int = Field(default=200, ge=2, description="rows in the audit set (held by the compliance party)")


class ToyBlobs(Dataset[ToyBlobsParams]):
    """The same table for every run (seed 7); parley draws the audit and training rows from it."""

    name = "toy-blobs"
    Params = ToyBlobsParams
    summary = "two Gaussian blobs and a colour column; y depends on x1"

    def load(self, rng: np.random.Generator | None) -> Table:
        p, gen = self.params, np.random.default_rng(7)
        a = (gen.random(p.rows) >= p.minority).astype(np.int8)
        x1 = gen.normal(a - 0.5, 1.0)
        features = pd.DataFrame({"x1": x1, "x2": gen.normal(0.0, 1.0, p.rows),
                                 "colour": gen.choice(["red", "blue"], p.rows)})
        y = (x1 + gen.normal(0.0, 0.5, p.rows) > 0).astype(np.int8)
        return Table(name=self.name, features=features, y=y, a=a, protected="blob",
                     groups=("left", "right"), label="x1 above 0")
