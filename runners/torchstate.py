"""torch's process-global numerics state, read inside the workload process.

A script can change these after start-up (`torch.set_num_threads`, `torch.backends.*`,
`torch.set_flush_denormal`); no snapshot taken outside the process can see that, so a
worker reports them as run facts (`runtime.torch.*`). Read only when torch is already
imported: asking must never import it.

The reader is the in-process probe's (one place for what "torch's numerics state" is). It
is loaded from its file rather than imported: workers run in engine environments that may
import nothing of `provenance` (test_worker_self_contained), and that file is standard
library only.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

_READER = (Path(__file__).resolve().parents[1] / "provenance" / "exec" / "probe" / "inproc"
           / "_prov_probe" / "torch_flags.py")


def _load():
    spec = importlib.util.spec_from_file_location("_prov_torch_flags", _READER)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_torch_flags = _load()


def torch_state() -> dict[str, Any]:
    """Flat `name -> value` facts of the running torch; {} when torch is not imported."""
    return _torch_flags.torch_state()
