"""A run's state: the one enumeration of the words records, the index and `prov exec` use.

A `StrEnum`, so a state is written to a record, the index and `--json` output as the same
string it always was (`"complete"`), and compares equal to it.
"""

from __future__ import annotations

from enum import StrEnum


class RunState(StrEnum):
    # stored in a run's records (RunRecord.state)
    STARTED = "started"  # the command has not ended (or its supervisor died: see below)
    COMPLETE = "complete"  # exit status 0
    FAILED = "failed"  # a non-zero exit, a signal, or the command could not be started
    ABANDONED = "abandoned"  # finished by a later prov: its supervisor died (exec/recover.py)
    # the index's words for a started record (RunInfo.state)
    SERVING = "serving"  # started, with live engine facts (exec/live.py)
    RUNNING = "running"  # started, its supervisor alive
    # `prov exec` only (RunResult.state): the command ran, the store could not take the run
    UNRECORDED = "unrecorded"


STORED_STATES = (RunState.STARTED, RunState.COMPLETE, RunState.FAILED, RunState.ABANDONED)
FINAL_STATES = (RunState.COMPLETE, RunState.FAILED, RunState.ABANDONED)
UNFINISHED = (RunState.STARTED, RunState.SERVING)
# Order of a run's states: a later record of a run never has a lower rank.
STATE_RANK = {RunState.STARTED: 0, RunState.SERVING: 0, RunState.COMPLETE: 1,
              RunState.FAILED: 1, RunState.ABANDONED: 1}
