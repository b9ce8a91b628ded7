"""The engine interface: configuration, scoring output, and the spec string users type.

A spec is `ENGINE[:key=value,...]`, e.g. `transformers:attn=eager,dtype=float32` or
`vllm:dtype=float32,kv_cache_dtype=auto`. Unknown keys are refused, not ignored.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Protocol

import numpy as np

from provenance.model.errors import ProvError

ENGINES = ("transformers", "vllm", "server")
KNOWN_OPTIONS: dict[str, tuple[str, ...]] = {
    "transformers": ("attn", "sdpa_kernel", "dtype", "device", "store", "plant"),
    "vllm": ("attention_backend", "kv_cache_dtype", "dtype", "quantization", "topk",
             "gpu_memory_utilization", "kv_cache_memory_bytes", "python",
             # what decides batch invariance (runners/invariance.py); given or not, the probe
             # reads what the engine resolved
             "batch_invariant", "prefix_caching", "chunked_prefill", "max_num_batched_tokens",
             "max_num_seqs", "enforce_eager", "cudagraph_capture_sizes", "plant",
             # `load_format=dummy`: random weights without a checkpoint (scale runs only)
             "load_format"),
    # a running OpenAI-compatible server (runners/engines/served.py): the invariance probes
    # only; what it runs is the server run's record (`server.*` of the probing run)
    "server": ("server_url", "served_model", "prefix_caching", "max_num_batched_tokens"),
}
# `plant=batch_fp16_sum`: a NEGATIVE-CONTROL knob, never a serving setting. It perturbs the
# logits by a float16 reduction whose chunking follows the rows in the call (the batch), so
# an invariance probe must catch it; `plant=process_noise` adds noise drawn afresh in every
# process, so the noise floor must measure it (runners/planted.py).
PLANTS = ("none", "batch_fp16_sum", "noop", "process_noise")
DTYPES = ("float32", "bfloat16", "float16")
# What an engine does when an option is not given: a run's command line and parameters name
# these explicitly, so `transformers` and `transformers:attn=sdpa` are one identity
DEFAULTS: dict[str, dict[str, str]] = {
    "transformers": {"attn": "sdpa", "dtype": "float32", "device": "cpu"},
    "vllm": {"kv_cache_dtype": "auto", "quantization": "none", "dtype": "float32"},
}


class EngineError(ProvError):
    """Bad engine configuration, or an engine that did not run what it was asked to."""


@dataclass(frozen=True)
class EngineConfig:
    engine: str
    options: tuple[tuple[str, str], ...] = ()

    @classmethod
    def parse(cls, spec: str) -> EngineConfig:
        engine, _, rest = spec.strip().partition(":")
        if engine not in ENGINES:
            known = ", ".join(ENGINES)
            raise EngineError(f"unknown engine {engine!r} in {spec!r} (known: {known})")
        opts: dict[str, str] = {}
        for item in filter(None, (p.strip() for p in rest.split(","))):
            key, eq, value = item.partition("=")
            if not eq or not value:
                raise EngineError(f"engine option {item!r} in {spec!r} is not key=value")
            if key not in KNOWN_OPTIONS[engine]:
                raise EngineError(
                    f"unknown {engine} option {key!r} (known: {', '.join(KNOWN_OPTIONS[engine])})"
                )
            opts[key] = value
        if opts.get("plant", "none") not in PLANTS:
            raise EngineError(f"plant must be one of {', '.join(PLANTS)}")
        if opts.get("dtype", "float32") not in DTYPES:
            raise EngineError(f"dtype must be one of {', '.join(DTYPES)}")
        return cls(engine, tuple(sorted(opts.items())))

    def get(self, key: str, default: str | None = None) -> str | None:
        return dict(self.options).get(key, default)

    @property
    def spec(self) -> str:
        opts = ",".join(f"{k}={v}" for k, v in self.options if k != "python")
        return f"{self.engine}:{opts}" if opts else self.engine

    def to_json(self) -> dict[str, Any]:
        return {"engine": self.engine, "options": {k: v for k, v in self.options if k != "python"}}

    def explicit(self) -> dict[str, str]:
        """Every option the engine runs with, defaults included (the interpreter is the
        command, not an option)."""
        opts = {**DEFAULTS.get(self.engine, {}), **dict(self.options)}
        opts.pop("python", None)
        return dict(sorted(opts.items()))

    def worker_args(self) -> list[str]:
        """The engine as a worker's command line: `--engine NAME --OPTION VALUE ...`, one
        argument per option, so the run's identity names each (`code.args.attn`) and a
        preset covers the one it declares."""
        out = ["--engine", self.engine]
        for key, value in self.explicit().items():
            out += [f"--{key}", value]
        return out

    def params(self) -> dict[str, str]:
        """The run parameters of a worker running this engine (`run.params.*`)."""
        return {"engine": self.engine, **self.explicit()}


def add_engine_arguments(ap: Any) -> None:
    """`--engine` (a name, or a whole spec) and one `--OPTION` per known engine option."""
    ap.add_argument("--engine", required=True, help="engine name or spec, e.g. transformers")
    for key in sorted({k for opts in KNOWN_OPTIONS.values() for k in opts} - {"python"}):
        ap.add_argument(f"--{key}", dest=f"engine_{key}", default=None)


def engine_from_args(args: Any) -> EngineConfig:
    """The EngineConfig a worker was given by `add_engine_arguments`."""
    opts = [f"{k[len('engine_'):]}={v}" for k, v in sorted(vars(args).items())
            if k.startswith("engine_") and v is not None]
    spec = args.engine + ("," if ":" in args.engine else ":") + ",".join(opts) if opts \
        else args.engine
    return EngineConfig.parse(spec)


@dataclass
class ScoreOutput:
    """What one teacher-forced pass produced.

    `scores[j]` is the distribution over the next token after ids[: j + 1] (so len(ids) - 1
    rows); `kind` says whether the rows are raw logits or log-probabilities. Entries an engine
    did not return (top-k only) are NaN and `full_vocab` is False. `digests` maps a layer
    name to per-block sha256 digests of the raw bytes in the dtype the engine computed in.
    A hidden-state result (kind "hidden", runners/hidden.py) has no score rows: `storage`
    describes what was stored instead and `extra_arrays` holds the sampled engine logits.
    """

    scores: np.ndarray
    kind: str  # "logits" | "logprobs"
    full_vocab: bool
    digests: dict[str, list[str]]
    runtime: dict[str, Any]
    final_hidden: np.ndarray | None = None
    head_digest: str | None = None
    notes: list[str] = field(default_factory=list)
    storage: dict[str, Any] | None = None
    extra_arrays: dict[str, np.ndarray] = field(default_factory=dict)
    # wall seconds of the engine's own steps (vLLM: engine start, the forward pass), so a
    # result can set prov's own time beside the forward pass's
    timings: dict[str, float] = field(default_factory=dict)


class Engine(Protocol):
    config: EngineConfig

    def score(self, model_dir: str, ids: list[int], block: int) -> ScoreOutput: ...
