"""Every runner takes its gate by name: a comparison without the gate is asked for
(`ungated`, what `--standalone` passes), never what a forgotten argument gives."""

from __future__ import annotations

import inspect

import pytest

from runners.api import run_diverge, run_repeat, run_replay, ungated


@pytest.mark.parametrize("runner, names", [
    (run_repeat, ["check"]),
    (run_diverge, ["check", "repeat_check"]),
    (run_replay, ["check"]),
])
def test_a_runner_has_no_default_gate(runner, names):
    params = inspect.signature(runner).parameters
    for name in names:
        assert params[name].default is inspect.Parameter.empty, (runner.__name__, name)
        assert params[name].kind is inspect.Parameter.KEYWORD_ONLY, (runner.__name__, name)


def test_a_runner_called_without_its_gate_is_refused_before_anything_runs(tmp_path):
    with pytest.raises(TypeError, match="check"):
        run_repeat(None, None, 2, tmp_path / "w", tmp_path / "r")  # type: ignore[call-arg]
    assert not (tmp_path / "w").exists()


def test_ungated_says_so_in_the_comparison():
    assert ungated(object(), object()) == {"gate": "not run (standalone)"}
