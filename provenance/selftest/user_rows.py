"""The user-program rows: programs written as users write them, each run with `prov exec`
as a user would, each row one change between two runs of one program.

The programs (`programs/*.py`, shipped with prov) are plain scripts: transformers'
`from_pretrained` + `generate`, `safetensors.torch.load_file` + a matmul, `numpy.load` +
a prompt read with `open`, a script re-executing itself with another `PYTHONHASHSEED`, and
vLLM's `LLM(model=DIR)` (run only with a vLLM interpreter, `--python`). They run in a
project directory like a user's: the scripts, `model/` (the demo model, with a chat
template and a generation config), `prompt.txt`, `data/weights.npy`, called by relative
paths (`python hf_generate.py --model model --prompt prompt.txt --out r1.txt`, `-o r1.txt`).

Ground truth is the program's output: the bytes of the file it wrote. prov's verdict is
`compare_runs` of the two runs with nothing declared. Verdicts as for the workload rows
(identity.py); a cause row that prov refused must then pass with its declaration (`vary`,
e.g. `--vary weights` for swapped weights), else it is "declaration refused".
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import replace_dir
from provenance.model.digests import file_sha256, hex_of
from provenance.selftest.fixtures import swap_safetensors
from provenance.selftest.identity import NotRun, Row, RunFailed, identity_diff, machine, verdict

PROGRAMS = Path(__file__).parent / "programs"
PROMPT = "The Cat Sat On The Mat. Where Is The Cat?"
TEMPLATE = ("{% for m in messages %}{{ m['role'] }}: {{ m['content'] }}\n{% endfor %}"
            "{% if add_generation_prompt %}assistant:{% endif %}")
MAX_NEW_TOKENS = 8
# what every vLLM CPU run gets, here and in the tests (tests/runners/vllm_venv.py)
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "VLLM_ENABLE_V1_MULTIPROCESSING": "0", "TRANSFORMERS_OFFLINE": "1"}
# program -> its arguments; {out} is the side's output file
ARGS = {
    "hf_generate.py": ("--model", "model", "--prompt", "prompt.txt", "--out", "{out}"),
    "st_direct.py": ("--model", "model", "--prompt", "prompt.txt", "--out", "{out}"),
    "np_direct.py": ("--array", "data/weights.npy", "--prompt", "prompt.txt", "--out", "{out}"),
    "hash_order.py": ("--out", "{out}"),
    "vllm_offline.py": ("--model", "model", "--prompt", "prompt.txt", "--out", "{out}"),
}
VLLM_PROGRAMS = frozenset({"vllm_offline.py"})


@dataclass(frozen=True)
class Side:
    """One run of a row's program: what differs from the plain invocation."""

    args: tuple[str, ...] = ()
    env: dict[str, str] = field(default_factory=dict)
    absolute: bool = False  # the script called by its absolute path
    out: str = "r1.txt"  # the output file, relative to the project (`-o` and `--out`)
    change: str = ""  # a change to the project's files before the run (CHANGES)

    def key(self) -> str:
        return json.dumps([self.args, sorted(self.env.items()), self.absolute, self.out,
                           self.change])


PLAIN = Side()


@dataclass(frozen=True)
class UserRow:
    name: str
    program: str
    what: str
    expect: str  # "cause" | "context"
    b: Side
    a: Side = PLAIN
    vary: tuple[str, ...] = ()  # the declaration that must pass a refused cause row


@dataclass
class ProgramRow(Row):
    program: str = ""
    vary: list[str] = field(default_factory=list)
    vary_ok: bool | None = None  # None: nothing to declare (not refused, or a context row)
    vary_keys: list[str] = field(default_factory=list)  # refused in spite of the declaration
    run_ids: list[str] = field(default_factory=list)


def rows() -> list[UserRow]:
    R, S = UserRow, Side
    hf, st, np_, ho, vl = ("hf_generate.py", "st_direct.py", "np_direct.py", "hash_order.py",
                           "vllm_offline.py")
    weights = "model.safetensors rewritten in place: other values, same names, shapes, size"
    return [
        R("hf-weights", hf, weights, "cause", S(change="weights"), vary=("weights",)),
        R("hf-generation-config", hf, "generation_config.json: max_new_tokens 8 -> 4",
          "cause", S(change="generation-config"), vary=("weights",)),
        R("hf-tokenizer", hf, "tokenizer.json: a lowercasing normalizer", "cause",
          S(change="tokenizer"), vary=("weights",)),
        R("hf-chat-template", hf, "chat_template.jinja: generation prompt 'assistant:' -> "
          "'answer:'", "cause", S(change="chat-template"), vary=("weights",)),
        R("hf-prompt", hf, "prompt.txt (read with open): a sentence added", "cause",
          S(change="prompt"), vary=("inputs",)),
        R("hf-getenv", hf, "MY_TEMPERATURE=0.0 -> 0.9 (the script reads it with os.getenv)",
          "cause", S(env={"MY_TEMPERATURE": "0.9"}), a=S(env={"MY_TEMPERATURE": "0.0"}),
          vary=("env.MY_TEMPERATURE",)),
        R("hf-unread-env", hf, "MY_UNREAD_SETTING=1 -> 2 (set, never read)", "context",
          S(env={"MY_UNREAD_SETTING": "2"}), a=S(env={"MY_UNREAD_SETTING": "1"})),
        R("hf-temp-arg", hf, "--temp 0.0 -> --temp 0.9 on the command line", "cause",
          S(args=("--temp", "0.9")), a=S(args=("--temp", "0.0")), vary=("code.args.temp",)),
        R("hf-absolute-path", hf, "the script called by its absolute path, not a relative one",
          "context", S(absolute=True)),
        R("hf-output-path", hf, "-o r2.txt --out r2.txt instead of r1.txt (relative paths)",
          "context", S(out="r2.txt")),
        R("hf-repeat", hf, "the same command again", "context", S()),
        R("st-weights", st, weights + " (safetensors.torch.load_file)", "cause",
          S(change="weights"), vary=("weights",)),
        R("st-repeat", st, "the same command again", "context", S()),
        R("np-array", np_, "data/weights.npy (numpy.load) edited in place, same size", "cause",
          S(change="array"), vary=("inputs",)),
        R("np-prompt", np_, "prompt.txt (read with open): a sentence added", "cause",
          S(change="prompt"), vary=("inputs",)),
        R("np-repeat", np_, "the same command again", "context", S()),
        R("hashseed-reexec", ho, "MY_SEED=1 -> 2: the script re-executes itself with "
          "PYTHONHASHSEED from it (taken from a copy of the environment)", "cause",
          S(env={"MY_SEED": "2"}), a=S(env={"MY_SEED": "1"}),
          vary=("runtime.process_env.PYTHONHASHSEED",)),
        R("hashseed-repeat", ho, "the same command again (MY_SEED=1)", "context",
          S(env={"MY_SEED": "1"}), a=S(env={"MY_SEED": "1"})),
        R("vllm-weights", vl, weights, "cause", S(change="weights"), vary=("weights",)),
        R("vllm-chat-template", vl, "chat_template.jinja: generation prompt 'assistant:' -> "
          "'answer:'", "cause", S(change="chat-template"), vary=("weights",)),
        R("vllm-generation-config", vl, "generation_config.json: max_new_tokens 8 -> 4",
          "cause", S(change="generation-config"), vary=("weights",)),
        R("vllm-repeat", vl, "the same command again", "context", S()),
    ]


# -- the project directory -------------------------------------------------------------------
def build_pristine(directory: Path, model: Path) -> Path:
    """The project as it is before any change: the demo model with a chat template and a
    generation config, a prompt, an array (built once per work directory)."""
    if (directory / "model" / "config.json").is_file():
        return directory
    tmp = directory.with_name(directory.name + f".tmp-{os.getpid()}")
    shutil.rmtree(tmp, ignore_errors=True)
    shutil.copytree(model, tmp / "model")
    (tmp / "model" / "chat_template.jinja").write_text(TEMPLATE)
    gen = tmp / "model" / "generation_config.json"
    gen.write_text(json.dumps({**json.loads(gen.read_text()),
                               "max_new_tokens": MAX_NEW_TOKENS}, indent=2))
    (tmp / "prompt.txt").write_text(PROMPT)
    (tmp / "data").mkdir()
    np.save(tmp / "data" / "weights.npy", np.random.default_rng(0).standard_normal((8, 16)))
    replace_dir(tmp, directory)
    return directory


def restore(pristine: Path, project: Path) -> None:
    """The project's data as it was (the same bytes, new files), scripts beside it."""
    for sub in ("model", "data"):
        shutil.rmtree(project / sub, ignore_errors=True)
        shutil.copytree(pristine / sub, project / sub, copy_function=shutil.copyfile)
    shutil.copyfile(pristine / "prompt.txt", project / "prompt.txt")
    for script in PROGRAMS.glob("*.py"):
        shutil.copyfile(script, project / script.name)


def _edit_json(path: Path, edit: Callable[[dict[str, Any]], None]) -> None:
    doc = json.loads(path.read_text())
    edit(doc)
    path.write_text(json.dumps(doc, indent=2))


def _array(project: Path) -> None:
    path = project / "data" / "weights.npy"
    size = path.stat().st_size
    np.save(path, np.load(path) * 2.0)
    assert path.stat().st_size == size


CHANGES: dict[str, Callable[[Path], None]] = {
    "weights": lambda p: swap_safetensors(p / "model" / "model.safetensors"),
    "generation-config": lambda p: _edit_json(p / "model" / "generation_config.json",
                                              lambda d: d.update(max_new_tokens=4)),
    "tokenizer": lambda p: _edit_json(p / "model" / "tokenizer.json",
                                      lambda d: d.update(normalizer={"type": "Lowercase"})),
    "chat-template": lambda p: (p / "model" / "chat_template.jinja").write_text(
        TEMPLATE.replace("assistant:", "answer:")),
    "prompt": lambda p: (p / "prompt.txt").write_text(PROMPT + " The engine"),
    "array": _array,
}


# -- runs ------------------------------------------------------------------------------------
@dataclass
class ProgramRun:
    run_id: str
    output: str  # sha256 of the output file
    seconds: float


class ProgramRunner:
    """Runs user programs under `prov exec` in one project directory, against one store."""

    def __init__(self, workdir: Path, model: Path, *, vllm_python: str | None = None,
                 log: Callable[[str], None] = lambda msg: None) -> None:
        self.workdir = workdir.absolute()
        self.workdir.mkdir(parents=True, exist_ok=True)
        self.pristine = build_pristine(self.workdir / "pristine", model)
        self.project = self.workdir / "project"
        self.project.mkdir(exist_ok=True)
        self.store = self.workdir / "store"
        self.vllm_python = vllm_python
        self.log = log
        self.baselines: dict[tuple[str, str], ProgramRun] = {}

    def python_for(self, program: str) -> str:
        if program not in VLLM_PROGRAMS:
            return sys.executable
        if not self.vllm_python:
            raise NotRun("no vLLM interpreter (give --python PY of an environment with vllm)")
        return self.vllm_python

    def run(self, name: str, program: str, side: Side) -> ProgramRun:
        """One `prov exec` run of `program` as `side` says, on a freshly restored project."""
        python = self.python_for(program)
        restore(self.pristine, self.project)
        if side.change:
            CHANGES[side.change](self.project)
        out = self.project / side.out
        out.unlink(missing_ok=True)
        script = str(self.project / program) if side.absolute else program
        args = [a.format(out=side.out) for a in ARGS[program]]
        env = {k: v for k, v in os.environ.items() if not k.startswith("PROV_RUN")}
        env["PROV_STORE"] = str(self.store)
        if program in VLLM_PROGRAMS:
            env.update(VLLM_ENV)
        env.update(side.env)
        argv = [*_prov(), "exec", "--json", "--name", f"selftest-{name}",
                "--tag", "selftest=programs", "-o", side.out, "--",
                python, script, *args, *side.args]
        t0 = time.monotonic()
        proc = subprocess.run(argv, cwd=self.project, env=env, capture_output=True, text=True,
                              stdin=subprocess.DEVNULL)
        seconds = time.monotonic() - t0
        if proc.returncode != 0 or not out.is_file():
            raise RunFailed(f"exit {proc.returncode}: {(proc.stderr or proc.stdout)[-1500:]}")
        run_id = json.loads(proc.stdout)["run_id"]
        return ProgramRun(run_id, hex_of(file_sha256(out)), seconds)

    def side_run(self, row: UserRow, side: Side, label: str, shared: bool) -> ProgramRun:
        """A shared side without changes is run once for the rows that have it (the plain
        invocation of each program is one baseline); side b is run for its row alone."""
        if side.change or not shared:
            return self.run(f"{row.name}-{label}", row.program, side)
        key = (row.program, side.key())
        if key not in self.baselines:
            self.baselines[key] = self.run(f"{row.program.removesuffix('.py')}-{label}",
                                           row.program, side)
        return self.baselines[key]

    def identity(self, run: ProgramRun):
        from provenance.store import open_store
        from provenance.store.resolve import resolve

        return resolve(run.run_id, open_store(self.store))


def _prov() -> list[str]:
    exe = Path(sys.executable).with_name("prov")
    if exe.exists():
        return [str(exe)]
    return [sys.executable, "-c", "from provenance.cli import main; main()"]


def declared(runner: ProgramRunner, a, b, vary: tuple[str, ...]) -> tuple[bool, list[str]]:
    """(passes, keys still refused) of the two runs with the row's declaration."""
    from provenance.gate import GateConfig, compare_runs

    c = compare_runs(None, a, b, list(vary), config=GateConfig(), record=False)
    return c.ok, sorted(ch.key for ch in c.result.refused)


def run_row(runner: ProgramRunner, row: UserRow) -> ProgramRow:
    out = ProgramRow(row.name, row.what, row.expect, program=row.program,
                     vary=list(row.vary))
    try:
        a = runner.side_run(row, row.a, "a", shared=True)
        b = runner.side_run(row, row.b, "b", shared=False)
    except NotRun as exc:
        out.status, out.reason, out.verdict = "not run", str(exc), "not run"
        return out
    except RunFailed as exc:
        out.status, out.reason, out.verdict = "failed", str(exc), "failed"
        return out
    out.run_ids, out.run_id = [a.run_id, b.run_id], b.run_id
    out.seconds = round(a.seconds + b.seconds, 2)
    out.outputs_changed = ["output"] if a.output != b.output else []
    ia, ib = runner.identity(a), runner.identity(b)
    out.digest_changed, out.keys = identity_diff(ia, ib)
    out.identity_changed = out.digest_changed or bool(out.keys)
    out.verdict, out.finding = verdict(row.expect, bool(out.outputs_changed),
                                       out.identity_changed)
    if row.expect == "cause" and out.identity_changed and row.vary:
        out.vary_ok, out.vary_keys = declared(runner, ia, ib, row.vary)
        if not out.vary_ok:
            out.verdict = "declaration refused"
            out.finding = f"--vary {' --vary '.join(row.vary)} still refuses"
    return out


def run_programs(runner: ProgramRunner, selected: list[UserRow]) -> dict[str, Any]:
    started = time.time()
    results: list[ProgramRow] = []
    for row in selected:
        runner.log(row.name)
        results.append(run_row(runner, row))
    counts: dict[str, int] = {}
    for r in results:
        counts[r.verdict] = counts.get(r.verdict, 0) + 1
    return {
        "format": "prov-selftest-identity/1",
        "matrix": "programs",
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "machine": machine(),
        "device": "cpu",
        "vllm_python": runner.vllm_python,
        "store": str(runner.store),
        "rows": [r.to_json() for r in results],
        "counts": counts,
        "seconds": round(time.time() - started, 1),
    }
