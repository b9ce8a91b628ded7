"""Ground truth of the GPU manifest: what prov recorded vs what torch reports in-process vs
torch's collect_env guesses. Reads the files run_h200.sh wrote, prints a table, writes JSON.

    python bench/gpu/gpu_manifest.py SNAPSHOT.json RECORD.json WORKLOAD.json COLLECT_ENV.txt OUT
"""

from __future__ import annotations

import json
import re
import sys
from importlib import metadata
from pathlib import Path

LIBS = ("libcudnn", "libcublas", "libcublasLt", "libnccl", "libcudart", "libnvrtc")


def owners() -> dict[str, str]:
    """Installed file (resolved path) -> 'dist==version', for the nvidia-* wheels."""
    out = {}
    for dist in metadata.distributions():
        name = (dist.metadata["Name"] or "").lower()
        if not (name.startswith("nvidia") or name == "torch"):
            continue
        for f in dist.files or ():
            if ".so" in f.name:
                try:
                    out[str(Path(dist.locate_file(f)).resolve())] = f"{name}=={dist.version}"
                except OSError:
                    continue
    return out


def load(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        return {"missing": f"{path}: {exc}"}


def flat(d, prefix=""):
    if isinstance(d, dict):
        for k, v in d.items():
            yield from flat(v, f"{prefix}.{k}" if prefix else str(k))
    else:
        yield prefix, d


def main(argv: list[str]) -> int:
    snap_p, rec_p, work_p, cenv_p, out_p = map(Path, argv)
    snap, rec, work = load(snap_p), load(rec_p), load(work_p)
    cenv = cenv_p.read_text() if cenv_p.is_file() else ""
    facts = snap.get("facts", snap)
    gpu = {k: v for k, v in flat(facts.get("gpu", {}))
           if not any(s in k for s in ("temperature", "power_draw", "utilization", "memory_used",
                                       "serial", "uuid"))}
    torch_sec = {k: v for k, v in flat(facts.get("torch", {}))
                 if re.search(r"cudnn|nccl|cuda|cublas", k)}
    record = rec  # `prov show RUN --json`: the run record itself
    libs = record.get("loaded_libraries") or []
    own = owners()
    loaded = []
    for lib in libs:
        name = lib.get("name", "")
        if name.startswith(LIBS):
            path = lib.get("path", "")
            try:
                real = str(Path(path).resolve())
            except OSError:
                real = path
            loaded.append({"name": name, "path": path, "sha256": lib.get("sha256"),
                           "owner": own.get(real, "not from a Python wheel")})
    inproc = {"torch.backends.cudnn.version()": work.get("cudnn_version"),
              "torch.cuda.nccl.version()": work.get("nccl_version"),
              "torch.version.cuda": work.get("torch_cuda"),
              "ctypes (loaded libs)": work.get("loaded"), "nccl_allreduce":
              work.get("nccl_allreduce", work.get("nccl_error"))}
    guesses = {m.group(1).strip(): m.group(2).strip() for m in re.finditer(
        r"^(CUDA runtime version|CUDA used to build PyTorch|cuDNN version|Nvidia driver version|"
        r"GPU models and configuration|Is CUDA available)\s*:\s*(.*(?:\n(?!\S).*)*)",
        cenv, re.M)}
    doc = {"gpu_manifest": gpu, "torch_section": torch_sec, "loaded_by_workload": loaded,
           "in_process": inproc, "collect_env": guesses,
           "run_id": record.get("run_id")}
    Path(out_p).write_text(json.dumps(doc, indent=1, default=str))
    print("== GPU manifest (prov snapshot) ==")
    for k, v in gpu.items():
        print(f"  gpu.{k} = {v}")
    print("== torch section (prov's probe) ==")
    for k, v in torch_sec.items():
        print(f"  torch.{k} = {v}")
    print("== libraries the workload loaded (prov exec, from /proc/<pid>/maps) ==")
    for e in loaded:
        print(f"  {e['name']:28s} {e['owner']:40s} {e['path']}")
    print("== in-process (torch and the libraries' own version calls) ==")
    for k, v in inproc.items():
        print(f"  {k} = {v}")
    print("== torch.utils.collect_env guesses ==")
    for k, v in guesses.items():
        print(f"  {k}: {v}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
