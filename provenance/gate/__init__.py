"""The comparison gate: diff two manifests, refuse unless every identity difference is declared.

Public surface:
- `compare_runs(store, a, b, vary, config=None, extra_ignore=()) -> Comparison`: the one
  comparison (resolve, libraries both runs loaded, gate, comparison record);
- `gate(a, b, vary, config, libs) -> GateResult`: the verdict over two manifests;
- `GateConfig`, `load_config()`: presets and ignores, extended by `[tool.prov]`;
- `PRESETS`, `ALWAYS_IGNORED`, `covers(pattern, key)`; `common_libraries(a, b)`;
  `suggest_presets(presets, keys)`: which preset covers each refused key.
The diff itself is the model's (`provenance.model.diff`), which `prov exec` shares.
"""

from provenance.gate.check import GateResult, gate
from provenance.gate.compare import Comparison, compare_runs
from provenance.gate.config import GateConfig, find_pyproject, load_config
from provenance.gate.libraries import common_libraries
from provenance.gate.patterns import covers
from provenance.gate.presets import ALWAYS_IGNORED, PRESETS, suggest_presets

__all__ = [
    "ALWAYS_IGNORED", "PRESETS", "Comparison", "GateConfig", "GateResult", "common_libraries",
    "compare_runs", "covers", "find_pyproject", "gate", "load_config", "suggest_presets",
]
