"""The small public surface the CLI uses (everything else in runners/ is internal).

The CLI imports `runners.api` and nothing else of runners/ (a test enforces the rooms'
import rules); anything a command needs from runners/ is named here.
"""

from provenance.model.disclosure import ITEMS as DISCLOSURE_ITEMS
from provenance.model.disclosure import DisclosureCard, DisclosureError, NotApplicable
from runners.demo.build import ensure as ensure_demo_model
from runners.diverge import DivergeOutcome, analyse, run_diverge
from runners.engines import EngineConfig, EngineError
from runners.invariance import InvarianceOutcome, InvarianceSpec, run_invariance
from runners.launch import Launched, LaunchError, standalone, supervised, ungated
from runners.prepare import Prepared, prepare
from runners.repeat import RepeatOutcome, run_repeat
from runners.replay import ReplayConfig, ReplayOutcome, run_replay
from runners.results import ResultError, read_result, write_result
from runners.sweep import LocalExecutor, SpecError, load_spec, ray_executor, run_sweep
from runners.workstream import EXAMPLES, WorkstreamError, load_workstream
from runners.workstream.demo_model import ensure as ensure_replay_model
from runners.workstream.template import TemplateError

__all__ = [
    "DISCLOSURE_ITEMS", "DisclosureCard", "DisclosureError", "DivergeOutcome", "EngineConfig",
    "EngineError", "LaunchError", "Launched", "Prepared", "RepeatOutcome", "ResultError",
    "analyse", "prepare", "read_result", "run_diverge", "run_repeat", "standalone",
    "supervised", "ungated", "write_result", "NotApplicable",
    # invariance under batching (docs: issue 28)
    "InvarianceOutcome", "InvarianceSpec", "run_invariance",
    # demo models: `prov demo`, `prov selftest`, `prov run replay` without --model
    "ensure_demo_model", "ensure_replay_model",
    # replay (docs/guides/replay.md)
    "EXAMPLES", "ReplayConfig", "ReplayOutcome", "TemplateError", "WorkstreamError",
    "load_workstream", "run_replay",
    # sweeps
    "LocalExecutor", "SpecError", "load_spec", "ray_executor", "run_sweep",
]
