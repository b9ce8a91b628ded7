"""The gate's built-in presets: a concept, and every key where it can show up.

Engine adapters put what the engine resolved at run time under `runtime.<engine>.<concept>`
(e.g. `runtime.vllm.attention_backend.resolved`), declared parameters under
`run.params.<concept>`, command-line options under `code.args.<option>` (`--kv-cache-dtype`
is `code.args.kv_cache_dtype`), and engines' static facts under `engines.<engine>.<concept>`.
`[tool.prov.presets]` in pyproject.toml adds presets or extends these (config.py).
What a declared key brings along (a package's modules and libraries, what a JIT compiled)
is not listed here: it follows from the difference a preset covers (follows.py).
"""

from __future__ import annotations

PRESETS: dict[str, tuple[str, ...]] = {
    "attention-backend": (
        "runtime.*.attention_backend",
        "runtime.*.models.*.attn_implementation",
        "runtime.*.models.*.attn_implementation_requested",
        "runtime.torch.flags.sdpa_*",
        "torch.flags.sdpa_*",
        "runtime.torch.sdpa_kernels",
        "runtime.attention_backend",
        "engines.*.attention_backend",
        "run.params.attention_backend",
        "code.args.attention_backend",
        "inputs.files.*.values.**.attention_backend",
        # prov's transformers workers: attn_implementation and torch's sdpa kernel
        "run.params.attn",
        "run.params.sdpa_kernel",
        "code.args.attn",
        "code.args.sdpa_kernel",
        "env.VLLM_ATTENTION_BACKEND",
        "env.VLLM_USE_TRITON_FLASH_ATTN",
        "env.VLLM_FLASH_ATTN_VERSION",
        "env.SGLANG_ATTENTION_BACKEND",
        # what a server behind `prov serve` said of itself (serve/describe.py)
        "upstream.**.attention_backend",
    ),
    "kv-cache-dtype": (
        "runtime.*.kv_cache_dtype",
        "runtime.kv_cache_dtype",
        "engines.*.kv_cache_dtype",
        "run.params.kv_cache_dtype",
        "code.args.kv_cache_dtype",
        "inputs.files.*.values.**.kv_cache_dtype",
        # vLLM's per-layer rows: the KV cache's dtype, and the dtype its tensors hold
        "runtime.*.attention_backend.layers.*.kv_cache_dtype",
        "runtime.*.attention_backend.layers.*.tensor_dtype",
        "runtime.*.calculate_kv_scales",
        "runtime.*.kv_scales",
        "env.VLLM_KV_CACHE_DTYPE",
        "upstream.**.kv_cache_dtype",
        "upstream.**.cache_dtype",
        "upstream.**.cache_type_k",  # llama.cpp's server
        "upstream.**.cache_type_v",
    ),
    "weights": (
        "model.files",  # the model files a run read, by content (exec/probe/model_files.py)
        "runtime.*.model",
        "runtime.*.weights",
        "runtime.model",
        "runtime.weights",
        "weights",
        "model",
        "run.params.model",
        "run.params.weights",
        "run.params.checkpoint",
        "code.args.model",
        "inputs.files.*.values.**.model",
        "runtime.*.revision",
        "runtime.*.tokenizer",
        "runtime.*.models.*.name_or_path",
        "runtime.*.models.*.revision",
        "runtime.*.models.*.files",
        "runtime.*.models.*.chat_template_sha256",
        # the tokenizers a load gave (exec/probe/engines.py): their source and chat template
        "runtime.*.tokenizers.*.name_or_path",
        "runtime.*.tokenizers.*.revision",
        "runtime.*.tokenizers.*.chat_template_sha256",
        "upstream.models",
        "upstream.**.model",
        "upstream.**.model_path",  # llama.cpp's /props
    ),
    # the other files a run read (prompts, eval text, arrays), by content (exec/probe/inputs.py)
    "inputs": (
        "inputs.files",
        "run.params.inputs",
    ),
    "quantization": (
        "runtime.*.quantization",
        "runtime.*.models.*.quantization",
        "engines.*.quantization",
        "run.params.quantization",
        "code.args.quantization",
        "inputs.files.*.values.**.quantization",
        "upstream.**.quantization",
    ),
    # torch's flags are read by one reader (collectors/standalone/torch_state.py) into two
    # facts: `torch.flags.*` the defaults a fresh process gets (the snapshot),
    # `runtime.torch.flags.*` what the run's process had (the in-process probe)
    "threads": (
        "runtime.torch.flags.num_threads",
        "runtime.torch.flags.num_interop_threads",
        "torch.flags.num_threads",
        "torch.flags.num_interop_threads",
        "env.OMP_NUM_THREADS",
        "env.MKL_NUM_THREADS",
        "env.OPENBLAS_NUM_THREADS",
        "run.params.threads",
    ),
    # vLLM's V1 or V2 model runner (the two give different bits for one backend): the
    # runner class the probe saw run, and the variable that picks it
    "model-runner": (
        "runtime.*.model_runner",
        "runtime.vllm.envs.VLLM_USE_V2_MODEL_RUNNER",
        "env.VLLM_USE_V2_MODEL_RUNNER",
    ),
    # the command line as typed and the script it ran (provenance/exec/probe)
    "command": (
        "code.program",
        "code.args",
        "code.script",
    ),
    # vLLM's batch-invariant mode and what it sets when on (vLLM 0.26 on the H200: torch's
    # reduced-precision and TF32 flags off, cuBLAS preferred; symmetric-memory all-reduce
    # and AOT compile off): bench/results/2026-12-03-h200/invariance-main.json
    "batch-invariance": (
        "env.VLLM_BATCH_INVARIANT",
        "runtime.vllm.envs.VLLM_BATCH_INVARIANT",
        "runtime.vllm.envs.VLLM_ALLREDUCE_USE_SYMM_MEM",
        "runtime.vllm.envs.VLLM_USE_AOT_COMPILE",
        "code.args.batch_invariant",
        "run.params.batch_invariant",
        "runtime.torch.flags.cuda_matmul_allow_bf16_reduced_precision",
        "runtime.torch.flags.cuda_matmul_allow_fp16_reduced_precision",
        "runtime.torch.flags.cuda_matmul_allow_tf32",
        "runtime.torch.flags.cudnn_allow_tf32",
        "runtime.torch.flags.cudnn_conv_fp32_precision",
        "runtime.torch.flags.cudnn_rnn_fp32_precision",
        "runtime.torch.flags.preferred_blas_library",
    ),
    # vLLM's scheduler limits: how many sequences share a batch, and how many tokens
    "scheduler": (
        "runtime.*.max_num_seqs",
        "runtime.*.max_num_batched_tokens",
        "code.args.max_num_seqs",
        "code.args.max_num_batched_tokens",
        "run.params.max_num_seqs",
        "run.params.max_num_batched_tokens",
        "inputs.files.*.values.**.max_num_seqs",
        "inputs.files.*.values.**.max_num_batched_tokens",
    ),
    "dtype": (
        "runtime.*.dtype",
        "runtime.dtype",
        "engines.*.dtype",
        "run.params.dtype",
        "code.args.dtype",
        "inputs.files.*.values.**.dtype",
        "runtime.torch.flags.float32_matmul_precision",
        "runtime.torch.flags.default_dtype",
        "torch.flags.float32_matmul_precision",
        "torch.flags.default_dtype",
        "runtime.*.models.*.dtype",
        # each sdpa call signature names its dtype: a dtype change renames every one of them
        "runtime.torch.sdpa_kernels",
        "upstream.**.dtype",
    ),
}
# Never worth refusing a comparison over; still listed in the record as ignored.
ALWAYS_IGNORED: tuple[str, ...] = ("env.PROV_*",)
