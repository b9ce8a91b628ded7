"""The small public surface the CLI uses (everything else in runners/ is internal)."""

from provenance.model.disclosure import ITEMS as DISCLOSURE_ITEMS
from provenance.model.disclosure import DisclosureCard, DisclosureError
from runners.diverge import DivergeOutcome, analyse, run_diverge
from runners.engines import EngineConfig, EngineError
from runners.launch import Launched, LaunchError, standalone
from runners.prepare import Prepared, prepare
from runners.repeat import RepeatOutcome, run_repeat
from runners.replay import ReplayConfig, ReplayOutcome, run_replay
from runners.results import ResultError, read_result, write_result
from runners.workstream import EXAMPLES, WorkstreamError, load_workstream
from runners.workstream.template import TemplateError

__all__ = [
    "DISCLOSURE_ITEMS", "DisclosureCard", "DisclosureError", "DivergeOutcome", "EngineConfig",
    "EngineError", "LaunchError", "Launched", "Prepared", "RepeatOutcome", "ResultError",
    "analyse", "prepare", "read_result", "run_diverge", "run_repeat", "standalone",
    "write_result",
    # replay (docs/guides/replay.md)
    "EXAMPLES", "ReplayConfig", "ReplayOutcome", "TemplateError", "WorkstreamError",
    "load_workstream", "run_replay",
]
