"""Run the perturbation matrix: every run is a real `prov exec`, every row a verdict.

Each run is `prov exec --output OUT -- PYTHON -m runners.selftest_workload ...`, started
as a child process so that what a user would change from the shell (environment, working
directory, hostname, user, LD_PRELOAD, another interpreter) is changed for prov itself,
exactly as it would be in real use. The workload writes its output digests and run id; the
run's identity (snapshot + run facts + libraries both runs loaded, as the gate sees it)
comes from the store.

Verdicts: outputs changed and identity changed, or neither -> sound; outputs changed and
identity not -> missed cause; identity changed, outputs not, on a row that must not
matter (context) -> noise. A cause row whose identity moved but whose outputs did not is
sound, and reported as "no output change on this hardware".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.atomic import replace_dir
from provenance.selftest.matrix import Perturbation

OTHER_HOSTNAME = "prov-selftest-other-host"
NOBODY = 65534


@dataclass
class RunOutcome:
    run_id: str
    digests: dict[str, str]
    seconds: float
    store: Path


@dataclass
class Row:
    name: str
    what: str
    expect: str
    status: str = "ok"  # ok | not run | failed
    reason: str = ""
    outputs_changed: list[str] = field(default_factory=list)
    identity_changed: bool = False
    digest_changed: bool = False
    keys: list[str] = field(default_factory=list)
    verdict: str = ""
    finding: str = ""
    run_id: str = ""
    seconds: float = 0.0

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def verdict(expect: str, outputs_changed: bool, identity_changed: bool) -> tuple[str, str]:
    if outputs_changed and not identity_changed:
        return "missed cause", "outputs changed but the identity did not"
    if outputs_changed:
        if expect == "context":
            return "sound", "a context change moved the numbers, and the identity said so"
        return "sound", ""
    if identity_changed:
        if expect == "context":
            return "noise", "identity changed, outputs did not, for a change that must not matter"
        return "sound", "no output change on this hardware; the identity records the change"
    if expect == "cause":
        return "sound", "no output change on this hardware, identity unchanged"
    return "sound", ""


class Runner:
    """Runs rows in `workdir` against one store; the model is copied in (world-readable)."""

    def __init__(self, workdir: Path, model: Path, *, device: str = "cpu",
                 alt_python: str | None = None, tokens: int = 192,
                 log=lambda msg: None) -> None:
        self.workdir = workdir.absolute()
        self.workdir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.workdir, 0o755)
        self.model = self.workdir / "model"
        if not (self.model / "config.json").is_file():
            tmp = self.workdir / ".model-tmp"
            shutil.rmtree(tmp, ignore_errors=True)
            shutil.copytree(model, tmp)
            replace_dir(tmp, self.model)
        self.store = self.workdir / "store"
        self.device = device
        self.alt_python = alt_python
        self.tokens = tokens
        self.log = log
        self.cwd = self.workdir / "cwd-a"
        self.cwd.mkdir(exist_ok=True)
        self.counter = 0

    # -- one run ---------------------------------------------------------------------------
    def _prov(self) -> list[str]:
        exe = Path(sys.executable).with_name("prov")
        if exe.exists():
            return [str(exe)]
        return [sys.executable, "-c", "from provenance.cli import main; main()"]

    def _special(self, special: str, env: dict[str, str],
                 out: Path) -> tuple[str, list[str], Path, Path]:
        """(python, command prefix, cwd, store) for a row that changes more than `env`."""
        python = sys.executable
        prefix: list[str] = []
        cwd = self.cwd
        store = self.store
        if special == "alt-python":
            if not self.alt_python:
                raise NotRun("no second environment (give --alt-python, or allow building one)")
            python = self.alt_python
        elif special == "cwd":
            cwd = self.workdir / "cwd-b"
            cwd.mkdir(exist_ok=True)
        elif special == "tmpdir":
            tmpdir = self.workdir / "tmp-b"
            tmpdir.mkdir(exist_ok=True)
            env["TMPDIR"] = str(tmpdir)
        elif special == "hostname":
            probe = subprocess.run(["unshare", "-u", "--", "true"], capture_output=True,
                                   text=True) if shutil.which("unshare") else None
            if probe is None or probe.returncode != 0:
                why = probe.stderr.strip()[:200] if probe else "unshare not found"
                raise NotRun(f"cannot make a UTS namespace here: {why}")
            prefix = ["unshare", "-u", "--", "sh", "-c", 'hostname "$0" && exec "$@"',
                      OTHER_HOSTNAME]
        elif special == "ld-preload":
            from provenance.selftest.preload import build_ftz_library

            env["LD_PRELOAD"] = str(build_ftz_library(self.workdir / "preload"))
        elif special == "user":
            if os.geteuid() != 0 or not shutil.which("setpriv"):
                raise NotRun("needs root and setpriv to run as another user")
            store = self.workdir / "store-nobody"
            cache = self.workdir / "cache-nobody"
            for d in (store, cache, out):
                d.mkdir(exist_ok=True)
                os.chown(d, NOBODY, NOBODY)
            env.update({"PROV_STORE": str(store), "PROV_CACHE_DIR": str(cache),
                        "HOME": str(cache), "XDG_CACHE_HOME": str(cache)})
            # another uid and gid; file-access capabilities (kept across exec as ambient
            # capabilities) so it can run an interpreter that lives under root's home
            caps = "+dac_override,+dac_read_search"
            prefix = ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups",
                      f"--inh-caps={caps}", f"--ambient-caps={caps}", "--"]
        return python, prefix, cwd, store

    def run(self, p: Perturbation | None) -> RunOutcome:
        self.counter += 1
        name = p.name if p else "baseline"
        out = self.workdir / "out" / f"{self.counter:02d}-{name}"
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROV_RUN")}
        env["PROV_STORE"] = str(self.store)
        special = p.special if p else ""
        if p and special != "api-env":
            env.update(p.env)
        python, prefix, cwd, store = self._special(special, env, out)
        argv = [*prefix, *self._prov(), "exec", "--name", f"selftest-{name}",
                "--tag", "selftest=identity", "--output", str(out), "--",
                python, "-m", "runners.selftest_workload", "--model", str(self.model),
                "--out", str(out), "--device", self.device, "--tokens", str(self.tokens),
                *(p.args if p else ())]
        if special == "api-env":
            # the same run through run_supervised(env_extra=...): the variables reach only
            # the command, never prov's own environment
            spec = {"argv": argv[argv.index("--") + 1:], "name": f"selftest-{name}",
                    "outputs": [str(out)], "env_extra": dict(p.env)}
            argv = [sys.executable, "-m", "provenance.selftest.api_run", json.dumps(spec)]
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True)
        seconds = time.monotonic() - t0
        if proc.returncode != 0:
            tail = (proc.stderr or proc.stdout)[-1500:]
            raise RunFailed(f"exit {proc.returncode}: {tail.strip()}")
        doc = json.loads((out / "digests.json").read_text())
        return RunOutcome(doc["run_id"], doc["digests"], seconds, store)

    # -- identity ----------------------------------------------------------------------------
    def identity(self, outcome: RunOutcome):
        """The run as the gate sees it (resolved in the store it was recorded in)."""
        from provenance.store import open_store
        from provenance.store.resolve import resolve

        return resolve(outcome.run_id, open_store(outcome.store))


class NotRun(Exception):
    """The row cannot run here (a missing tool, no second environment, no second GPU)."""


class RunFailed(Exception):
    """The prov exec run of a row failed."""


def identity_diff(base, other) -> tuple[bool, list[str]]:
    """(record digests differ, identity keys that differ), libraries both runs loaded
    included: `compare_runs` with nothing declared, built-in config, nothing recorded."""
    from provenance.gate import GateConfig, compare_runs
    from provenance.model import LeafKind

    c = compare_runs(None, base, other, [], config=GateConfig(), record=False)
    # libraries last: a changed package shows first as itself, then as its loaded files
    keys = sorted({ch.key for ch in c.result.diff.changes if ch.kind is not LeafKind.CONTEXT},
                  key=lambda k: (k.startswith("libs."), k))
    return base.run.record.manifest_digest != other.run.record.manifest_digest, keys


def run_matrix(runner: Runner, rows: list[Perturbation]) -> dict[str, Any]:
    started = time.time()
    runner.log("baseline")
    base = runner.run(None)
    base_id = runner.identity(base)
    results: list[Row] = []
    for p in rows:
        row = Row(p.name, p.what, p.expect)
        runner.log(p.name)
        try:
            o = runner.run(p)
        except NotRun as exc:
            row.status, row.reason, row.verdict = "not run", str(exc), "not run"
            results.append(row)
            continue
        except RunFailed as exc:
            row.status, row.reason, row.verdict = "failed", str(exc), "failed"
            results.append(row)
            continue
        row.run_id, row.seconds = o.run_id, round(o.seconds, 2)
        row.outputs_changed = sorted(k for k in base.digests if o.digests.get(k) != base.digests[k])
        row.digest_changed, row.keys = identity_diff(base_id, runner.identity(o))
        row.identity_changed = row.digest_changed or bool(row.keys)
        row.verdict, row.finding = verdict(p.expect, bool(row.outputs_changed),
                                           row.identity_changed)
        results.append(row)
    counts: dict[str, int] = {}
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return {
        "format": "prov-selftest-identity/1",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "machine": machine(),
        "device": runner.device,
        "baseline": {"run_id": base.run_id, "digests": base.digests,
                     "manifest_digest": base_id.run.record.manifest_digest},
        "store": str(runner.store),
        "rows": [r.to_json() for r in results],
        "counts": counts,
        "seconds": round(time.time() - started, 1),
    }


def machine() -> dict[str, Any]:
    import platform

    cpu = ""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    except OSError:
        pass
    return {"cpu": cpu, "cores": os.cpu_count(), "kernel": platform.release(),
            "python": platform.python_version()}
