"""Replay a captured agentic workstream under one or more configurations.

For each configuration a worker process (runners.workstream.worker, through the launcher:
`prov exec`'s supervisor or standalone) scores the captured trace teacher-forced and
generates greedily at every captured tool-call turn, open loop (captured prefix) and closed
loop (its own earlier generations in context). Here the generations are judged
(runners.workstream.checks), teacher-forced agreement and KL against the first
(reference) configuration are broken down per segment type and per turn, and a
`prov-result/1` result of kind `replay` is written with its disclosure card.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import write_atomic
from provenance.model.disclosure import (
    Aggregation,
    Checkpoint,
    Direction,
    DisclosureCard,
    NoCalibration,
    Positions,
    Text,
)
from provenance.model.policy import Policy
from provenance.store import RunRecord
from runners.analysis import find_clusters, position_stats
from runners.cards import NOT_CALIBRATED, environment, full_vocabulary, top_k
from runners.engines import EngineConfig, EngineError
from runners.fingerprint import model_digest, tokenizer_digest
from runners.launch import (
    Check,
    Launcher,
    check_launched,
    runtime_of,
    standalone,
    worker_env,
    worker_python,
)
from runners.results import write_result
from runners.workstream.checks import OK, check_turn
from runners.workstream.kvquant import KV_CACHE_CHOICES
from runners.workstream.render import SEGMENTS, Rendered, ids_digest, render_workstream
from runners.workstream.template import find_template
from runners.workstream.types import Workstream

GEN_SLACK = 16  # generated tokens allowed beyond the captured completion's length


@dataclass(frozen=True)
class ReplayConfig:
    """An engine spec plus `kv_cache=auto|int8|int4` (the transformers KV-cache emulation)."""

    engine: EngineConfig
    kv_cache: str = "auto"

    @classmethod
    def parse(cls, spec: str) -> ReplayConfig:
        head, _, rest = spec.partition(":")
        kv, keep = "auto", []
        for item in filter(None, (p.strip() for p in rest.split(","))):
            if item.startswith("kv_cache="):
                kv = item.split("=", 1)[1]
            else:
                keep.append(item)
        if kv not in KV_CACHE_CHOICES:
            raise EngineError(f"kv_cache must be one of {', '.join(KV_CACHE_CHOICES)}")
        engine = EngineConfig.parse(head + (":" + ",".join(keep) if keep else ""))
        if kv != "auto" and engine.engine != "transformers":
            raise EngineError("kv_cache= is the transformers emulation; vLLM takes "
                              "kv_cache_dtype=")
        return cls(engine, kv)

    @property
    def label(self) -> str:
        if self.kv_cache == "auto":
            return self.engine.spec
        sep = "," if ":" in self.engine.spec else ":"
        return f"{self.engine.spec}{sep}kv_cache={self.kv_cache}"


@dataclass
class ReplayRun:
    config: ReplayConfig
    meta: dict[str, Any]
    scores: np.ndarray
    run_id: str | None
    record: RunRecord | None


@dataclass
class ReplayOutcome:
    summary: dict[str, Any]
    runs: list[ReplayRun]
    rendered: Rendered
    result_path: Path


def build_job(r: Rendered) -> dict[str, Any]:
    turns = []
    for t in r.turns:
        comp = r.pieces[t.completion_piece].ids
        last_end = max((k for k, i in enumerate(comp) if i in r.end_ids), default=len(comp))
        turns.append({"msg": t.msg, "prompt_piece": t.prompt_piece,
                      "completion_piece": t.completion_piece,
                      "max_new": len(comp) + GEN_SLACK, "tail": comp[last_end + 1:]})
    return {"pieces": [p.ids for p in r.pieces], "turns": turns, "end_ids": r.end_ids}


def _launch(cfg: ReplayConfig, model: Path, job: Path, out: Path, name: str,
            launcher: Launcher, extra_params: dict[str, Any]) -> ReplayRun:
    argv = [worker_python(cfg.engine), "-m", "runners.workstream.worker",
            *cfg.engine.worker_args(), "--kv-cache-dtype", cfg.kv_cache, "--model", str(model),
            "--job", str(job), "--out", str(out)]
    params = {**cfg.engine.params(), **extra_params}
    if cfg.kv_cache != "auto":
        params["kv_cache_dtype"] = f"{cfg.kv_cache}-emulated"
    done = launcher(argv, name=name, env=worker_env(cfg.engine),
                    outputs=(out / "scores.npz", out / "replay.json"), params=params)
    check_launched(done, f"{name} ({cfg.label})")
    meta = json.loads((out / "replay.json").read_text())
    meta["runtime"] = runtime_of(done)
    with np.load(out / "scores.npz") as npz:
        return ReplayRun(cfg, meta, npz["scores"], done.run_id, done.record)


def _decode(tok, ids: list[int]) -> str:
    return tok.decode(list(ids), skip_special_tokens=False)


def _verdicts(run: ReplayRun, r: Rendered, ws: Workstream, tok, mode: str) -> dict[str, Any]:
    turns = []
    for k, (t, gen) in enumerate(zip(r.turns, run.meta[mode], strict=True)):
        comp = r.pieces[t.completion_piece].ids
        cut = next((j for j, i in enumerate(comp) if i in r.end_ids), len(comp))
        captured = _decode(tok, comp[:cut])
        text = _decode(tok, gen["ids"])
        res = check_turn(text, captured, ws)
        res.update(turn=k, msg=t.msg, stopped=gen["stopped"], generated=text,
                   exact_ids=gen["ids"] == comp[:cut],
                   captured_tools=[c.name for c in ws.messages[t.msg].tool_calls])
        turns.append(res)
    oks = [t["ok"] for t in turns]
    first = next((k for k, ok in enumerate(oks) if not ok), None)
    # no failure, or a failure in the last turn: there is no later turn to recover in
    recovered = None if first is None or first == len(oks) - 1 else any(oks[first + 1:])
    return {"turns": turns, "first_failure": first, "recovered": recovered,
            "reproduced": sum(oks), "of": len(oks)}


def _by_segment(mask_rows: np.ndarray, labels: np.ndarray, msgs: np.ndarray,
                values: dict[str, np.ndarray]) -> tuple[dict, dict]:
    """Per segment type and per message: count and the mean of each value over rows."""
    seg, turn = {}, {}
    for name, sel in [(s, labels == i) for i, s in enumerate(SEGMENTS)]:
        rows = sel & mask_rows
        if rows.any():
            seg[name] = {"positions": int(rows.sum()),
                         **{k: float(v[rows].mean()) for k, v in values.items()}}
    for m in np.unique(msgs):
        rows = (msgs == m) & mask_rows
        if rows.any():
            turn[str(int(m))] = {"positions": int(rows.sum()),
                                 **{k: float(v[rows].mean()) for k, v in values.items()}}
    return seg, turn


def analyse_runs(runs: list[ReplayRun], r: Rendered, ws: Workstream, tok,
                 gap: int = 8) -> tuple[dict[str, Any], dict[str, np.ndarray]]:
    ids = r.ids
    labels, msgs = r.labels[1:], r.msg_of_token[1:]  # row j predicts token j+1
    every = np.ones(len(ids) - 1, dtype=bool)
    arrays: dict[str, np.ndarray] = {"ids": ids, "labels": r.labels,
                                     "msg_of_token": r.msg_of_token}
    configs = []
    ref = runs[0]
    for i, run in enumerate(runs):
        top1 = np.nanargmax(np.where(np.isnan(run.scores), -np.inf, run.scores), axis=1)
        cap = top1 == ids[1:]
        arrays[f"c{i}_top1"] = top1
        seg, turn = _by_segment(every, labels, msgs, {"captured_top1": cap.astype(float)})
        entry: dict[str, Any] = {
            "config": run.config.label, "run_id": run.run_id,
            "runtime": run.meta["runtime"],
            "teacher_forced": {"captured_top1": float(cap.mean()), "by_segment": seg,
                               "by_message": turn},
            "open_loop": _verdicts(run, r, ws, tok, "open_loop"),
            "closed_loop": _verdicts(run, r, ws, tok, "closed_loop"),
        }
        if i > 0:
            st = position_stats(ref.scores, run.scores, ids[1:])
            arrays[f"c{i}_agree_ref"] = st.agree
            arrays[f"c{i}_kl_ref_cand"] = st.kl_ref_cand
            seg, turn = _by_segment(every, labels, msgs,
                                    {"top1_agreement": st.agree.astype(float),
                                     "mean_kl_ref_cand": st.kl_ref_cand})
            for name, d in seg.items():
                d["disagreements"] = int((~st.agree & (labels == SEGMENTS.index(name))).sum())
            clusters = [c.to_json() for c in find_clusters(st.agree, st.kl_ref_cand, gap=gap,
                                                           decode=r.decode)]
            for c in clusters:  # which segment types each cluster's positions fall in
                c["segments"] = sorted({SEGMENTS[x] for x in labels[c["start"]:c["end"] + 1]})
            entry["vs_reference"] = {
                "top1_agreement": float(st.agree.mean()),
                "disagreements": int((~st.agree).sum()),
                "mean_kl_ref_cand": float(st.kl_ref_cand.mean()),
                "max_kl_ref_cand": float(st.kl_ref_cand.max()),
                "by_segment": seg, "by_message": turn, "clusters": clusters,
            }
        configs.append(entry)
    matrix = {c["config"]: {mode: [t["verdict"] for t in c[mode]["turns"]]
                            for mode in ("open_loop", "closed_loop")} for c in configs}
    summary = {
        "workstream": ws.name, "positions": int(len(ids) - 1),
        "turns": [{"turn": k, "msg": t.msg,
                   "tools": [c.name for c in ws.messages[t.msg].tool_calls]}
                  for k, t in enumerate(r.turns)],
        "configs": configs, "matrix": matrix,
        "all_reproduced": {c["config"]: c["closed_loop"]["reproduced"] == c["closed_loop"]["of"]
                           and c["open_loop"]["reproduced"] == c["open_loop"]["of"]
                           for c in configs},
    }
    return summary, arrays


def replay_card(runs: list[ReplayRun], r: Rendered, ws: Workstream, mdig: str, tdig: str,
                summary: dict[str, Any]) -> DisclosureCard:
    n = len(r.ids)
    full = all(not np.isnan(run.scores).any() for run in runs)
    emulated = [run.config.label for run in runs if run.config.kv_cache != "auto"]
    calibration = NOT_CALIBRATED.reason + (
        "; emulated KV caches (" + ", ".join(emulated) + ") use a per-token, per-head absmax "
        "scale computed on the fly" if emulated else "")
    return DisclosureCard(
        reference_checkpoint=Checkpoint(digest=mdig, tokenizer_digest=tdig,
                                        reference_engine=runs[0].config.label,
                                        chat_template_digest=r.template_digest),
        runtime_environment=environment([run.run_id for run in runs],
                                        {run.config.label: run.meta["runtime"]
                                         for run in runs}),
        evaluation_text=Text(digest=ws.digest, source=f"workstream {ws.name}",
                             tokens_total=n, token_ids_digest=r.ids_digest,
                             chat_template_digest=r.template_digest),
        calibration_data=NoCalibration(calibration),
        context_lengths=(n,),
        sampled_positions=Positions(
            count=n - 1, rule="every next-token position of one teacher-forced sequence, "
                              f"none skipped; generation: each of the {len(r.turns)} captured "
                              "tool-call turns from its captured (open loop) or replayed "
                              "(closed loop) prefix"),
        kl_direction=Direction.REF_CAND,
        vocabulary_truncation=full_vocabulary("renormalised in float64") if full else
        top_k(True, "truncated estimate with a residual bucket"),
        aggregation=Aggregation(
            method="per-position values (kl_ref_cand, nats; the reference is the first "
                   "configuration); means per segment type (system, user, assistant_prose, "
                   "tool_call, tool_result, template) and per message; disagreement clusters "
                   "merged across gaps"),
    )


def run_replay(ws: Workstream, model: Path, configs: list[ReplayConfig], workdir: Path,
               result: Path, *, check: Check, launcher: Launcher = standalone,
               chat_template: Path | None = None, policy: Policy | None = None) -> ReplayOutcome:
    """Replay the workstream under each configuration; `check` (the gate; `ungated` for
    standalone runs) compares every configuration's run with the first before any figure."""
    from tokenizers import Tokenizer

    model = Path(model).resolve()
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    template = find_template(model, chat_template)
    r = render_workstream(ws, template, model / "tokenizer.json")
    tok = Tokenizer.from_file(str(model / "tokenizer.json"))
    job = workdir / "job.json"
    write_atomic(job, json.dumps(build_job(r)).encode())
    extra = {"workstream_digest": ws.digest, "chat_template_digest": r.template_digest,
             "workstream_ids_digest": r.ids_digest}  # a "token" name would be redacted
    runs = [_launch(c, model, job, workdir / f"c{i}", f"c{i}", launcher, extra)
            for i, c in enumerate(configs)]
    comparisons = [check(runs[0], run) for run in runs[1:]]
    summary, arrays = analyse_runs(runs, r, ws, tok)
    mdig, tdig = model_digest(model), tokenizer_digest(model)
    meta = {
        "engines": [{**c.engine.to_json(), "kv_cache": c.kv_cache} for c in configs],
        "runtime": {run.config.label: run.meta["runtime"] for run in runs},
        "model_digest": mdig, "tokenizer_digest": tdig,
        "text_digest": "sha256:" + __import__("hashlib").sha256(r.text.encode()).hexdigest(),
        "workstream_digest": ws.digest, "chat_template_digest": r.template_digest,
        "token_ids_digest": ids_digest(r.ids), "ids_match_whole_text": r.ids_match_whole_text,
        "positions": {"n_tokens": int(len(r.ids)), "scored": int(len(r.ids) - 1)},
        "segments": list(SEGMENTS), "comparisons": comparisons,
        "runs": [{"config": run.config.label, "run_id": run.run_id} for run in runs],
        "summary": summary,
    }
    path = write_result(result, "replay", meta, arrays,
                        replay_card(runs, r, ws, mdig, tdig, summary), policy)
    return ReplayOutcome(summary, runs, r, path)


__all__ = ["OK", "ReplayConfig", "ReplayOutcome", "ReplayRun", "analyse_runs", "run_replay"]
