"""Suite-wide set-up: ^C reaches the programs the tests start; the longest files start first.

A shell starts a background job (`make test &`, a CI step run without job control) with
SIGINT ignored, and every child inherits that: a test that types ^C at `prov exec`, or sends
SIGINT to `prov sweep`, would then wait on a program that cannot hear it. A handler (unlike
SIG_IGN) is reset to the default in a program the tests exec, so one is installed here.
"""

from __future__ import annotations

import signal
from pathlib import Path

# The files of 40 s or more in two workers (bench/results/2026-12-06-cpu-2core/
# test-times-warm.md): each runs whole in one worker (--dist loadfile), and started first they
# leave the short files to even out the two workers' ends. pytest-xdist's own order (most tests
# first) put one-test files of 100-300 s last. Longest first; a stale entry only costs balance.
LONGEST_FIRST = (
    "provenance/exec/probe/test_probe_reads_vllm.py", "runners/test_vllm_runs.py",
    "provenance/selftest/test_user_programs.py", "provenance/exec/probe/test_probe_vllm.py",
    "provenance/exec/probe/test_probe_server.py", "provenance/exec/serving/test_serving_vllm.py",
    "provenance/selftest/test_identity_matrix.py", "runners/sweep/test_sweep_local.py",
    "runners/sweep/test_sweep_ray.py", "runners/test_fused_gpu_script.py",
    "runners/test_cli_policy.py", "runners/test_hidden_states.py", "hostile/cli/test_bad_input.py",
    "provenance/gate/test_jit_libraries.py", "provenance/exec/probe/test_probe_reads_weights.py",
    "runners/test_transformers_runs.py", "provenance/exec/probe/test_probe_exec.py",
    "provenance/exec/probe/test_probe_transformers.py", "runners/test_parity.py",
    "provenance/publish/test_served.py", "runners/test_replay.py", "runners/test_demo.py",
    "provenance/publish/test_model_user_script.py", "runners/test_cli_run.py",
    "provenance/report/test_report.py", "runners/sweep/test_sweep_invariance.py",
    "runners/test_invariance_served.py", "provenance/exec/test_server_run.py",
    "containers/test_pin_verify.py",
)
TESTS = Path(__file__).parent


def pytest_configure(config) -> None:
    if signal.getsignal(signal.SIGINT) == signal.SIG_IGN:
        signal.signal(signal.SIGINT, signal.default_int_handler)


def pytest_collection_modifyitems(config, items) -> None:
    """The files of LONGEST_FIRST in its order, then the rest as collected (a stable sort:
    each file's tests stay together and in order)."""
    rank = {TESTS / name: i for i, name in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.path, len(rank)))
