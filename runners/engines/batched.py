"""Batched greedy generation with prompt logprobs, for the invariance probes.

A session holds one loaded engine and answers `run(prompts, max_new, prompt_logprobs)` with,
per prompt: the log-probability of each actual prompt token (`lp`), the top-1 token and its
log-probability at each prompt position (`top1`, `top1lp`), and a greedy continuation
(`gen`, `genlp`). The planted control op (runners/planted.py) hooks the logits and can be
switched per call. Heavy libraries are imported here only, inside the worker.
"""

from __future__ import annotations

import copy
from typing import Any

import numpy as np

from runners import planted
from runners.engines.base import EngineConfig, EngineError

Obs = dict[str, np.ndarray]


def _empty_prompt() -> Obs:
    return {"lp": np.zeros(0, np.float32), "top1": np.zeros(0, np.int64),
            "top1lp": np.zeros(0, np.float32)}


class TransformersSession:
    """Left-padded batches (explicit position ids), full forward per greedy step, no KV
    cache: the batch's shape is the only thing that changes between batch sizes."""

    prefix_cache = "not applicable: the transformers engine keeps no prefix cache"
    chunked_prefill = "not applicable: the transformers engine does not chunk prefills"

    def __init__(self, config: EngineConfig, model_dir: str) -> None:
        import torch
        from transformers import AutoConfig, AutoModelForCausalLM

        self.torch = torch
        self.device = config.get("device", "cpu")
        dtype = getattr(torch, config.get("dtype", "float32"))
        torch.manual_seed(0)
        base = AutoConfig.from_pretrained(model_dir)
        self.model = AutoModelForCausalLM.from_pretrained(
            model_dir, config=copy.deepcopy(base), attn_implementation=config.get("attn", "sdpa"),
            dtype=dtype).to(self.device).eval()
        self.default_plant = config.get("plant", "none")
        self.head = self.model.get_output_embeddings()
        planted.install(self.head, self.default_plant)

    def set_plant(self, kind: str | None) -> None:
        self.head._prov_plant = kind or self.default_plant

    def reset_cache(self) -> None:
        pass

    def run(self, prompts: list[list[int]], max_new: int, prompt_logprobs: bool) -> list[Obs]:
        torch = self.torch
        width = max(len(p) for p in prompts)
        x = torch.zeros((len(prompts), width), dtype=torch.long)
        mask = torch.zeros_like(x)
        for b, p in enumerate(prompts):
            x[b, width - len(p):] = torch.tensor(p)
            mask[b, width - len(p):] = 1
        x, mask = x.to(self.device), mask.to(self.device)
        outs = [_empty_prompt() for _ in prompts]
        gen: list[list[int]] = [[] for _ in prompts]
        genlp: list[list[float]] = [[] for _ in prompts]
        with torch.inference_mode():
            for step in range(max_new):
                pos = (mask.cumsum(-1) - 1).clamp(min=0)
                logits = self.model(input_ids=x, attention_mask=mask, position_ids=pos,
                                    use_cache=False).logits
                logp = torch.log_softmax(logits.float(), dim=-1)
                if step == 0 and prompt_logprobs:
                    for b, p in enumerate(prompts):
                        outs[b] = _prompt_rows(logp[b, width - len(p):width - 1], x[b, width -
                                               len(p) + 1:])
                last = logp[:, -1]
                tok = last.argmax(-1)
                for b in range(len(prompts)):
                    gen[b].append(int(tok[b]))
                    genlp[b].append(float(last[b, tok[b]]))
                x = torch.cat([x, tok[:, None]], dim=1)
                mask = torch.cat([mask, torch.ones_like(tok)[:, None]], dim=1)
        for b in range(len(prompts)):
            outs[b]["gen"] = np.asarray(gen[b], np.int64)
            outs[b]["genlp"] = np.asarray(genlp[b], np.float32)
        return outs


def _prompt_rows(logp, targets) -> Obs:
    lp = logp.gather(-1, targets[:, None])[:, 0]
    top1lp, top1 = logp.max(-1)
    return {"lp": lp.cpu().numpy().astype(np.float32), "top1": top1.cpu().numpy(),
            "top1lp": top1lp.cpu().numpy().astype(np.float32)}


class VLLMSession:
    """vLLM offline (`LLM.generate`), one call per batch; prompt logprobs are computed by
    vLLM without reading the prefix cache, so the prefix-cache probes compare continuations."""

    def __init__(self, config: EngineConfig, model_dir: str, max_len: int) -> None:
        from runners.engines.vllm_engine import open_llm

        self.config = config
        self.llm = open_llm(config, model_dir, max_len)
        sched = self.llm.llm_engine.vllm_config.scheduler_config
        cache = self.llm.llm_engine.vllm_config.cache_config
        self.max_num_batched_tokens = int(sched.max_num_batched_tokens)
        self.prefix_cache = None if cache.enable_prefix_caching else \
            "not applicable: prefix caching is off in this configuration (prefix_caching=1)"
        self.chunked_prefill = None if sched.enable_chunked_prefill else \
            "not applicable: chunked prefill is off in this configuration"
        self.default_plant = config.get("plant", "none")
        kind = self.default_plant

        def hook(model):
            proc = getattr(model, "logits_processor", None)
            if proc is None:
                raise EngineError("this vLLM model has no logits_processor to plant on")
            planted.install(proc, kind)

        self.llm.apply_model(hook)

    def set_plant(self, kind: str | None) -> None:
        value = kind or self.default_plant
        self.llm.apply_model(lambda m: setattr(m.logits_processor, "_prov_plant", value))

    def reset_cache(self) -> None:
        self.llm.reset_prefix_cache()

    def run(self, prompts: list[list[int]], max_new: int, prompt_logprobs: bool) -> list[Obs]:
        from vllm import SamplingParams
        from vllm.inputs import TokensPrompt

        params = SamplingParams(max_tokens=max_new, temperature=0.0, ignore_eos=True,
                                prompt_logprobs=1 if prompt_logprobs else None, logprobs=1,
                                detokenize=False)
        res = self.llm.generate([TokensPrompt(prompt_token_ids=list(p)) for p in prompts],
                                params, use_tqdm=False)
        return [_vllm_obs(r, p, prompt_logprobs) for r, p in zip(res, prompts, strict=True)]


def _vllm_obs(res: Any, prompt: list[int], prompt_logprobs: bool) -> Obs:
    out = _empty_prompt()
    if prompt_logprobs:
        rows = res.prompt_logprobs[1:]
        out["lp"] = np.asarray([row[t].logprob for row, t in zip(rows, prompt[1:], strict=True)],
                               np.float32)
        top = [next(iter(sorted(row.items(), key=lambda kv: kv[1].rank))) for row in rows]
        out["top1"] = np.asarray([k for k, _ in top], np.int64)
        out["top1lp"] = np.asarray([v.logprob for _, v in top], np.float32)
    comp = res.outputs[0]
    out["gen"] = np.asarray(comp.token_ids, np.int64)
    out["genlp"] = np.asarray([d[t].logprob for d, t in zip(comp.logprobs, comp.token_ids,
                                                             strict=True)], np.float32)
    return out


def open_session(config: EngineConfig, model_dir: str, max_len: int):
    if config.engine == "transformers":
        return TransformersSession(config, model_dir)
    if config.engine == "vllm":
        return VLLMSession(config, model_dir, max_len)
    if config.engine == "server":
        from runners.engines.served import ServerSession

        return ServerSession(config)
    raise EngineError(f"no batched session for engine {config.engine!r}")
