# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""`prov exec` as a user runs it: exit status, signals, stdin, logs, run dir, outputs, git."""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import time
from pathlib import Path

import pytest

from tests.exec_support import (  # noqa: F401 - fixtures
    PROV,
    PYTHON,
    last_run,
    penv,
    prov,
    prov_cache,
    runs_json,
    show_json,
)


def sha256sum(path: Path) -> str:
    """The digest as coreutils computes it (an oracle we did not write)."""
    out = subprocess.run(["sha256sum", str(path)], capture_output=True, text=True, check=True)
    return "sha256:" + out.stdout.split()[0]


def test_exit_zero_streams_and_records_both_logs(penv, tmp_path):
    p = prov("exec", "--name", "hello", "--", "sh", "-c", "echo out; echo err >&2", env=penv)
    assert p.returncode == 0, p.stderr
    assert p.stdout == b"out\n"
    assert b"err\n" in p.stderr
    rec = last_run(penv)
    assert rec["state"] == "complete" and rec["exit_status"] == 0 and rec["name"] == "hello"
    assert rec["command"] == ["sh", "-c", "echo out; echo err >&2"]
    (tmp_path / "out.txt").write_bytes(b"out\n")
    assert rec["logs"]["stdout"] == {"digest": sha256sum(tmp_path / "out.txt"), "size": 4}
    cat = prov("show", rec["run_id"][:6], "--cat", "stderr", env=penv)
    assert cat.stdout == b"err\n"
    # the manifest the run points at is in the store and loads
    assert rec["manifest_digest"].startswith("sha256:")
    d = prov("diff", rec["run_id"], rec["run_id"], env=penv)
    assert d.returncode == 0, d.stderr


def test_exit_one_is_passed_through(penv):
    p = prov("exec", "-q", "--", "sh", "-c", "exit 1", env=penv)
    assert p.returncode == 1
    rec = last_run(penv)
    assert rec["exit_status"] == 1 and rec["state"] == "failed" # issue #18: a non-zero exit is "failed" (was "complete")


def test_child_killed_by_sigkill_exits_137(penv):
    p = prov("exec", "--", "sh", "-c", "kill -9 $$", env=penv)
    assert p.returncode == 128 + signal.SIGKILL == 137
    rec = last_run(penv)
    assert rec["exit_status"] == 137 and rec["signal"] == "SIGKILL"


CHILD = """
import signal, sys
def handler(signum, frame):
    print("got", signal.Signals(signum).name, flush=True)
    sys.exit(100 + signum)
for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
    signal.signal(s, handler)
print("ready", flush=True)
signal.pause()  # until the forwarded signal: a handler above exits
sys.exit(5)
"""


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM, signal.SIGHUP])
def test_signal_sent_to_prov_is_delivered_to_the_child(penv, sig):
    proc = subprocess.Popen(
        [PROV, "exec", "--", PYTHON, "-c", CHILD],
        env=penv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        start_new_session=True,  # only prov gets the signal, as from `kill`
    )
    try:
        assert proc.stdout.readline() == b"ready\n"
        os.kill(proc.pid, sig)
        out, err = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert out == f"got {sig.name}\n".encode()
    assert proc.returncode == 100 + sig, err
    rec = last_run(penv)
    assert rec["exit_status"] == 100 + sig and rec["state"] == "failed" # issue #18: a non-zero exit is "failed" (was "complete")


def test_stdin_is_passed_through(penv):
    p = prov("exec", "-q", "--", "cat", env=penv, input=b"from stdin\n")
    assert p.returncode == 0 and p.stdout == b"from stdin\n"


def test_command_not_found_is_127_and_recorded_failed(penv):
    p = prov("exec", "--", "no-such-command-prov-test", env=penv)
    assert p.returncode == 127
    assert b"Traceback" not in p.stderr
    rec = last_run(penv)
    assert rec["state"] == "failed" and rec["exit_status"] == 127


def test_no_command_is_a_one_line_error(penv):
    p = prov("exec", env=penv)
    assert p.returncode == 2 and b"Traceback" not in p.stderr


def test_run_id_run_dir_and_runtime_facts(penv, tmp_path):
    script = (
        "import os, pathlib\n"
        "from runners.runfacts import add_run_facts\n"
        "d = pathlib.Path(os.environ['PROV_RUN_DIR'])\n"
        "(d / 'id.txt').write_text(os.environ['PROV_RUN_ID'])\n"
        "(d / 'sub').mkdir()\n"
        "(d / 'sub' / 'metrics.json').write_text('{\"acc\": 1}')\n"
        "add_run_facts({'runtime': {'vllm': {'attention_backend': {'resolved': 'FLASH_ATTN'}}}})\n"
        "print(d)\n"
    )
    p = prov("exec", "-q", "--", PYTHON, "-c", script, env=penv)
    assert p.returncode == 0, p.stderr
    rec = last_run(penv)
    run_dir = Path(p.stdout.decode().strip())
    assert run_dir.parent == Path(penv["PROV_STORE"]) / "runs"
    assert not run_dir.exists()  # ingested into the store, then removed
    assert set(rec["run_dir"]) == {"id.txt", "sub/metrics.json", "facts.json"}
    got = prov("show", rec["run_id"], "--cat", "id.txt", env=penv)
    assert got.stdout.decode() == rec["run_id"]
    assert rec["facts"]["runtime"]["vllm"] == {"attention_backend": {"resolved": "FLASH_ATTN"}}
    # the runtime section is part of the run's manifest, hence of its identity digest
    m = prov("diff", rec["run_id"], rec["manifest"], "--json", env=penv)
    assert m.returncode == 1, m.stderr
    diff = json.loads(m.stdout)
    removed = diff["identity"]["removed"]
    assert removed["runtime.vllm.attention_backend.resolved"] == "FLASH_ATTN"
    # the rest is the in-process probe's (tests/provenance/exec/probe)
    assert {k.split(".")[0] for k in removed} == {"runtime", "code"}
    assert diff["identity"]["added"] == diff["identity"]["changed"] == {}
    assert rec["manifest_digest"] == diff["digest"]["a"] != diff["digest"]["b"]


def test_outputs_are_hashed(penv, tmp_path):
    work = tmp_path / "work"
    work.mkdir()
    script = "mkdir -p outdir/a && printf one > out.bin && printf two > outdir/a/f && printf 3 > outdir/g"
    p = prov(
        "exec",
        "-q",
        "-o",
        "out.bin",
        "-o",
        "outdir",
        "-o",
        "never",
        "--",
        "sh",
        "-c",
        script,
        env=penv,
        cwd=work,
    )
    assert p.returncode == 0, p.stderr
    rec = last_run(penv)
    outs = rec["outputs"]
    assert outs["out.bin"] == {"type": "file", "digest": sha256sum(work / "out.bin"), "size": 3}
    assert outs["never"] == {"type": "missing"}
    assert any("never" in w for w in rec["warnings"])
    tree = outs["outdir"]
    assert tree["type"] == "dir" and tree["files"] == 2 and tree["size"] == 4
    store = Path(penv["PROV_STORE"])
    hexd = tree["digest"].split(":")[1]
    entries = json.loads((store / "objects/sha256" / hexd[:2] / hexd[2:]).read_bytes())["entries"]
    assert entries == {
        "a/f": {"digest": sha256sum(work / "outdir/a/f"), "size": 3},
        "g": {"digest": sha256sum(work / "outdir/g"), "size": 1},
    }


def test_secret_arguments_never_reach_the_store(penv):
    token = "hf_" + "aB3" * 10
    p = prov(
        "exec",
        "-q",
        "--",
        "sh",
        "-c",
        "true",
        "x",
        f"--token={token}",
        "--api-key",
        "plain",
        env=penv,
    )
    assert p.returncode == 0, p.stderr
    rec = last_run(penv)
    assert rec["command"] == [
        "sh",
        "-c",
        "true",
        "x",
        "--token=<redacted>",
        "--api-key",
        "<redacted>",
    ]
    for f in Path(penv["PROV_STORE"]).rglob("*"):
        if f.is_file():
            data = f.read_bytes()
            assert token.encode() not in data and b"plain" not in data, f


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(
        ["git", *args], cwd=cwd, capture_output=True, text=True, check=True
    ).stdout


def test_git_state_is_recorded_and_store_defaults_to_git_root(penv, tmp_path):
    repo = tmp_path / "repo"
    (repo / "sub").mkdir(parents=True)
    git(repo, "init", "-q", "-b", "main")
    git(repo, "config", "user.email", "t@example.invalid")
    git(repo, "config", "user.name", "t")
    (repo / "tracked.txt").write_text("one\n")
    git(repo, "add", "tracked.txt")
    git(repo, "commit", "-q", "-m", "first")
    (repo / "tracked.txt").write_text("two\n")
    (repo / "sub" / "new.txt").write_text("untracked\n")
    env = {k: v for k, v in penv.items() if k != "PROV_STORE"}
    p = prov("exec", "-q", "--", "true", env=env, cwd=repo / "sub")
    assert p.returncode == 0, p.stderr
    store = repo / ".prov"
    assert (store / "objects").is_dir()  # .prov at the git root, not in sub/
    env["PROV_STORE"] = str(store)
    rec = last_run(env)
    g = rec["git"]
    assert g["repository"] is True and g["root"] == str(repo)
    assert g["head"] == git(repo, "rev-parse", "HEAD").strip()
    assert g["branch"] == "main" and g["dirty"] is True
    assert g["untracked"] == ["sub/new.txt"]  # the store itself is never untracked
    diff = prov("show", rec["run_id"], "--cat", "git.diff", env=env).stdout
    assert (
        diff
        == subprocess.run(
            ["git", "diff", "HEAD", "--binary"], cwd=repo, capture_output=True, check=True
        ).stdout
    )
    assert b"+two" in diff


def test_outside_git_is_recorded_as_such(penv, tmp_path):
    p = prov("exec", "-q", "--", "true", env=penv, cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    assert last_run(penv)["git"] == {"repository": False}


def test_run_supervised_api(tmp_path, prov_cache, monkeypatch):
    """The Python API other runners reuse: no streaming, params land in run.params."""
    monkeypatch.setenv("PROV_CACHE_DIR", str(prov_cache))
    from provenance.exec import run_supervised
    from provenance.store import open_store
    from provenance.store.resolve import resolve

    store = open_store(tmp_path / "store")
    r = run_supervised(
        ["sh", "-c", "echo quiet; exit 4"],
        name="api",
        tags={"study": "backends"},
        params={"attention_backend": "FLASHINFER"},
        store=store,
        env_extra={"EXTRA_VAR": "x"},
        stream=False,
    )
    assert r.exit_status == 4 and r.state == "failed" # issue #18: a non-zero exit is "failed" (was "complete")
    info = store.get_run(r.run_id[:8])
    assert info.record_digest == r.record_digest and info.state == "failed"
    assert store.get_bytes(info.record.logs["stdout"]["digest"]) == b"quiet\n"
    m = resolve(r.run_id, store).manifest
    assert m.get("run.params.attention_backend") == "FLASHINFER"
    assert m.get("run.tags.study") == "backends"


def test_abandoned_run_when_prov_is_killed(penv):
    proc = subprocess.Popen(
        [PROV, "exec", "--", "sleep", "infinity"],  # ends only when killed
        env=penv,
        stdin=subprocess.DEVNULL,
        start_new_session=True,
    )
    try:
        deadline = time.time() + 120  # fails only a hang
        while time.time() < deadline:
            runs = runs_json(penv)
            if runs and runs[0]["state"] == "running":
                break
            time.sleep(0.1)
        assert runs and runs[0]["state"] == "running"
        proc.kill()
        proc.wait()
    finally:
        if proc.poll() is None:
            proc.kill()
    assert runs_json(penv)[0]["state"] == "abandoned"
    assert show_json(runs[0]["run_id"], penv)["state"] == "abandoned"


def test_closed_reader_gives_the_command_sigpipe_as_without_prov(penv):
    """`prov exec -- yes | head -1` ends like `yes | head -1`: yes dies of SIGPIPE."""
    prov_proc = subprocess.Popen(
        [PROV, "exec", "-q", "--", "yes"],
        env=penv,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
    )
    head = subprocess.run(["head", "-1"], stdin=prov_proc.stdout, capture_output=True)
    prov_proc.stdout.close()
    assert prov_proc.wait(timeout=30) == 128 + signal.SIGPIPE
    assert head.stdout == b"y\n"
    rec = last_run(penv)
    assert rec["signal"] == "SIGPIPE" and rec["logs"]["stdout"]["size"] >= 2


class ProvOnPty:
    """`prov exec -q -- sh -c SCRIPT` on a pseudo-terminal of its own, read as a user would."""

    def __init__(self, script: str, env: dict[str, str]) -> None:
        import pty

        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: prov on the pty
            os.execve(PROV, [PROV, "exec", "-q", "--", "sh", "-c", script], env)
        self.buf = b""
        self.closed = False

    def read_until(self, token: bytes, wait: float = 90) -> bool:
        """Read until `token` is on the terminal (False if not within `wait` seconds)."""
        import select

        end = time.time() + wait
        while True:
            left = end - time.time()
            if select.select([self.fd], [], [], min(0.2, max(0.0, left)))[0]:
                try:
                    self.buf += os.read(self.fd, 1024)
                except OSError:  # the terminal is closed: nothing more to read
                    self.closed = True
                    break
            if (token and token in self.buf) or left <= 0:
                break
        return token in self.buf

    def wait(self, flags: int = 0) -> int:
        """prov's wait status once it ends (or stops, with WUNTRACED), reading the terminal
        meanwhile; the bound fails only a hang."""
        end = time.time() + 120
        while time.time() < end:
            pid, status = os.waitpid(self.pid, flags | os.WNOHANG)
            if pid:
                return status
            if self.closed:
                time.sleep(0.05)
            else:
                self.read_until(b"", wait=0.05)  # drain the terminal: a full one blocks prov
        os.kill(self.pid, signal.SIGKILL)
        raise AssertionError(f"prov on the terminal did not end: {self.buf[-500:]!r}")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.fd)


def test_on_a_terminal_the_command_reads_stdin_and_gets_ctrl_c(penv):
    """Under a real pty: the command's process group owns the terminal (no SIGTTIN on read),
    and ^C typed at the terminal reaches it; prov exits 130 as a shell would. The command
    then waits for a second line that never comes: only the ^C can end it (a `sleep` there
    raced the ^C on a loaded machine)."""
    term = ProvOnPty("echo ready; read x; echo got:$x; read y; echo not-interrupted", penv)
    try:
        assert term.read_until(b"ready"), term.buf
        os.write(term.fd, b"typed\n")
        assert term.read_until(b"got:typed"), term.buf
        os.write(term.fd, b"\x03")
        status = term.wait()
    finally:
        term.close()
    assert os.waitstatus_to_exitcode(status) == 130
    rec = last_run(penv)
    assert rec["signal"] == "SIGINT" and rec["exit_status"] == 130


def test_ctrl_z_stops_prov_with_the_command_and_fg_resumes_both(penv):
    """Job control on a terminal: ^Z stops the command, and prov stops too (so a shell sees
    the job stop, not a hung terminal); SIGCONT to prov (the shell's `fg`) resumes both."""
    term = ProvOnPty("echo ready; read x; echo got:$x", penv)
    try:
        assert term.read_until(b"ready"), term.buf
        os.write(term.fd, b"\x1a")  # ^Z
        status = term.wait(os.WUNTRACED)
        assert os.WIFSTOPPED(status)  # prov itself stopped, as the shell's job would
        os.kill(term.pid, signal.SIGCONT)
        os.write(term.fd, b"again\n")
        assert term.read_until(b"got:again"), term.buf
        status = term.wait()
    finally:
        term.close()
    assert os.waitstatus_to_exitcode(status) == 0
    assert last_run(penv)["exit_status"] == 0


def test_a_python_from_another_environment_is_snapshotted_as_itself(penv, tmp_path):
    """`prov exec -- OTHER/bin/python ...` records OTHER's packages, not prov's."""
    venv = tmp_path / "other"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True)
    other = venv / "bin" / "python"
    p = prov("exec", "-q", "--", str(other), "-c", "import sys; print(sys.prefix)", env=penv)
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode().strip() == str(venv)
    rec = last_run(penv)
    assert rec["interpreter"] == str(other)
    from provenance.store import open_store

    manifest = open_store(penv["PROV_STORE"]).manifest_object(rec["manifest"])
    assert manifest.get("python.prefix") == str(venv)
    assert manifest.get("python.packages.typer") is None  # prov's own deps are not there


def test_run_supervised_from_several_threads_into_one_store(tmp_path, prov_cache, monkeypatch):
    """How a repeat runner uses the API: one Store object, runs supervised in parallel."""
    from concurrent.futures import ThreadPoolExecutor

    monkeypatch.setenv("PROV_CACHE_DIR", str(prov_cache))
    from provenance.exec import run_supervised
    from provenance.store import open_store

    store = open_store(tmp_path / "store")

    def one(i: int):
        return run_supervised(
            ["sh", "-c", f"echo {i}; exit {i}"], name=f"t{i}", store=store, stream=False
        )

    with ThreadPoolExecutor(4) as pool:
        results = list(pool.map(one, range(4)))
    assert [r.exit_status for r in results] == [0, 1, 2, 3]
    for i, r in enumerate(results):
        info = store.get_run(r.run_id)
        assert info.state == ("complete" if i == 0 else "failed") and info.name == f"t{i}"
        assert store.get_bytes(info.record.logs["stdout"]["digest"]) == f"{i}\n".encode()
    assert store.fsck().ok
