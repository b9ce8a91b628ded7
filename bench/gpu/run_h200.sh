#!/usr/bin/env bash
# The single command of the GPU call (issue 7), run from the repository root on the device:
#   (a) GPU manifest ground truth: prov snapshot + prov exec of a CUDA workload, loaded
#       cuDNN/cuBLAS/NCCL vs torch in-process vs torch.utils.collect_env;
#   (c) the analysis bench (bench/bench_gpu_analysis.py) at 16,384 x 151,936;
#   (b) backend divergence at 16k tokens: prov run repeat per SDPA kernel and eager, then
#       every pair through the gate (--vary attention-backend) and the diverge analysis.
# STEPS (comma list, default manifest,tests,bench,divergence) picks the steps:
#   manifest (a); tests: tests/runners/test_fused.py with the compiled kernels on the GPU;
#   bench (c); longest: bench/gpu/longest_context.py, the longest context each backend fits
#   in one forward pass; divergence (b); scale (issue 20): the Qwen3-0.6B-shaped model at
#   full vocabulary (151,936) with YaRN RoPE on a segmented workstream-like text, `prov run
#   repeat` per SCALE_BACKENDS at SCALE_TOKENS (131,072) storing hidden states, the pair
#   through the gate and the GPU analysis, bench/gpu/scale.py (timings beside the floors, host
#   slice, bytes stored, other backends), and `prov report` of the pair.
# Results go to $OUT (at most 8 files come back): log.txt, manifest.{txt,json},
# bench.{txt,json}, longest.json, divergence.{txt,json}, summary.json.
#
# DRY_RUN_CPU=1 runs every step on CPU with tiny shapes (TRITON_INTERPRET=1), to test this
# script here. Knobs: PY, WHL_DIR (.whl), BUDGET_S (total seconds, 480), DIV_LAYERS (28),
# DIV_VOCAB (8192), DIV_TOKENS (16384), TRAIN_STEPS (0: random init; else a brief training
# run, at most TRAIN_SECONDS), BACKENDS, TOKENS_FOR ("eager=24576,math=32768":
# per-backend token counts for the repeats; pairs use only backends at DIV_TOKENS).
# scale: SCALE_TOKENS (131072), SCALE_BACKENDS (flash,cudnn), SCALE_TRAIN_STEPS (0: random
# init), SCALE_TRAIN_SECONDS (60), SCALE_TAG (a suffix for its output files).
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/prov-gpu-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false
PY=${PY:-python3}
STEPS=${STEPS:-manifest,tests,bench,divergence}
want() { case ",$STEPS," in *",$1,"*) return 0;; *) return 1;; esac; }
BUDGET_S=${BUDGET_S:-480}
W=${WORK:-/tmp/prov-gpu-work}
rm -rf "$W" && mkdir -p "$W"
export PROV_STORE="$W/store" PROV_CACHE_DIR="$W/cache"
elapsed() { echo $(( $(date +%s) - START )); }
left() { echo $(( BUDGET_S - $(elapsed) )); }
step() { echo; echo "=== [$(elapsed)s] $*"; }

WHL_DIR=${WHL_DIR:-.whl}
SITE=$W/site
if ls "$WHL_DIR"/*.whl >/dev/null 2>&1; then
  $PY -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target "$SITE" "$WHL_DIR"/*.whl || { echo "wheel install failed"; exit 2; }
fi
export PYTHONPATH="$SITE:$PWD${PYTHONPATH:+:$PYTHONPATH}"
# prov is not installed there: a wrapper on PATH (timeout needs a program, not a function)
mkdir -p "$W/bin"
printf '#!/bin/sh\nexec %s -c "import sys; sys.argv[0] = \\"prov\\"; from provenance.cli import main; main()" "$@"\n' \
  "$(realpath -s "$(command -v $PY)")" > "$W/bin/prov"
chmod +x "$W/bin/prov"
export PATH="$W/bin:$PATH"

if [ "${DRY_RUN_CPU:-0}" = 1 ]; then
  export TRITON_INTERPRET=1
  DEV=cpu
  BENCH_ARGS="--device cpu --positions 64 --vocab 1000 --layers 2 --hidden 64 --no-compile --repeat 1"
  BUILD_ARGS="--layers 2 --hidden 64 --vocab 512 --tokens 256 --train-steps ${TRAIN_STEPS:-0}"
  TOKENS=256
  BACKENDS=${BACKENDS:-flash,math,eager}
  LONG_ARGS="--layers 2 --lengths 64,128 --backends flash,math,eager"
  SCALE_BUILD="--layers 2 --hidden 64 --vocab 4096"
  SCALE_TOKENS=${SCALE_TOKENS:-600}
  SCALE_STORE=",store=hidden"  # below the automatic threshold at this size
  SCALE_BACKENDS=${SCALE_BACKENDS:-flash,math}
else
  DEV=cuda
  BENCH_ARGS="--repeat 5"
  BUILD_ARGS="--layers ${DIV_LAYERS:-28} --vocab ${DIV_VOCAB:-8192} --tokens ${DIV_TOKENS:-16384}
    --train-steps ${TRAIN_STEPS:-0} --train-seconds ${TRAIN_SECONDS:-120}"
  TOKENS=${DIV_TOKENS:-16384}
  BACKENDS=${BACKENDS:-flash,cudnn,efficient,math,eager}
  LONG_ARGS=${LONG_ARGS:-}
  SCALE_BUILD="--layers 28 --vocab 151936"
  SCALE_TOKENS=${SCALE_TOKENS:-131072}
  SCALE_STORE=""  # automatic: 131,071 x 151,936 is far above the threshold
fi
R=$W/results
# tokens of backend $1's repeat: its TOKENS_FOR entry, else $TOKENS
tokens_for() {
  local kv spec=${TOKENS_FOR:-}
  for kv in ${spec//,/ }; do [ "${kv%%=*}" = "$1" ] && { echo "${kv#*=}"; return; }; done
  echo "$TOKENS"
}

step "environment"
$PY -c 'import sys, torch, transformers; print(sys.version.split()[0], torch.__version__,
  transformers.__version__, torch.cuda.is_available() and torch.cuda.get_device_name(0))'
nvidia-smi --query-gpu=name,driver_version,ecc.mode.current,mig.mode.current,clocks.sm \
  --format=csv 2>/dev/null || true

if want manifest; then
step "(a) prov snapshot"
timeout 90 prov snapshot --out "$W/snapshot.json" --format json && echo "snapshot ok"
step "(a) prov exec of a CUDA workload (cuBLAS, cuDNN, NCCL)"
timeout 120 prov exec --name cuda-workload --output "$W/workload.json" -- \
  $PY bench/gpu/cuda_workload.py "$W/workload.json"
echo "exec exit $?"
RUN=$(prov runs --limit 1 --json | $PY -c 'import json,sys; d=json.load(sys.stdin);
r = d[0] if isinstance(d, list) else (d.get("runs") or [d])[0]; print(r.get("run_id") or r["id"])')
prov show "$RUN" --json > "$W/record.json"
timeout 60 $PY -m torch.utils.collect_env > "$W/collect_env.txt" 2>&1
$PY bench/gpu/gpu_manifest.py "$W/snapshot.json" "$W/record.json" "$W/workload.json" \
  "$W/collect_env.txt" "$OUT/manifest.json" > "$OUT/manifest.txt" 2>&1
cat "$OUT/manifest.txt"

fi

if want tests; then
  step "kernel tests on the GPU (tests/runners/test_fused.py, compiled kernels)"
  PROV_FUSED_DEVICE=$DEV timeout 300 $PY -m pytest -q -p no:cacheprovider -o addopts="" \
    tests/runners/test_fused.py 2>&1 | tail -15
fi

if want bench; then
step "(c) analysis bench"
timeout 200 $PY bench/bench_gpu_analysis.py $BENCH_ARGS --json "$OUT/bench.json" \
  > "$OUT/bench.txt" 2>&1
echo "bench exit $?"
cat "$OUT/bench.txt"

fi

if want longest; then
  step "longest context per backend (one forward pass each)"
  timeout 300 $PY bench/gpu/longest_context.py --device $DEV $LONG_ARGS --json "$OUT/longest.json"
  echo "longest exit $?"
fi

if want divergence; then
step "(b) divergence: model"
MODEL=$W/model
timeout 180 $PY bench/gpu/divergence.py build "$MODEL" $BUILD_ARGS
mkdir -p "$R"
PAIR_BACKENDS=""
for b in ${BACKENDS//,/ }; do
  TOK=$(tokens_for "$b")
  [ "$TOK" = "$TOKENS" ] && PAIR_BACKENDS="$PAIR_BACKENDS${PAIR_BACKENDS:+,}$b"
  if [ "$(left)" -lt 90 ]; then echo "skip repeat $b: $(left)s left"; continue; fi
  SPEC=$($PY bench/gpu/divergence.py specs --device $DEV $b | cut -d' ' -f2)
  step "(b) prov run repeat $b at $TOK tokens: $SPEC"
  timeout $(( $(left) - 60 )) prov run repeat --engine "$SPEC" --model "$MODEL" \
    --text "$MODEL/eval.txt" --n 2 --max-tokens "$TOK" --workdir "$W/work/$b" \
    --out "$R/repeat-$b" --json
  echo "repeat $b exit $?"
done
step "(b) pairs through the gate"
timeout $(( $(left) > 30 ? $(left) : 30 )) $PY bench/gpu/divergence.py pairs --work "$W/work" \
  --results "$R" --model "$MODEL" --backends "$PAIR_BACKENDS" --tokens "$TOKENS" \
  --budget $(( $(left) - 40 ))
$PY bench/gpu/divergence.py table --results "$R" > "$OUT/divergence.txt" 2>&1
cat "$OUT/divergence.txt"

fi

if want scale; then
  TAG=${SCALE_TAG:-}
  SW=$W/scale$TAG
  SM=$SW/model
  SB=${SCALE_BACKENDS:-flash,cudnn}
  step "scale: model (YaRN, vocab 151936) and segmented text"
  timeout 300 $PY bench/gpu/divergence.py build "$SM" $SCALE_BUILD --tokens "$SCALE_TOKENS" \
    --yarn --segmented --train-steps "${SCALE_TRAIN_STEPS:-0}" \
    --train-seconds "${SCALE_TRAIN_SECONDS:-60}"
  for b in ${SB//,/ }; do
    if [ "$(left)" -lt 120 ]; then echo "skip scale repeat $b: $(left)s left"; continue; fi
    SPEC=$($PY bench/gpu/divergence.py specs --device $DEV $b | cut -d' ' -f2)$SCALE_STORE
    step "scale: prov run repeat $b at $SCALE_TOKENS tokens: $SPEC"
    timeout $(( $(left) - 90 )) prov run repeat --engine "$SPEC" --model "$SM" \
      --text "$SM/eval.txt" --n 2 --max-tokens "$SCALE_TOKENS" --workdir "$SW/work/$b" \
      --out "$SW/results/repeat-$b" --json | cut -c1-2000
    echo "repeat $b exit ${PIPESTATUS[0]}"
  done
  step "scale: the pair through the gate (--vary attention-backend), GPU analysis"
  timeout $(( $(left) > 60 ? $(left) - 30 : 30 )) $PY bench/gpu/divergence.py pairs \
    --work "$SW/work" --results "$SW/results" --model "$SM" --backends "$SB" \
    --tokens "$SCALE_TOKENS" --budget $(( $(left) - 60 ))
  $PY bench/gpu/divergence.py table --results "$SW/results" > "$OUT/scale-divergence$TAG.txt"
  cat "$OUT/scale-divergence$TAG.txt"
  P=$(ls -d "$SW"/results/diverge-* 2>/dev/null | head -1)
  [ -n "$P" ] && cp "$P/result.json" "$OUT/scale-result$TAG.json"
  if [ -n "$P" ] && [ -z "$TAG" ]; then
    step "scale: prov report of $P"
    T0=$(date +%s%N)
    timeout 120 prov report "$P" --out "$OUT/scale-report$TAG.html" && \
      echo "report built in $(( ($(date +%s%N) - T0) / 1000000 )) ms," \
        "$(stat -c %s "$OUT/scale-report$TAG.html") bytes"
  fi
  if [ "$(left)" -gt 60 ] && [ -z "$TAG" ]; then
    step "scale: timings beside the floors, host slice, bytes, other backends"
    SARGS=""; [ "$DEV" = cpu ] && SARGS="--device cpu --repeat 1 --others eager"
    timeout $(( $(left) - 15 )) $PY bench/gpu/scale.py --model "$SM" --work "$SW/work" \
      --backends "$SB" --tokens "$SCALE_TOKENS" --json "$OUT/scale$TAG.json" $SARGS | cut -c1-3000
    echo "scale exit ${PIPESTATUS[0]}"
  fi
fi

[ "$STEPS" = scale ] || [ "$STEPS" = tests,scale ] && { step "done in $(elapsed)s"; exit 0; }
step "summary"
$PY - "$OUT" "$R" "$W/model" <<'PYEOF'
import json, sys
from pathlib import Path
out, res, model = Path(sys.argv[1]), Path(sys.argv[2]), Path(sys.argv[3])
def load(p):
    try:
        return json.loads(Path(p).read_text())
    except (OSError, ValueError) as exc:
        return {"missing": str(exc)}
div = {"repeats": {d.name: {k: load(d / "result.json").get(k) for k in
                            ("summary", "runtime", "runs", "arrays_sha256", "model_digest",
                             "text_digest", "comparisons")}
                   for d in sorted(res.glob("repeat-*"))},
       "pairs": load(res / "pairs.json")}
(out / "divergence.json").write_text(json.dumps(div, indent=1, default=str))
bench = load(out / "bench.json")
man = load(out / "manifest.json")
longest = load(out / "longest.json")
summary = {"bench": {k: bench.get(k) for k in ("device_name", "forward_s", "fused_best",
                                               "check", "ratios")},
           "longest": {k: v.get("longest") for k, v in (longest.get("backends") or {}).items()},
           "training": load(model / "train.json"),
           "manifest_gpu": man.get("gpu_manifest"), "in_process": man.get("in_process"),
           "repeat_verdicts": {k: (v.get("summary") or {}).get("verdict")
                               for k, v in div["repeats"].items()},
           "pairs_top1": {k: v.get("top1_agreement", v.get("skipped") or v.get("gate"))
                          for k, v in (div["pairs"].get("pairs") or {}).items()}}
(out / "summary.json").write_text(json.dumps(summary, indent=1, default=str))
print(json.dumps(summary, indent=1, default=str)[:4000])
PYEOF
step "done in $(elapsed)s"
