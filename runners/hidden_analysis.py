"""Divergence of two hidden-state runs (runners/hidden.py): load both runs' final hidden
states and the output head (digest checked) onto one device, rebuild and analyse in chunks
(runners/gpu/rebuild.py), and report the rebuild floor for the disclosure card.

The device: PROV_ANALYSIS_DEVICE (cpu | cuda | auto, default auto: cuda when torch sees a
GPU). On the host the chunks are analysed by the same numpy code as score results.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.errors import ProvError
from runners import hidden as hs
from runners.execute import WorkerRun
from runners.prepare import Prepared


class HiddenStateError(ProvError, ValueError):
    """Hidden-state results that cannot be analysed together (mixed storage, another output
    head than the runs', an unknown analysis device)."""


def _weight_files(model_dir: Path) -> list[Path]:
    index = model_dir / "model.safetensors.index.json"
    if index.is_file():
        names = sorted(set(json.loads(index.read_text())["weight_map"].values()))
        return [model_dir / n for n in names]
    return sorted(model_dir.glob("*.safetensors"))


def load_head(model_dir: Path, name: str, dtype: str, digest: str) -> np.ndarray:
    """The output head's raw bits from the model directory's safetensors, refused unless
    their sha256 is the one the runs recorded (another checkpoint would rebuild other
    logits silently)."""
    import torch
    from safetensors import safe_open

    for path in _weight_files(Path(model_dir)):
        with safe_open(str(path), framework="pt") as f:
            if name in f.keys():  # noqa: SIM118 (safe_open has no __contains__)
                head = hs.raw_bits(f.get_tensor(name).to(getattr(torch, dtype)))
                break
    else:
        raise HiddenStateError(f"{model_dir}: no tensor {name!r} (the output head) in its "
                               "safetensors files")
    got = hs.head_sha256(head)
    if got != digest:
        raise HiddenStateError(f"{model_dir}: output head {name} has sha256 {got[:16]}..., "
                               f"the runs recorded {digest[:16]}...: not the runs' model")
    return head




def analysis_device() -> str:
    want = os.environ.get("PROV_ANALYSIS_DEVICE", "auto")
    if want not in ("auto", "cpu", "cuda"):
        raise HiddenStateError("PROV_ANALYSIS_DEVICE must be auto, cpu or cuda")
    if want == "cpu":
        return want
    import torch

    if torch.cuda.is_available():
        return "cuda"
    if want == "cuda":
        raise HiddenStateError("PROV_ANALYSIS_DEVICE=cuda, but torch sees no GPU here")
    return "cpu"


def is_hidden(run: WorkerRun) -> bool:
    return (run.meta.get("storage") or {}).get("kind") == "hidden"


def _storage(ref: WorkerRun, cand: WorkerRun) -> dict[str, Any]:
    a, b = ref.meta["storage"], cand.meta.get("storage") or {}
    if b.get("kind") != "hidden":
        raise HiddenStateError("one run stored hidden states, the other logits: rerun both "
                                  "with the same store= option")
    for key in ("hidden_dtype", "hidden_shape", "head"):
        if a.get(key) != b.get(key):
            raise HiddenStateError(f"the runs' hidden-state storage differs in {key}: "
                                      f"{a.get(key)} vs {b.get(key)}")
    return a


def _sample(run_dir: Path) -> tuple[np.ndarray, np.ndarray]:
    with np.load(Path(run_dir) / "scores.npz") as z:
        return z["sample_rows"], z["sample_logits"]


def _tensor(raw: np.ndarray, dtype: str, device: str):
    import torch

    return torch.from_numpy(np.ascontiguousarray(raw)).view(getattr(torch, dtype)).to(device)


def analyse_runs(ref: WorkerRun, cand: WorkerRun, prep: Prepared, workdir: Path,
                 run_dirs: tuple[Path, Path] | None = None, repeat: WorkerRun | None = None
                 ) -> tuple[dict[str, np.ndarray], dict[str, Any], dict[str, Any],
                            dict[str, Any] | None]:
    """(per-position arrays, self_kl_floor for the summary, analysis facts, the noise floor
    against `repeat` or None). run_dirs: the two workers' output directories (default
    WORKDIR/ref, WORKDIR/cand); per-position results go to WORKDIR/positions."""
    from runners.gpu.rebuild import analyse_hidden

    st = _storage(ref, cand)
    dtype, head_info = st["hidden_dtype"], st["head"]
    device = analysis_device()
    head = _tensor(load_head(prep.model, head_info["tensor"], head_info["dtype"],
                             head_info["sha256"]), head_info["dtype"], device)
    samples = {}
    dirs = run_dirs or (Path(workdir) / "ref", Path(workdir) / "cand")
    for side, d in zip(("ref", "cand"), dirs, strict=True):
        rows, raw = _sample(d)
        samples[side] = (rows, hs.to_float32(raw, head_info["dtype"]))
    res = analyse_hidden(_tensor(ref.final_hidden, dtype, device),
                         _tensor(cand.final_hidden, dtype, device), head, prep.ids[1:],
                         Path(workdir) / "positions", samples)
    kernel = "runners/gpu/kernels.py:stats_online_kernel (fp32)" if res.fused \
        else "numpy float64 (runners/analysis/kl.py)"
    floor = {"storage_dtype": f"{dtype} final hidden states",
             "rebuild": f"hidden @ {head_info['tensor']}^T in {dtype} on {res.device}, "
                        f"{res.chunk_rows} rows a chunk; KL by {kernel}",
             **{side: {"mean": f["self_kl_mean"], "max": f["self_kl_max"], **f}
                for side, f in res.floor.items()}}
    facts = {"device": res.device, "chunk_rows": res.chunk_rows, "seconds": res.seconds,
             "kernel": kernel,
             "head": head_info, "hidden_shape": st["hidden_shape"]}
    noise = None
    if repeat is not None:
        _storage(ref, repeat)
        noise = noise_floor_hidden(ref.final_hidden, repeat.final_hidden, head, dtype, device,
                                   np.asarray(prep.ids[1:]), Path(workdir) / "positions-noise")
    return res.arrays, floor, facts, noise


def noise_floor_hidden(ref_raw: np.ndarray, rep_raw: np.ndarray, head, dtype: str,
                       device: str, next_ids: np.ndarray, out_dir: Path) -> dict[str, Any]:
    """The noise floor of a hidden-state reference: rows whose stored hidden states are
    bit-identical give bit-identical logits (the same matmul on the same device) and count
    0; the others are rebuilt and analysed like the divergence, with max |delta logit|."""
    from runners.analysis.noise import floor_figures, same_rows
    from runners.gpu.rebuild import DELTA_FIELD, analyse_hidden

    same = same_rows(ref_raw, rep_raw)
    diff = np.flatnonzero(~same)
    rc = cr = delta = np.zeros(0)
    agree = np.zeros(0, dtype=bool)
    if len(diff):
        res = analyse_hidden(_tensor(ref_raw[diff], dtype, device),
                             _tensor(rep_raw[diff], dtype, device), head, next_ids[diff],
                             out_dir, logit_delta=True)
        a = res.arrays
        rc, cr, delta = a["kl_ref_cand"], a["kl_cand_ref"], a[DELTA_FIELD]
        agree = np.asarray(a["ref_top1"]) == np.asarray(a["cand_top1"])
    return floor_figures(same, rc, cr, agree, delta,
                         f"the stored {dtype} final hidden states, bit for bit; where they "
                         "differ, the logits rebuilt from them")


def floor_text(floor: dict[str, Any]) -> str:
    """The rebuild floor as one sentence for the disclosure card."""
    parts = []
    for side in ("ref", "cand"):
        f = floor[side]
        parts.append(f"{side}: max |delta logit| {f['max_abs_logit_delta']:.3g}, self-KL "
                     f"mean {f['self_kl_mean']:.3g} / max {f['self_kl_max']:.3g} nats, "
                     f"{f['bit_identical_rows']}/{f['rows']} rows bit-identical")
    return "; ".join(parts)
