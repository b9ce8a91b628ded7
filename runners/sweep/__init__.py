"""`prov sweep`: a matrix of engine configurations, locally or on Ray, under one gate.

Public surface (what the CLI imports): `load_spec`, `SpecError`, `run_sweep`,
`LocalExecutor`, `ray_executor`. `ray` is imported only by `ray_executor`.
"""

from runners.sweep.driver import SweepOutcome, run_sweep
from runners.sweep.local_exec import LocalExecutor
from runners.sweep.spec import SpecError, SweepSpec, load_spec, parse_spec


def ray_executor(address: str):
    from runners.sweep.ray_exec import RayExecutor

    return RayExecutor(address)


__all__ = ["LocalExecutor", "SpecError", "SweepOutcome", "SweepSpec", "load_spec", "parse_spec",
           "ray_executor", "run_sweep"]
