"""The exec supervisor: run a command as a recorded run.

Steps, in order (a killed prov leaves the run `started`, shown as abandoned, never corrupt):
1. snapshot the environment (from the snapshot cache when nothing changed) and read the
   git state, concurrently;
2. store the manifest and write the *started* record, before the command starts;
3. start the command in its own process group with PROV_RUN_ID and PROV_RUN_DIR set;
   forward SIGINT/SIGTERM/SIGHUP/SIGQUIT/SIGUSR1/SIGUSR2; pass stdin through; stream
   stdout and stderr to the terminal and into the store in fixed-size chunks; sample the
   loaded libraries of the command and its descendants;
4. after it ends: hash declared outputs, ingest PROV_RUN_DIR, hash loaded libraries,
   check for environment drift, and write the final record.
The exit status is the command's, or 128+N when signal N killed it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import fcntl
import os
import resource
import selectors
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.model.redact import redact_argv, redact_value
from provenance.store import Store, open_store
from provenance.store.records import new_run_id, now_iso, supervisor_identity

FORWARDED = (
    signal.SIGINT,
    signal.SIGTERM,
    signal.SIGHUP,
    signal.SIGQUIT,
    signal.SIGUSR1,
    signal.SIGUSR2,
)
CHUNK = 1 << 20
# After the command exits, descendants may still hold its pipes: drain them until they
# have been quiet this long, then stop (a daemonised grandchild must not hang prov).
DRAIN_QUIET_S = 0.5
F_SETPIPE_SZ = 1031
PR_SET_PDEATHSIG = 1


@dataclass
class RunResult:
    run_id: str
    exit_status: int
    record_digest: str
    state: str = "complete"
    record: dict[str, Any] = field(default_factory=dict)


def _workload_python(argv: Sequence[str]) -> str | None:
    """The interpreter a `python ...` command will run, when it is not prov's own."""
    import re
    import shutil

    name = os.path.basename(argv[0])
    if not re.fullmatch(r"python[0-9.]*", name):
        return None
    found = shutil.which(argv[0])
    if not found:
        return None
    found = os.path.abspath(found)
    if os.path.dirname(found) == os.path.dirname(sys.executable):
        return None  # same bin directory: the same environment as prov's
    return found


class _Tee:
    """Copy one pipe to a terminal fd (optional) and a store writer, in bounded chunks."""

    def __init__(self, src: int, dst: int | None, writer) -> None:
        self.src = src
        self.dst = dst
        self.writer = writer
        self.open = True
        self.broken = False
        self.pipe: Any = None  # the file object owning `src`

    def pump(self) -> int:
        try:
            data = os.read(self.src, CHUNK)
        except BlockingIOError:
            return 0
        except OSError:
            data = b""
        if not data:
            self.open = False
            return 0
        self.writer.write(data)
        if self.dst is not None:
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.dst, view) :]
            except BlockingIOError:
                # a non-blocking terminal: wait until it can take more
                import select

                select.select([], [self.dst], [])
            except OSError as exc:
                if exc.errno not in (errno.EPIPE, errno.EBADF):
                    raise
                # The reader went away (`prov exec -- yes | head -1`): close the command's
                # pipe too, so it gets SIGPIPE as it would without prov, not run forever.
                self.dst = None
                self.open = False
                self.broken = True
        return len(data)


def _grow_pipe(fd: int) -> None:
    with contextlib.suppress(OSError):
        fcntl.fcntl(fd, F_SETPIPE_SZ, CHUNK)


_LIBC = None


def _child_setup(parent: int, foreground: bool) -> None:
    """In the child before exec: own process group; die with prov so no run outlives it.

    On a terminal the child takes the terminal itself, before exec, so it can never read
    stdin while still in the background (SIGTTIN would stop it); the parent does the same
    after the fork, whichever runs first (as shells do).
    """
    os.setpgid(0, 0)
    if foreground:
        signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        with contextlib.suppress(OSError):
            os.tcsetpgrp(0, os.getpgrp())
        signal.signal(signal.SIGTTOU, signal.SIG_DFL)
    if _LIBC is not None:
        _LIBC.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent:
        os._exit(128 + signal.SIGTERM)


def _owns_terminal() -> bool:
    try:
        return os.isatty(0) and os.tcgetpgrp(0) == os.getpgrp()
    except OSError:
        return False


class _Foreground:
    """Hand the terminal to the command's process group (so it can read stdin and get ^C).

    Whether prov owns the terminal is decided before the fork: by the time the parent gets
    here the child may already have taken it (see _child_setup).
    """

    def __init__(self, owned: bool) -> None:
        self.fd: int | None = 0 if owned else None
        self.saved = os.getpgrp()

    def _set(self, pgid: int) -> None:
        old = signal.signal(signal.SIGTTOU, signal.SIG_IGN)
        try:
            os.tcsetpgrp(0, pgid)
        except OSError:
            pass
        finally:
            signal.signal(signal.SIGTTOU, old)

    def give(self, pgid: int) -> None:
        if self.fd is not None:
            self._set(pgid)

    def restore(self) -> None:
        if self.fd is not None:
            self._set(self.saved)


def _cpu_s(usage) -> float:
    return round(usage.ru_utime + usage.ru_stime, 6)


def _status(returncode: int) -> tuple[int, str | None]:
    if returncode < 0:
        sig = -returncode
        try:
            name = signal.Signals(sig).name
        except ValueError:
            name = f"signal {sig}"
        return 128 + sig, name
    return returncode, None


def _snapshot_and_git(python: str | None, cwd: Path):
    """Snapshot (cache) and git state concurrently; git's subprocesses overlap the stats."""
    from provenance.gitstate import git_state
    from provenance.snapshot_cache import cached_snapshot

    git_result: list = []

    def read_git() -> None:
        try:
            git_result.append(git_state(cwd))
        except Exception as exc:  # recorded, never fatal
            git_result.append(({"error": f"{type(exc).__name__}: {exc}"[:300]}, None))

    t = threading.Thread(target=read_git, daemon=True)
    t.start()
    snap = cached_snapshot(python)
    t.join()
    return snap, git_result[0]


def _run_facts(run_dir: Path, base_sections: set[str], warnings: list[str]) -> dict[str, Any]:
    import json

    path = run_dir / "facts.json"
    if not path.exists():
        return {}
    try:
        facts = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        warnings.append(f"facts.json ignored: {exc}")
        return {}
    if not isinstance(facts, dict):
        warnings.append("facts.json ignored: not a JSON object")
        return {}
    out = {}
    for section, value in facts.items():
        if section in base_sections or section == "run":
            warnings.append(f"facts.json: section {section!r} belongs to the snapshot; ignored")
            continue
        if not isinstance(value, dict):
            warnings.append(f"facts.json: section {section!r} is not a table; ignored")
            continue
        out[section] = value
    if out:
        from provenance.model import Manifest, ManifestError

        try:
            Manifest(dict(out)).leaves()
        except ManifestError as exc:
            warnings.append(f"facts.json ignored: {exc}")
            return {}
    return out


def _with_env_extra(snap, env_extra: Mapping[str, str] | None):
    """The snapshot with the command's extra environment in its `env` section.

    The snapshot (and its cache) describe prov's own environment; variables given only to
    the command (`run_supervised(env_extra=...)`, e.g. the runners' VLLM_* settings) would
    otherwise reach the workload without reaching its identity (found by
    `prov selftest identity`)."""
    import dataclasses
    import hashlib

    from provenance.collectors.env import relevant
    from provenance.model import Manifest

    extra = {k: redact_value(k, str(v)) for k, v in (env_extra or {}).items() if relevant(k)}
    if not extra:
        return snap
    base = snap.manifest()
    env = dict(base.facts.get("env") or {})
    if all(env.get(k) == v for k, v in extra.items()):
        return snap
    env.update(extra)
    m = Manifest({**base.facts, "env": dict(sorted(env.items()))})
    text = m.to_json()
    return dataclasses.replace(
        snap, text=text, manifest_digest=m.digest(),
        object_digest="sha256:" + hashlib.sha256(text.encode("utf-8")).hexdigest())


def _drift(snap, python: str | None, store: Store,
           env_extra: Mapping[str, str] | None = None) -> dict[str, Any]:
    """Did the environment change while the command ran? Stats first; snapshot only if so."""
    from provenance.snapshot_cache import cached_snapshot, still_valid

    if still_valid(snap, python):
        return {"checked": True, "detected": False}
    after = _with_env_extra(cached_snapshot(python, use_cache=False), env_extra)
    if after.manifest_digest == snap.manifest_digest:
        return {"checked": True, "detected": False, "resnapshot": True}
    from provenance.diff import diff_manifests
    from provenance.model import LeafKind

    d = diff_manifests(snap.manifest(), after.manifest())
    obj = store.put_bytes(after.text.encode("utf-8"), "manifest")
    changes = [
        {"key": c.key, "change": c.change, "a": c.a, "b": c.b} for c in d.of_kind(LeafKind.IDENTITY)
    ]
    return {
        "checked": True,
        "detected": True,
        "manifest_after": obj,
        "manifest_digest_after": after.manifest_digest,
        "changes": changes[:500],
        "changes_total": len(changes),
    }


def run_supervised(
    argv: Sequence[str],
    *,
    name: str | None = None,
    outputs: Sequence[str | Path] = (),
    tags: Mapping[str, str] | None = None,
    store: Store | None = None,
    env_extra: Mapping[str, str] | None = None,
    stream: bool = True,
    params: Mapping[str, Any] | None = None,
    cwd: str | Path | None = None,
    sample_libraries: bool = True,
) -> RunResult:
    """Run `argv` as a recorded run; returns its id, exit status and final record digest.

    `tags` are free labels (context); `params` are the run's declared parameters, stored
    under `run.params` of its manifest where the gate presets look for them. With
    `stream=False` the output goes only into the store.
    """
    if not argv:
        raise ProvError("no command given (usage: prov exec [OPTIONS] -- CMD ARGS...)")
    argv = [str(a) for a in argv]
    store = store or open_store()
    workdir = Path(cwd).absolute() if cwd else Path.cwd()
    python = _workload_python(argv)
    t0 = time.time()
    snap, (git_facts, git_diff) = _snapshot_and_git(python, workdir)
    # the command runs with env_extra: its relevant variables are part of the run's identity
    snap = _with_env_extra(snap, env_extra)

    store._ensure_layout()
    manifest_obj = store.objects.put_bytes(snap.text.encode("utf-8"))
    if git_diff:
        git_facts["diff"] = store.objects.put_bytes(git_diff)
        git_facts["diff_size"] = len(git_diff)

    run_id = new_run_id()
    run_dir = store.run_dir(run_id)
    run_dir.mkdir(parents=True, exist_ok=True)
    from provenance import __version__

    record: dict[str, Any] = {
        "run_id": run_id,
        "name": name,
        "command": redact_argv(argv),
        "cwd": str(workdir),
        "tags": {str(k): redact_value(str(k), str(v)) for k, v in (tags or {}).items()},
        "params": {
            str(k): redact_value(str(k), v) if isinstance(v, str) else v
            for k, v in (params or {}).items()
        },
        "started_at": now_iso(),
        "manifest": manifest_obj,
        "manifest_digest": snap.manifest_digest,
        "snapshot": {"cache": "hit" if snap.hit else "miss", "warnings": snap.warnings},
        "git": git_facts,
        "supervisor": {**supervisor_identity(), "prov_version": __version__},
        "env_extra": {k: redact_value(k, v) for k, v in (env_extra or {}).items()},
    }
    if python:
        record["interpreter"] = python
    if name is None:
        del record["name"]
    extra = [(manifest_obj, "manifest", len(snap.text.encode("utf-8")))]
    if git_diff:
        extra.append((git_facts["diff"], "git.diff", len(git_diff)))
    started = store.create_run(record, (manifest_obj, snap.manifest_digest), extra)
    try:
        return _execute(
            store,
            record,
            started,
            argv,
            snap,
            python,
            workdir,
            run_dir,
            outputs,
            env_extra,
            stream,
            sample_libraries,
            t0,
        )
    except BaseException as exc:
        # prov itself failed (a bug, ^C before the command started): say so in the record
        # rather than leaving the run to be found abandoned.
        final = {
            **record,
            "state": "failed",
            "error": f"prov: {type(exc).__name__}: {exc}"[:500],
            "ended_at": now_iso(),
            "duration_s": round(time.time() - t0, 6),
            "exit_status": 130 if isinstance(exc, KeyboardInterrupt) else 70,
        }
        with contextlib.suppress(Exception):
            store.finalize_run(final, started)
        raise


def _execute(
    store: Store,
    record: dict[str, Any],
    started: str,
    argv: list[str],
    snap,
    python: str | None,
    workdir: Path,
    run_dir: Path,
    outputs: Sequence[str | Path],
    env_extra: Mapping[str, str] | None,
    stream: bool,
    sample_libraries: bool,
    t0: float,
) -> RunResult:
    global _LIBC
    run_id = record["run_id"]
    name = record.get("name")

    env = dict(os.environ)
    env.update(env_extra or {})
    env.update({"PROV_RUN_ID": run_id, "PROV_RUN_DIR": str(run_dir), "PROV_STORE": str(store.root)})
    from provenance.exec.probe import host as probe

    env.update(probe.environment(run_dir, env))  # the in-process probe (PROV_INPROCESS=0: off)
    try:
        if _LIBC is None:
            _LIBC = ctypes.CDLL(None, use_errno=True)
    except OSError:
        pass
    warnings: list[str] = []
    out_w = store.objects.writer()
    err_w = store.objects.writer()
    # Only an interactive, streamed run in the main thread takes the terminal: runs supervised
    # from worker threads must never steal it from each other.
    owns_terminal = (
        stream and threading.current_thread() is threading.main_thread() and _owns_terminal()
    )
    try:
        proc = subprocess.Popen(
            argv,
            stdin=None,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=env,
            cwd=str(workdir),
            preexec_fn=lambda parent=os.getpid(), fg=owns_terminal: _child_setup(parent, fg),
            bufsize=0,
        )
    except OSError as exc:
        out_w.abort()
        err_w.abort()
        status = 127 if isinstance(exc, FileNotFoundError) else 126
        final = {
            **record,
            "state": "failed",
            "error": f"cannot run {argv[0]}: {exc.strerror or exc}",
            "ended_at": now_iso(),
            "duration_s": round(time.time() - t0, 6),
            "exit_status": status,
        }
        _remove_run_dir(run_dir)
        digest = store.finalize_run(final, started)
        return RunResult(run_id, status, digest, "failed", final)

    usage_at_spawn = resource.getrusage(resource.RUSAGE_SELF)
    spawned = time.time()
    fg = _Foreground(owns_terminal)
    fg.give(proc.pid)
    handlers = _install_forwarding(proc.pid)
    try:
        returncode, child_usage, sampler = _supervise(
            proc, out_w, err_w, stream, sample_libraries, fg
        )
    finally:
        _restore_handlers(handlers)
        fg.restore()
    ended = time.time()
    usage_at_exit = resource.getrusage(resource.RUSAGE_SELF)
    logs = {}
    for label, w in (("stdout", out_w), ("stderr", err_w)):
        digest = w.close()
        logs[label] = {"digest": digest, "size": w.size}

    status, signame = _status(returncode)
    outs = {}
    if outputs:
        from runners.outputs import hash_output

        for p in outputs:
            outs[str(p)] = hash_output((workdir / Path(p)), store)
            if outs[str(p)]["type"] == "missing":
                warnings.append(f"declared output {p} does not exist")
    from runners.outputs import ingest_run_dir

    base_sections = set(_sections(snap.text))
    facts = _run_facts(run_dir, base_sections, warnings)
    probe.merge_into(facts, probe.collect(run_dir, argv, [workdir / p for p in outputs]))
    run_files = ingest_run_dir(run_dir, store)
    facts["run"] = {
        k: v
        for k, v in {"name": name, "tags": record["tags"], "params": record["params"]}.items()
        if v
    }
    if not facts["run"]:
        del facts["run"]
    libs = sampler.results() if sampler else []
    drift = _drift(snap, python, store, env_extra)
    if drift.get("detected"):
        warnings.append(
            f"environment changed during the run: {drift['changes_total']} identity key(s)"
        )
    manifest_digest = snap.manifest_digest
    if set(facts) - {"run"}:
        from provenance.model import Manifest

        base = snap.manifest()
        manifest_digest = Manifest({**base.facts, **facts}).digest()
    self_usage = resource.getrusage(resource.RUSAGE_SELF)
    final = {
        **record,
        "state": "complete",
        "ended_at": now_iso(),
        "duration_s": round(ended - spawned, 6),
        "exit_status": status,
        "logs": logs,
        "outputs": outs,
        "run_dir": run_files,
        "facts": facts,
        "manifest_digest": manifest_digest,
        "loaded_libraries": libs,
        "library_samples": sampler.samples if sampler else 0,
        "drift": drift,
        "resources": {
            "child_cpu_s": _cpu_s(child_usage) if child_usage else None,
            "child_max_rss_kb": child_usage.ru_maxrss if child_usage else None,
            "prov_cpu_s": _cpu_s(self_usage),
            "prov_cpu_while_running_s": round(_cpu_s(usage_at_exit) - _cpu_s(usage_at_spawn), 6),
            "prov_max_rss_kb": self_usage.ru_maxrss,
        },
    }
    if signame:
        final["signal"] = signame
    if warnings:
        final["warnings"] = warnings
    extra = [(d["digest"], f"log.{k}", d["size"]) for k, d in logs.items()]
    digest = store.finalize_run(final, started, extra)
    _remove_run_dir(run_dir)
    return RunResult(run_id, status, digest, "complete", final)


def _sections(text: str) -> list[str]:
    import json

    return [k for k in json.loads(text) if k not in ("schema_version", "kind", "digest")]


def _remove_run_dir(run_dir: Path) -> None:
    import shutil

    shutil.rmtree(run_dir, ignore_errors=True)


def _install_forwarding(pid: int) -> dict[int, Any]:
    """Forward terminal and job-control signals to the command's process group."""
    if threading.current_thread() is not threading.main_thread():
        return {}

    def forward(signum, _frame) -> None:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signum)

    old = {}
    for sig in FORWARDED:
        try:
            old[sig] = signal.signal(sig, forward)
        except (OSError, ValueError):
            continue
    return old


def _restore_handlers(old: dict[int, Any]) -> None:
    for sig, handler in old.items():
        signal.signal(sig, handler)


def _suspend_with(pid: int, fg: _Foreground | None) -> None:
    """The command was stopped (^Z): stop prov too, then resume both together."""
    if fg is not None:
        fg.restore()
    os.kill(os.getpid(), signal.SIGSTOP)
    # continued by the shell (`fg` or `bg`): the terminal goes back only if it is ours
    if fg is not None and _owns_terminal():
        fg.give(pid)
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGCONT)


def _supervise(
    proc: subprocess.Popen, out_w, err_w, stream: bool, sample: bool, fg: _Foreground | None = None
):
    """Pump output and sample libraries until the command has exited and its pipes drained.

    On a terminal (`fg` holds it) job control works as in a shell: when ^Z stops the command,
    prov takes the terminal back and stops itself, so the user's shell sees the job stop;
    on `fg` prov hands the terminal to the command again and continues it.
    """
    from runners.loaded_libs import LibrarySampler

    assert proc.stdout is not None and proc.stderr is not None
    tees = []
    for pipe, dst, w in ((proc.stdout, 1, out_w), (proc.stderr, 2, err_w)):
        fd = pipe.fileno()
        _grow_pipe(fd)
        os.set_blocking(fd, False)
        tee = _Tee(fd, dst if stream else None, w)
        tee.pipe = pipe
        tees.append(tee)
    sel = selectors.DefaultSelector()
    for t in tees:
        sel.register(t.src, selectors.EVENT_READ, t)
    pidfd = None
    if hasattr(os, "pidfd_open"):
        try:
            pidfd = os.pidfd_open(proc.pid)
            sel.register(pidfd, selectors.EVENT_READ, "exit")
        except OSError:
            pidfd = None
    sampler = LibrarySampler(proc.pid) if sample else None
    if sampler:
        sampler.sample()
    next_sample = time.monotonic() + (sampler.next_interval() if sampler else 1e9)
    exited_at: float | None = None
    status: int | None = None
    usage = None

    def reap(block: bool) -> None:
        nonlocal status, usage, exited_at
        if status is not None:
            return
        flags = 0 if block else os.WNOHANG
        if job_control:
            flags |= os.WUNTRACED
        try:
            pid, st, ru = os.wait4(proc.pid, flags)
        except ChildProcessError:
            pid, st, ru = proc.pid, 0, None
        if pid != proc.pid:
            return
        if os.WIFSTOPPED(st):
            _suspend_with(proc.pid, fg)
            return
        status = os.waitstatus_to_exitcode(st)
        usage = ru
        proc.returncode = status
        exited_at = time.monotonic()

    # SIGCHLD (through the wakeup fd) tells us the command stopped; pidfd only says it exited.
    job_control = (
        fg is not None
        and fg.fd is not None
        and (threading.current_thread() is threading.main_thread())
    )
    wake_r = wake_w = None
    old_chld = old_wakeup = None
    if job_control:
        import socket

        wake_r, wake_w = socket.socketpair()
        wake_r.setblocking(False)
        wake_w.setblocking(False)
        old_chld = signal.signal(signal.SIGCHLD, lambda *_: None)
        old_wakeup = signal.set_wakeup_fd(wake_w.fileno())
        sel.register(wake_r, selectors.EVENT_READ, "chld")

    try:
        while True:
            now = time.monotonic()
            if status is None:
                timeout = max(0.0, next_sample - now) if sampler else None
                if pidfd is None:
                    timeout = min(timeout if timeout is not None else 0.05, 0.05)
            else:
                if not any(t.open for t in tees):
                    break
                timeout = DRAIN_QUIET_S
            events = sel.select(timeout)
            moved = 0
            for key, _ in events:
                if key.data == "chld":
                    with contextlib.suppress(OSError):
                        while wake_r.recv(4096):
                            pass
                    reap(block=False)
                    continue
                if key.data == "exit":
                    sel.unregister(pidfd)
                    if status is None:
                        # exited: reap now (a stop is only reported through SIGCHLD)
                        job_control_was, job_control = job_control, False
                        reap(block=True)
                        job_control = job_control_was
                    continue
                t = key.data
                moved += t.pump()
                if not t.open:
                    sel.unregister(t.src)
                    if t.broken:
                        t.pipe.close()
            if status is None:
                if pidfd is None:
                    reap(block=False)
                if status is None and sampler and time.monotonic() >= next_sample:
                    sampler.sample()
                    next_sample = time.monotonic() + sampler.next_interval()
            elif not events and not moved:
                break  # quiet since the command exited: descendants kept the pipes open
    finally:
        sel.close()
        if pidfd is not None:
            os.close(pidfd)
        if job_control:
            signal.set_wakeup_fd(old_wakeup)
            signal.signal(signal.SIGCHLD, old_chld)
            wake_r.close()
            wake_w.close()
        proc.stdout.close()
        proc.stderr.close()
    return status if status is not None else 0, usage, sampler
