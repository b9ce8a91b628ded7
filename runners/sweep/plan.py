"""Cell planning: the cartesian product of the axes, each cell with a stable key.

A cell's key is sha256 over what decides its numbers: the engine configuration, the model,
tokenizer and text digests, the token count, block and repeats, and the spec's
[invariance] table when it has one (a cell run without the probes is not reused for a
sweep that asks for them, nor one probed with other settings). The key (plus the manifest
digest of the environment it ran in) is what resumption matches on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
from dataclasses import dataclass, field
from typing import Any

from runners.engines import EngineConfig
from runners.sweep.spec import SweepSpec, engine_config


@dataclass
class Cell:
    index: int
    values: dict[str, Any]
    config: EngineConfig
    key: str
    resources: dict[str, float] = field(default_factory=dict)
    is_reference: bool = False
    skip: str | None = None  # the spec's reason for not running this cell

    @property
    def label(self) -> str:
        return ",".join(f"{k}={v}" for k, v in self.values.items())

    @property
    def cell_id(self) -> str:
        """Short, filesystem-safe: names the cell's worker directories and runs."""
        return self.key.split(":")[1][:12]


def cell_key(config: EngineConfig, digests: dict[str, Any]) -> str:
    doc = {"engine": config.to_json(), **digests}
    data = json.dumps(doc, sort_keys=True, separators=(",", ":")).encode()
    return "sha256:" + hashlib.sha256(data).hexdigest()


def plan(spec: SweepSpec, digests: dict[str, Any]) -> list[Cell]:
    """Every cell, the reference first (so its scores are home before anyone needs them)."""
    names = list(spec.axes)
    decides: dict[str, Any] = {"repeats": spec.repeats}
    if spec.invariance is not None:  # absent: the keys of sweeps before [invariance] hold
        decides["invariance"] = spec.invariance
    cells = []
    for combo in itertools.product(*(spec.axes[n] for n in names)):
        values = dict(zip(names, combo, strict=True))
        cfg = engine_config(spec, values)
        cells.append(Cell(0, values, cfg, cell_key(cfg, {**digests, **decides}),
                          spec.resources_for(values), values == spec.reference,
                          spec.skip_reason(values)))
    cells.sort(key=lambda c: not c.is_reference)
    for i, c in enumerate(cells):
        c.index = i
    return cells
