"""Studies: grids of scenarios, repeated, with a resumable results table.

A study names a base scenario, fixed overrides (``set``), a grid (the cartesian
product of values for any scenario fields, by dotted path), a number of
repeats and a study seed, and the outputs to produce::

    name = "smoke"
    scenario = "adult-raw-double-query"
    repeats = 1
    [set]
    "dataset.train_size" = 5000
    [grid]
    "attack.name" = ["single-query", "double-query"]
    "protocol.decimals" = [2, 3, 6]
    [outputs]
    metrics = ["leakage", "queries"]
    [[outputs.plots]]
    file = "leakage.png"
    x = "protocol.decimals"
    y = "leakage"
    colour = "attack.name"

Every cell and repeat is validated up front (a typo fails before anything
runs). Repeat ``r`` uses the same seed in every cell, derived from the study
seed, so cells are compared on common random numbers. Execution lives in
:mod:`parley.scenarios.study.engine`; this module is pure planning and bookkeeping.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from pydantic import BaseModel, ConfigDict, Field, field_validator

from parley.protocols.errors import ConfigError
from parley.scenarios.catalog import resolve_scenario, resolve_study
from parley.scenarios.spec import SafeName, Scenario, _validate, load_toml, parse_assignment

__all__ = ["Cell", "PlotSpec", "Study", "TableSpec", "load_results", "repeat_seed", "save_results", "ROW_FIELDS"]

EMPTY_AXIS = "grid axis {axis!r} needs a non-empty list of values, got {value!r}"
LINKED_AXIS = "grid axis {axis!r} links {k} fields: each value must be a list of {k} values, got {value!r}"
CELL_INVALID = "grid cell {assignment} is not a valid scenario: {error}"
UNKNOWN_COLUMN = "outputs {where} names {column!r}, which is neither a grid axis ({axes}) nor a metric kept"

#: Columns every results row has, before the grid values and the metrics.
ROW_FIELDS = ("cell", "repeat", "seed", "status", "failure", "attempts", "node", "cell_wall_s")


class TableSpec(BaseModel):
    """A summary table: mean ± std of ``value`` with ``rows`` down and ``columns`` across."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    title: str = ""
    rows: str
    columns: str | None = None
    value: str
    where: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="only the rows whose fields equal these values (e.g. one decoder)")


class PlotSpec(BaseModel):
    """A figure: mean of ``y`` against ``x`` (std as error bars), one line per ``colour``, one panel per ``facet``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    file: str = Field(pattern=r"^[\w.-]+\.png$", description="PNG file name in the study folder")
    x: str
    y: str
    colour: str | None = None
    facet: str | None = None
    title: str = ""
    logx: bool = False
    where: dict[str, str | int | float | bool] = Field(
        default_factory=dict, description="only the rows whose fields equal these values")


class Outputs(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    metrics: tuple[str, ...] | None = Field(default=None, description="metrics to keep (all if omitted)")
    tables: tuple[TableSpec, ...] = ()
    plots: tuple[PlotSpec, ...] = ()


@dataclass(frozen=True)
class Cell:
    """One scenario of the grid at one repeat."""

    cell: str  # stable id of the grid assignment
    repeat: int
    seed: int
    assignment: dict[str, Any]
    scenario: dict[str, Any]  # validated, flat scenario form (travels to the worker)

    @property
    def key(self) -> tuple[str, int]:
        return (self.cell, self.repeat)


def repeat_seed(study_seed: int, repeat: int) -> int:
    """The scenario seed of repeat ``repeat``: the same in every cell (common random numbers)."""
    return int(np.random.SeedSequence([study_seed, repeat]).generate_state(1)[0])


def _flatten(table: Mapping[str, Any], prefix: str = "") -> dict[str, Any]:
    """``{"a": {"b": 1}}`` -> ``{"a.b": 1}``: TOML writes dotted keys as nested tables."""
    out: dict[str, Any] = {}
    for key, value in table.items():
        path = f"{prefix}{key}"
        if isinstance(value, Mapping):
            out.update(_flatten(value, f"{path}."))
        else:
            out[path] = value
    return out


def cell_id(scenario: Mapping[str, Any]) -> str:
    """Short stable id of a cell's whole scenario (seed aside): any change of base, fixed or grid values changes it."""
    text = json.dumps({k: v for k, v in scenario.items() if k != "seed"}, sort_keys=True, separators=(",", ":"),
                      default=str)
    return "c" + hashlib.sha256(text.encode()).hexdigest()[:10]


class Study(BaseModel):
    """A grid of scenarios, repeated; build it with :meth:`from_toml` or :meth:`from_dict`."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    name: SafeName
    description: str = ""
    scenario: str | dict[str, Any] = Field(description="base scenario: catalog name, TOML path, or a table")
    set: dict[str, Any] = Field(default_factory=dict, description="fixed overrides of the base, by dotted path")
    grid: dict[str, list[Any]] = Field(default_factory=dict)
    repeats: int = Field(default=1, ge=1)
    seed: int = Field(default=0, ge=0)
    max_attempts: int = Field(default=2, ge=1,
                              description="runs of a cell whose worker died before it is recorded as an error")
    outputs: Outputs = Field(default_factory=Outputs)
    folder: str | None = Field(default=None, exclude=True, description="where the study file lives (relative paths)")

    @field_validator("set", "grid", mode="before")
    @classmethod
    def _dotted(cls, value: Any) -> Any:
        return _flatten(value) if isinstance(value, Mapping) else value

    @field_validator("grid")
    @classmethod
    def _non_empty(cls, grid: dict[str, list[Any]]) -> dict[str, list[Any]]:
        for axis, values in grid.items():
            if not values:
                raise ConfigError(EMPTY_AXIS.format(axis=axis, value=values))
            fields = axis.split(",")
            if len(fields) > 1:
                for value in values:
                    if not isinstance(value, list) or len(value) != len(fields):
                        raise ConfigError(LINKED_AXIS.format(axis=axis, k=len(fields), value=value))
        return grid

    @classmethod
    def from_dict(cls, data: Mapping[str, Any], folder: str | Path | None = None) -> Study:
        """Validate a study given as nested dicts (the TOML structure)."""
        study = _validate(cls, {**data, "folder": str(folder) if folder is not None else None}, "")
        study.cells()  # every cell must be a valid scenario before anything runs
        study._check_outputs()
        return study

    @classmethod
    def from_toml(cls, path: str | Path) -> Study:
        path = Path(path)
        return cls.from_dict(load_toml(path), folder=path.parent)

    @classmethod
    def load(cls, name_or_path: str) -> Study:
        """A catalog study by name, or a study file."""
        return cls.from_toml(resolve_study(name_or_path))

    def with_overrides(self, assignments: Sequence[str]) -> Study:
        """The study with ``key=value`` overrides applied.

        Study fields (``repeats=3``, ``grid.protocol.decimals=[2,4]``, ``outputs.metrics=[...]``) by
        their name, anything else as a fixed override of the base scenario.
        """
        data = self.model_dump(exclude={"folder"})
        for text in assignments:
            key, value = parse_assignment(text)
            head, _, rest = key.partition(".")
            if head in ("grid", "set") and rest:
                data[head] = {**data[head], rest: value}
            elif head == "outputs" and rest:
                data["outputs"] = {**data["outputs"], rest: value}
            elif head in Study.model_fields and head not in ("scenario", "folder") and not rest:
                data[head] = value
            else:
                data["set"] = {**data["set"], key: value}
        return Study.from_dict(data, folder=self.folder)

    def base(self) -> Scenario:
        """The base scenario (without the fixed overrides, which each cell applies with its grid values)."""
        if isinstance(self.scenario, str):
            path = Path(self.scenario)
            if self.folder and path.suffix == ".toml" and not path.is_absolute():
                path = Path(self.folder) / path
            base = Scenario.from_toml(resolve_scenario(str(path)))
        else:
            base = Scenario.from_dict(self.scenario)
        return base

    def fields(self) -> list[str]:
        """The scenario fields the grid varies (a linked axis ``"a,b"`` varies both)."""
        return [field for axis in self.grid for field in axis.split(",")]

    def assignments(self) -> list[dict[str, Any]]:
        """Every grid point as {dotted field: value}, in grid order.

        An axis named ``"a,b"`` links fields: its values are lists ``[a_value, b_value]``
        that vary together instead of crossing (e.g. audit sizes with their own query counts).
        """
        points = []
        for values in itertools.product(*self.grid.values()):
            point: dict[str, Any] = {}
            for axis, value in zip(self.grid, values, strict=True):
                fields = axis.split(",")
                point.update(zip(fields, value, strict=True) if len(fields) > 1 else [(axis, value)])
            points.append(point)
        return points

    def cells(self) -> list[Cell]:
        """Every (grid point, repeat), validated."""
        base = self.base()
        out = []
        for assignment in self.assignments():
            try:  # fixed and grid values together, so a grid change of a plug-in's name keeps the fixed keys
                scenario = base.with_values({**self.set, **assignment})
            except ConfigError as exc:
                raise ConfigError(CELL_INVALID.format(assignment=assignment, error=exc)) from None
            cid = cell_id(scenario.to_dict())
            for repeat in range(self.repeats):
                seed = repeat_seed(self.seed, repeat)
                out.append(Cell(cid, repeat, seed, assignment, {**scenario.to_dict(), "seed": seed}))
        return out

    def cell_ids(self) -> list[str]:
        """The id of each grid point, in grid order."""
        seen: dict[str, None] = {}
        for cell in self.cells():
            seen.setdefault(cell.cell)
        return list(seen)

    def _check_outputs(self) -> None:
        axes = set(self.fields())
        kept = self.outputs.metrics
        for where, column in self._output_columns():
            if column in axes or kept is None or column in kept:
                continue
            raise ConfigError(UNKNOWN_COLUMN.format(where=where, column=column, axes=", ".join(axes) or "none"))

    def _output_columns(self) -> list[tuple[str, str]]:
        cols = []
        for t in self.outputs.tables:
            cols += [("table", c) for c in (t.rows, t.columns, t.value, *t.where) if c]
        for p in self.outputs.plots:
            cols += [(f"plot {p.file}", c) for c in (p.x, p.y, p.colour, p.facet, *p.where) if c]
        return cols


def load_results(path: Path) -> pd.DataFrame:
    """The results table of a study folder (empty if there is none yet)."""
    if not path.is_file():
        return pd.DataFrame(columns=list(ROW_FIELDS))
    return pd.read_csv(path, keep_default_na=False, na_values=[""])


def save_results(frame: pd.DataFrame, path: Path) -> None:
    """Write the table atomically (a reader never sees half a file)."""
    tmp = path.with_suffix(".csv.tmp")
    frame.to_csv(tmp, index=False)
    tmp.replace(path)
