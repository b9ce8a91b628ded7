"""Invariance: does one configuration give the same bits whatever else is in the batch?

One worker process (runners/invariance_worker.py) loads the engine once and runs a plan of
batched calls; the probes compare what the same prompt got under two conditions, bit for
bit per position, on the prompt logprobs (actual token, top-1 token and its logprob) and on
a greedy continuation (tokens and their logprobs):

- run_to_run: the same batch twice;
- needle: a prompt alone vs at seeded random positions among N filler prompts of mixed
  lengths;
- batch_size: every prompt of the batch alone (batch size 1) vs in the batch of N + 1;
- prefix_cache (vLLM with prefix_caching=1): cold vs warm, and a prompt sharing a prefix
  with one run before it; continuations only (vLLM computes prompt logprobs without
  reading the prefix cache);
- chunked_prefill (vLLM, max_num_batched_tokens given): prompts of lengths either side of
  one and two budgets, alone; the positions they share compared with the shortest;
- served (a running server, engine `server`): each prompt by one client alone vs the same
  prompts sent by `clients` (16) concurrent clients at once.

Through a server (runners/engines/served.py) every call of N prompts is N concurrent clients,
so needle and batch_size are concurrency probes there too; the probing run is a client of the
server run, bound to it (`server.*`), and the knobs are read from that server's record.

A negative control runs beside them in the same engine: the planted batch-dependent op
(runners/planted.py) switched on for a needle probe. It must differ; if it does not, the
probes could not have seen a difference and the verdict is "unproven", never "invariant".
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from provenance.model.atomic import write_atomic
from provenance.model.disclosure import Aggregation, DisclosureCard, NotApplicable, Positions
from provenance.model.policy import Policy
from runners.cards import NOT_CALIBRATED, checkpoint, environment, full_vocabulary, text
from runners.engines import EngineConfig
from runners.engines.served import CONTROL_PROCESSOR
from runners.launch import (
    Launched,
    Launcher,
    check_launched,
    runtime_of,
    standalone,
    worker_env,
    worker_python,
)
from runners.prepare import Prepared
from runners.results import write_result

PROBES = ("run_to_run", "needle", "batch_size", "prefix_cache", "chunked_prefill", "served")
CONTROLS = ("batch_fp16_sum", "noop")
VERDICTS = ("invariant", "not invariant", "unproven")
TIMING_ROUNDS = 5


@dataclass(frozen=True)
class InvarianceSpec:
    fillers: int = 16
    seed: int = 0
    needle_tokens: int = 96
    filler_min: int = 8
    filler_max: int = 64
    placements: int = 3
    max_new: int = 8
    control: str = "batch_fp16_sum"
    probes: tuple[str, ...] = PROBES
    clients: int = 16

    def check(self) -> None:
        if not 1 <= self.fillers <= 64:
            raise ValueError("fillers must be 1..64")
        if self.control not in CONTROLS:
            raise ValueError(f"control must be one of {', '.join(CONTROLS)}")
        if unknown := set(self.probes) - set(PROBES):
            raise ValueError(f"unknown probe(s) {sorted(unknown)} (known: {', '.join(PROBES)})")
        if not 2 <= self.filler_min <= self.filler_max or self.needle_tokens < 8:
            raise ValueError("needle_tokens >= 8 and 2 <= filler_min <= filler_max")
        if self.max_new < 1 or self.placements < 1:
            raise ValueError("max_new and placements must be >= 1")
        if not 2 <= self.clients <= 64:
            raise ValueError("clients must be 2..64")


@dataclass
class InvarianceOutcome:
    verdict: str
    summary: dict[str, Any]
    run_id: str | None
    result_path: Path


@dataclass
class Plan:
    prompts: list[list[int]]
    calls: list[dict[str, Any]] = field(default_factory=list)
    # probe -> list of (label, (call tag, prompt index), (call tag, prompt index), options)
    pairs: dict[str, list[tuple]] = field(default_factory=dict)
    skipped: dict[str, str] = field(default_factory=dict)
    max_new: int = 8

    def call(self, tag: str, prompts: list[int], prompt_logprobs: bool = True,
             reset: bool = False, plant: str | None = None) -> None:
        self.calls.append({"tag": tag, "prompts": prompts, "prompt_logprobs": prompt_logprobs,
                           "reset_cache": reset, "plant": plant})

    def to_json(self, max_len: int) -> dict[str, Any]:
        return {"prompts": self.prompts, "calls": self.calls, "max_new": self.max_new,
                "max_len": max_len}


def _slice(pool: np.ndarray, start: int, n: int) -> list[int]:
    """n tokens of the pool from start, wrapping (a short text still makes long prompts)."""
    idx = (start + np.arange(n)) % len(pool)
    return [int(x) for x in pool[idx]]


def build_plan(spec: InvarianceSpec, config: EngineConfig, pool: np.ndarray) -> Plan:
    rng = np.random.default_rng(spec.seed)
    needle = _slice(pool, 0, spec.needle_tokens)
    lengths = rng.integers(spec.filler_min, spec.filler_max + 1, size=spec.fillers)
    starts = rng.integers(0, len(pool), size=spec.fillers)
    plan = Plan([needle] + [_slice(pool, int(s), int(n)) for s, n in zip(starts, lengths,
                                                                        strict=True)],
                max_new=spec.max_new)
    fillers = list(range(1, spec.fillers + 1))
    spots = sorted(int(x) for x in rng.choice(spec.fillers + 1,
                                              size=min(spec.placements, spec.fillers + 1),
                                              replace=False))
    batches = [fillers[:s] + [0] + fillers[s:] for s in spots]
    wanted = set(spec.probes)
    burst = _burst(spec, config, plan) if "served" in wanted else []
    singles = range(len(plan.prompts)) if "batch_size" in wanted else sorted({0, *burst})
    for i in singles:
        plan.call(f"single.{i}", [i])
    for k, b in enumerate(batches):
        plan.call(f"batch.{k}", b)
    at = {k: b.index(0) for k, b in enumerate(batches)}
    if "run_to_run" in wanted:
        plan.call("batch.0.again", batches[0])
        plan.pairs["run_to_run"] = [(f"prompt {i}", ("batch.0", j), ("batch.0.again", j), {})
                                    for j, i in enumerate(batches[0])]
    if "needle" in wanted:
        plan.pairs["needle"] = [(f"needle at {at[k]} of {len(b)}", ("single.0", 0),
                                 (f"batch.{k}", at[k]), {}) for k, b in enumerate(batches)]
    if "batch_size" in wanted:
        plan.pairs["batch_size"] = [(f"prompt {i}: 1 vs {len(batches[0])}", (f"single.{i}", 0),
                                     ("batch.0", j), {}) for j, i in enumerate(batches[0])]
    if burst:
        plan.call("served.burst", burst)
        plan.pairs["served"] = [(f"client {j} (prompt {i}): 1 vs {len(burst)} clients",
                                 (f"single.{i}", 0), ("served.burst", j), {})
                                for j, i in enumerate(burst)]
    if "prefix_cache" in wanted:
        _prefix_calls(plan, config, needle, pool)
    if "chunked_prefill" in wanted:
        _chunk_calls(plan, config, pool)
    for k, b in enumerate(batches):  # the negative control: planted op on, needle probe
        plan.call(f"control.batch.{k}", b, plant=spec.control)
    plan.call("control.single.0", [0], plant=spec.control)
    # throughput: the first batch again, warm, without prompt logprobs, from a cold prefix
    # cache (vLLM offline), so two settings are timed on the same work
    for r in range(TIMING_ROUNDS):
        plan.call(f"timing.{r}", batches[0], prompt_logprobs=False,
                  reset=config.engine == "vllm")
    plan.pairs["control"] = [(f"needle at {at[k]} of {len(b)}", ("control.single.0", 0),
                              (f"control.batch.{k}", at[k]), {}) for k, b in enumerate(batches)]
    return plan


def _burst(spec: InvarianceSpec, config: EngineConfig, plan: Plan) -> list[int]:
    """The prompts of the served probe's concurrent clients: the needle, then the fillers
    (again from the first when there are fewer fillers than clients)."""
    if config.engine != "server":
        plan.skipped["served"] = ("not applicable: an offline engine has no clients (probe a "
                                  "running server with engine server:server_url=...)")
        return []
    return [0] + [1 + k % spec.fillers for k in range(spec.clients - 1)]


def _prefix_calls(plan: Plan, config: EngineConfig, needle: list[int], pool: np.ndarray) -> None:
    if config.engine == "transformers":
        plan.skipped["prefix_cache"] = \
            "not applicable: the transformers engine keeps no prefix cache"
        return
    if str(config.get("prefix_caching", "0")).lower() not in ("1", "true", "yes", "on"):
        plan.skipped["prefix_cache"] = \
            "not applicable: prefix caching is off in this configuration (prefix_caching=1)"
        return
    shared = needle[: max(len(needle) * 3 // 4, 1)]
    a = len(plan.prompts)
    plan.prompts += [shared + _slice(pool, 7919, 16), shared + _slice(pool, 104729, 16)]
    plan.call("prefix.cold", [0], prompt_logprobs=False, reset=True)
    plan.call("prefix.warm", [0], prompt_logprobs=False)
    plan.call("shared.cold", [a + 1], prompt_logprobs=False, reset=True)
    plan.call("shared.prime", [a], prompt_logprobs=False, reset=True)
    plan.call("shared.warm", [a + 1], prompt_logprobs=False)
    cont = {"prompt": False}
    plan.pairs["prefix_cache"] = [
        ("needle cold vs warm", ("prefix.cold", 0), ("prefix.warm", 0), cont),
        (f"shared prefix of {len(shared)} tokens", ("shared.cold", 0), ("shared.warm", 0), cont)]


def _chunk_calls(plan: Plan, config: EngineConfig, pool: np.ndarray) -> None:
    if config.engine == "transformers":
        plan.skipped["chunked_prefill"] = \
            "not applicable: the transformers engine does not chunk prefills"
        return
    if config.get("max_num_batched_tokens") is None:
        plan.skipped["chunked_prefill"] = \
            "not run: give max_num_batched_tokens=M in the engine spec to probe its boundaries"
        return
    m = int(str(config.get("max_num_batched_tokens")))
    lengths = [m - 1, m, m + 1, 2 * m - 1, 2 * m + 1]
    first = len(plan.prompts)
    plan.prompts += [_slice(pool, 0, n) for n in lengths]
    for k, n in enumerate(lengths):
        plan.call(f"chunk.{n}", [first + k])
    shared = {"upto": lengths[0] - 1, "continuation": False}
    plan.pairs["chunked_prefill"] = [
        (f"{lengths[0]} vs {n} tokens (budget {m})", (f"chunk.{lengths[0]}", 0),
         (f"chunk.{n}", 0), shared) for n in lengths[1:]]


def max_len(plan: Plan) -> int:
    return max(map(len, plan.prompts)) + plan.max_new + 8


# ---- comparison -------------------------------------------------------------------------

def _bits(x: np.ndarray) -> np.ndarray:
    return np.ascontiguousarray(x, dtype=np.float32).view(np.int32)


def compare_obs(a: dict[str, np.ndarray], b: dict[str, np.ndarray], prompt: bool = True,
                continuation: bool = True, upto: int | None = None) -> dict[str, Any]:
    """Bitwise, per position: the first differing position (prompt position j = the
    prediction of token j + 1), top-1 agreement, the largest absolute logprob difference."""
    first: dict[str, Any] | None = None
    agree = total = 0
    worst = 0.0
    if prompt:
        n = min(len(a["lp"]), len(b["lp"])) if upto is None else upto
        same = (_bits(a["lp"][:n]) == _bits(b["lp"][:n])) & \
            (a["top1"][:n] == b["top1"][:n]) & (_bits(a["top1lp"][:n]) == _bits(b["top1lp"][:n]))
        if n and not same.all():
            first = {"where": "prompt", "position": int(np.argmin(same)) + 1}
        agree += int((a["top1"][:n] == b["top1"][:n]).sum())
        total += n
        if n:
            worst = max(worst, float(np.max(np.abs(a["lp"][:n].astype(np.float64)
                                                   - b["lp"][:n]))))
    if continuation:
        g = min(len(a["gen"]), len(b["gen"]))
        tok = a["gen"][:g] == b["gen"][:g]
        same = tok & (_bits(a["genlp"][:g]) == _bits(b["genlp"][:g]))
        if first is None and g and not same.all():
            first = {"where": "continuation", "position": int(np.argmin(same))}
        # logprobs compared while the continuations still agree (after, they score others)
        upto_tok = int(np.argmin(tok)) if not tok.all() else g
        agree += int(tok.sum())
        total += g
        if upto_tok:
            worst = max(worst, float(np.max(np.abs(a["genlp"][:upto_tok].astype(np.float64)
                                                   - b["genlp"][:upto_tok]))))
        if len(a["gen"]) != len(b["gen"]) and first is None:
            first = {"where": "continuation", "position": g}
    return {"identical": first is None, "first_difference": first,
            "top1_agreement": agree / total if total else 1.0, "positions": total,
            "max_abs_logprob_diff": worst}


def probe_summary(results: list[tuple[str, dict[str, Any]]]) -> dict[str, Any]:
    differing = [(label, r) for label, r in results if not r["identical"]]
    positions = sum(r["positions"] for _, r in results)
    agreed = sum(r["top1_agreement"] * r["positions"] for _, r in results)
    first = None
    if differing:
        label, r = differing[0]
        first = {"pair": label, **r["first_difference"]}
    return {"identical": not differing, "pairs": len(results), "differing_pairs": len(differing),
            "first_difference": first,
            "top1_agreement": agreed / positions if positions else 1.0,
            "max_abs_logprob_diff": max((r["max_abs_logprob_diff"] for _, r in results),
                                        default=0.0),
            "details": [{"pair": label, **r} for label, r in results]}


def decide(probes: dict[str, dict[str, Any]], control: dict[str, Any]) -> str:
    """not invariant: some probe differs (whatever the control did); invariant: none differs
    and the control did; unproven: none differs and neither did the control."""
    if any(not p["identical"] for p in probes.values()):
        return "not invariant"
    return "invariant" if not control["identical"] else "unproven"


def compare_plan(plan: Plan, load: Callable[[str, int], dict[str, np.ndarray]]
                 ) -> tuple[dict[str, dict[str, Any]], dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for probe, pairs in plan.pairs.items():
        res = []
        for label, (ta, ia), (tb, ib), opts in pairs:
            res.append((label, compare_obs(load(ta, ia), load(tb, ib),
                                           prompt=opts.get("prompt", True),
                                           continuation=opts.get("continuation", True),
                                           upto=opts.get("upto"))))
        out[probe] = probe_summary(res)
    control = out.pop("control")
    return out, control


# ---- the run ----------------------------------------------------------------------------

def worker_argv(config: EngineConfig, model: Path, plan: Path, out: Path) -> list[str]:
    return [worker_python(config), "-m", "runners.invariance_worker", *config.worker_args(),
            "--model", str(model), "--plan", str(plan), "--out", str(out)]


def _loader(out: Path, plan: Plan) -> Callable[[str, int], dict[str, np.ndarray]]:
    index = {c["tag"]: i for i, c in enumerate(plan.calls)}
    with np.load(out / "scores.npz") as npz:
        arrays = {k: npz[k] for k in npz.files}

    def load(tag: str, j: int) -> dict[str, np.ndarray]:
        pre = f"c{index[tag]}.p{j}."
        return {k[len(pre):]: v for k, v in arrays.items() if k.startswith(pre)}

    return load


def throughput(calls: list[dict[str, Any]]) -> dict[str, Any]:
    """Tokens per second (prompt + generated): the timing calls (the median round), and the
    probes' own batched and single calls."""
    def rate(sel: list[dict[str, Any]]) -> float | None:
        secs = sum(c["seconds"] for c in sel)
        toks = sum(c["prompt_tokens"] + c["generated_tokens"] for c in sel)
        return toks / secs if secs > 0 else None

    def tagged(prefix: str) -> list[dict[str, Any]]:
        return [c for c in calls if c["tag"].startswith(prefix)]

    rounds = sorted(r for r in (rate([c]) for c in tagged("timing.")) if r is not None)
    return {"tokens_per_s": rounds[len(rounds) // 2] if rounds else None,
            "rounds_tokens_per_s": rounds,
            "batched_tokens_per_s": rate(tagged("batch.")),
            "single_tokens_per_s": rate(tagged("single.")),
            "note": "tokens_per_s: the median of the timing rounds (the first batch again, "
                    "warm, no prompt logprobs, prefix cache reset before each: the same work "
                    "in every setting); batched/single: the probes' calls, prompt logprobs "
                    "included; wall time of the calls in the worker"}


KNOB_NAMES = ("VLLM_BATCH_INVARIANT", "enable_prefix_caching", "chunked_prefill",
              "max_num_batched_tokens", "max_num_seqs", "cudagraph_mode", "compilation_mode",
              "enforce_eager", "attn_implementation", "torch_version")


def knobs(config: EngineConfig, runtime: dict[str, Any]) -> dict[str, Any]:
    """The settings that decide invariance, as the probe read them from the engine (first
    occurrence in the run's runtime facts), beside the options the run declared."""
    found: dict[str, Any] = {}

    def walk(node: Any, path: str) -> None:
        if isinstance(node, dict):
            for k, v in node.items():
                if k in KNOB_NAMES and k not in found and not isinstance(v, dict | list):
                    found[k] = {"value": v, "at": f"runtime.{path}{k}"}
                walk(v, f"{path}{k}.")
        elif isinstance(node, list):
            for i, v in enumerate(node):
                walk(v, f"{path}{i}.")

    walk(runtime, "")
    backend = (runtime.get("vllm") or {}).get("attention_backend") or \
        runtime.get("attention_backend") or {}
    return {"declared": config.explicit(), "resolved": found,
            "attention_backend": backend.get("resolved") if isinstance(backend, dict) else None}


def served_side(config: EngineConfig, done: Launched) -> tuple[dict[str, Any], dict[str, Any]]:
    """The engine's runtime facts for the knobs, and (engine `server`) the server run the
    probing run was bound to: the server's record, never the client's word."""
    if config.engine != "server":
        return runtime_of(done), {}
    server = done.server or {}
    if not server.get("run_id"):
        why = ("the probing run was bound to no server run: start the server under "
               "`prov exec` (and probe it under prov, not --standalone) to gate on what it ran")
        return {"unavailable": why}, {"bound": False, "why": why}
    context = {k: server.get(k) for k in ("run_id", "state", "manifest_digest", "url",
                                          "servers")}
    return server.get("runtime") or {}, {"bound": True, **context}


def control_note(config: EngineConfig, control: dict[str, Any]) -> str | None:
    if not control["identical"]:
        return None
    if config.engine == "server":
        return ("the control did not differ: the server was not started with prov's control "
                f"logits processor (--logits-processors {CONTROL_PROCESSOR}), or the control "
                "was noop; the probes could not have seen a batch effect")
    return ("the control did not differ: the probes could not have seen a batch effect, so "
            "nothing is shown invariant")


def run_invariance(config: EngineConfig, prep: Prepared, spec: InvarianceSpec, workdir: Path,
                   result: Path, launcher: Launcher = standalone,
                   policy: Policy | None = None) -> InvarianceOutcome:
    spec.check()
    plan = build_plan(spec, config, prep.ids)
    workdir = Path(workdir).resolve()
    workdir.mkdir(parents=True, exist_ok=True)
    doc = json.dumps(plan.to_json(max_len(plan)), sort_keys=True).encode()
    plan_path = workdir / "plan.json"
    write_atomic(plan_path, doc)
    out = workdir / "invariance"
    params = {**config.params(), "probe": "invariance",
              "plan_sha256": hashlib.sha256(doc).hexdigest(), "control": spec.control}
    done = launcher(worker_argv(config, Path(prep.model).resolve(), plan_path, out),
                    name="invariance", env=worker_env(config),
                    outputs=(out / "scores.npz", out / "invariance.json"), params=params)
    check_launched(done, f"invariance ({config.spec})")
    wmeta = json.loads((out / "invariance.json").read_text())
    probes, control = compare_plan(plan, _loader(out, plan))
    verdict = decide(probes, control)
    runtime, server = served_side(config, done)
    summary = {"verdict": verdict, "probes": probes,
               "not_applicable": plan.skipped, "control": {"op": spec.control, **control,
                                                           "failed_as_required":
                                                           not control["identical"],
                                                           "note": control_note(config,
                                                                                control)},
               "throughput": throughput(wmeta["calls"]),
               "knobs": knobs(config, runtime), "spec": spec.__dict__ | {
                   "probes": list(spec.probes)},
               "prompts": {"count": len(plan.prompts),
                           "lengths": [len(p) for p in plan.prompts]},
               **({"server": server} if server else {})}
    meta = {"engines": [config.to_json()], "runtime": runtime,
            "model_digest": prep.model_digest, "tokenizer_digest": prep.tokenizer_digest,
            "text_digest": prep.text_digest,
            "positions": {"prompts": len(plan.prompts), "calls": len(plan.calls),
                          "max_new": spec.max_new},
            "summary": summary, "run": {"run_id": done.run_id, "worker": wmeta},
            "plan_sha256": params["plan_sha256"]}
    load = _loader(out, plan)
    arrays = {"ids": np.asarray(plan.prompts[0], np.int64),
              "needle_alone_lp": load("single.0", 0)["lp"]}
    path = write_result(result, "invariance", meta, arrays, card(config, prep, plan, spec,
                                                                 done.run_id), policy)
    return InvarianceOutcome(verdict, summary, done.run_id, path)


def card(config: EngineConfig, prep: Prepared, plan: Plan, spec: InvarianceSpec,
         run_id: str | None) -> DisclosureCard:
    lengths = tuple(len(p) for p in plan.prompts)
    return DisclosureCard(
        reference_checkpoint=checkpoint(prep, config.spec),
        runtime_environment=environment([run_id], {}),
        evaluation_text=text(prep),
        calibration_data=NOT_CALIBRATED,
        context_lengths=lengths,
        sampled_positions=Positions(
            rule=f"every prompt position and every continuation token ({spec.max_new} greedy "
                 f"tokens) of each compared prompt; {len(lengths)} prompts cut from the text "
                 f"(seed {spec.seed})"),
        kl_direction=NotApplicable("invariance compares raw bits, no KL"),
        vocabulary_truncation=full_vocabulary("top-1 and the actual token per position are "
                                              "stored, their logprobs over the full vocabulary"),
        aggregation=Aggregation(
            method="per probe: identical iff every pair is bit-identical; first differing "
                   "position of the first differing pair; top-1 agreement over all compared "
                   "positions; largest absolute logprob difference (continuations: while "
                   "their tokens agree)"),
    )
