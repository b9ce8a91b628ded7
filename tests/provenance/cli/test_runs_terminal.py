# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""`prov runs` on a narrow terminal: the other columns fold, a run id never does."""

from __future__ import annotations

import re

from tests.exec_support import PROV, penv, prov, prov_cache, runs_json  # noqa: F401
from tests.terminal import on_terminal


def test_run_ids_are_never_wrapped(penv, tmp_path):
    for _ in range(2):
        assert prov("exec", "--", "python3", "-c", "pass", env=penv, cwd=tmp_path).returncode == 0
    ids = [r["run_id"] for r in runs_json(penv)]
    for columns in (80, 50):
        rc, shown = on_terminal([PROV, "runs"], {**penv, "NO_COLOR": "1"}, tmp_path, columns)
        assert rc == 0, shown
        lines = [line for line in shown.splitlines() if line[:1] in "┏┃┡│└"]  # the table
        assert "┃ run" in shown and max(len(line) for line in lines) <= columns, shown
        for run_id in ids:  # the id's 12-digit prefix, whole, in the run column
            assert [line for line in lines if re.match(rf"│ {run_id[:12]} +│", line)], shown
