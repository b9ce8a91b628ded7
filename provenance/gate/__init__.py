"""The comparison gate: diff two manifests, refuse unless every identity difference is declared.

Public surface:
- `compare_runs(store, a, b, vary, config=None, extra_ignore=()) -> Comparison`: the one
  comparison (resolve, libraries both runs loaded, gate, comparison record);
- `gate(a, b, vary, config, libs) -> GateResult`: the verdict over two manifests;
- `GateConfig`, `load_config()`: presets and ignores, extended by `[tool.prov]`;
- `PRESETS`, `ALWAYS_IGNORED`, `covers(pattern, key)`; `common_libraries(a, b)`;
  `suggest_presets(presets, keys, context)`: the presets that would cover the refused keys;
- `compare_outputs(a, b)`: each declared output identical, differing or missing (outputs.py);
  `counts(found)`: how many are in each state;
- `gate_pair(store, ref_id, cand_id, vary) -> GatePassed`: two worker runs gated as
  `prov compare` gates them, `GateRefused` (exit 3) unless every difference is declared.
What a declaration covers beyond its patterns (a package's modules and libraries, what a
JIT compiled) follows from it (follows.py).
The diff itself is the model's (`provenance.model.diff`), which `prov exec` shares.
"""

from provenance.gate.check import GateResult, gate
from provenance.gate.compare import Comparison, compare_runs
from provenance.gate.config import GateConfig, find_pyproject, load_config
from provenance.gate.libraries import common_libraries
from provenance.gate.outputs import OutputComparison, compare_outputs, counts
from provenance.gate.pair import GatePassed, GateRefused, gate_pair
from provenance.gate.patterns import covers
from provenance.gate.presets import ALWAYS_IGNORED, PRESETS
from provenance.gate.suggest import suggest_presets

__all__ = [
    "ALWAYS_IGNORED", "PRESETS", "Comparison", "GateConfig", "GatePassed", "GateRefused",
    "GateResult", "OutputComparison", "common_libraries", "compare_outputs", "compare_runs",
    "counts", "covers", "find_pyproject", "gate", "gate_pair", "load_config", "suggest_presets",
]
