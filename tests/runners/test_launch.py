"""A worker that the user's ^C reached interrupts its caller, whatever status it died with."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap

# The caller: a supervised launch of a worker that turns SIGINT into exit 1 (as Python does
# for a ^C that lands during start-up), then check_launched on what came back.
CALLER = textwrap.dedent(
    """
    import sys
    from runners.launch import LaunchError, check_launched, supervised

    worker = ("import signal, sys\\n"
              "signal.signal(signal.SIGINT, lambda *a: sys.exit(1))\\n"
              "print('ready', flush=True)\\n"
              "signal.pause()\\n")  # only the forwarded ^C ends it
    done = supervised(stream=True)([sys.executable, "-c", worker], name="w", env={})
    try:
        check_launched(done, "w")
    except KeyboardInterrupt:
        print("interrupted", done.returncode, flush=True)
        sys.exit(0)
    except LaunchError as exc:
        print("launch error:", exc, flush=True)
        sys.exit(0)
    print("ok", flush=True)
    """
)


def test_a_worker_that_exits_1_on_the_forwarded_ctrl_c_interrupts_the_caller(tmp_path):
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "PROV_NO_PYPROJECT": "1",
           "PROV_INPROCESS": "0"}
    proc = subprocess.Popen([sys.executable, "-c", CALLER], cwd=tmp_path, env=env,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stdout.readline().strip() == "ready"  # the worker's line, streamed
        proc.send_signal(signal.SIGINT)  # to prov only: it forwards it to the worker
        out, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert out.strip() == "interrupted 1", (out, err[-2000:])


def test_a_worker_that_fails_on_its_own_is_a_launch_error(tmp_path):
    env = {**os.environ, "PROV_STORE": str(tmp_path / "store"), "PROV_NO_PYPROJECT": "1",
           "PROV_INPROCESS": "0"}
    failing = CALLER.replace("signal.pause()", "sys.exit(1)")
    proc = subprocess.run([sys.executable, "-c", failing], cwd=tmp_path, env=env,
                          capture_output=True, text=True, timeout=60)
    assert proc.stdout.splitlines()[-1] == "launch error: w exited 1: (no output)", proc.stderr
