#!/usr/bin/env bash
# Build, on this machine (no GPU needed), the payload that makes vLLM 0.26.0 (CUDA 13 build,
# torch==2.11.0 pin = the H200 image's torch) importable on the H200 machine, and put it
# where a device call carries it from: .v/c01/ at the repository root (ignored through
# .git/info/exclude). Run from the repository root:
#   bash bench/gpu/vllm_pack/pack.sh   (about 3 minutes; docs/guides/gpu.md says the rest)
# What goes in (everything else vLLM's metadata asks for is either on the image or not
# imported by offline `LLM(...)` scoring of a text-only model):
#   site/     vllm 0.26.0 without the FA2 extension (304 MB; FA3 is what vLLM uses on
#             Hopper), the MoE extension, the vllm-rs binary, deep_gemm and fmha_sm100
#             (SM100) trees, flashmla/qutlass; its _C extension with the fatbin cut to
#             sm_90 (prune_fatbin.py: 54 MB of zstd cubins -> what sm_90 loads, the layout
#             unchanged); the import-time deps the image lacks; prov's own deps.
#   site_fi/  flashinfer-python 0.6.14 (vLLM's pin). Needed by every run, not only
#             FLASHINFER ones: both model runners' samplers import vLLM's FlashInfer backend
#             module (topk_topp_sampler.flashinfer_sampler_supported), so without it
#             LLM(...) fails with "No module named 'flashinfer'". FLASHINFER itself JIT-compiles
#             its kernels with the image's nvcc 13.0 (about 4 minutes the first time).
# Needs: python3 with pip (any version: wheels are unzipped, not installed), xz.
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
grep -qxF '/.v/' .git/info/exclude || echo '/.v/' >> .git/info/exclude
HERE=$(dirname "$(readlink -f "$0")")
D=${PACK_DIR:-${TMPDIR:-/tmp}/vllm-gpu-pack}
mkdir -p "$D/dl"
PLAT="--platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64
  --platform manylinux_2_26_x86_64 --platform manylinux_2_24_x86_64
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 --platform manylinux1_x86_64
  --platform manylinux_2_31_x86_64"
VLLM="vllm==0.26.0"
FI="flashinfer-python==0.6.14"
# found by importing `from vllm import LLM` and the engine's modules (gpu worker, V1/V2
# model runners, qwen3, attention backends, sampler) with the wheel unpacked here; xgrammar
# 0.2.7 because 0.2.8+ need apache-tvm-ffi>=0.1.11 and vLLM pins 0.1.10 (0.2.9 fails at
# import: load_lib_module(extra_lib_paths=)); fastapi <0.137 (vLLM's bound; newer ones
# import opentelemetry)
DEPS="pydantic==2.14.4 pydantic_core==2.50.5 annotated-types==0.8.0 typing-inspection==0.4.5
  typing_extensions==4.16.0 cbor2==6.3.0 pyzmq==27.3.0 openai==3.57.0 httpx2==2.16.2
  sniffio==1.3.1 openai-harmony==0.0.8 msgspec==0.23.0 pybase64==1.5.1 cachetools==8.0.2
  llguidance==1.9.1 xgrammar==0.2.7 apache-tvm-ffi==0.1.10 fastapi==0.136.3 starlette==1.10.0
  partial-json-parser==0.2.1.1.post7 compressed-tensors==0.17.0 loguru==0.7.3"
# the project's own runtime wheels that the image lacks; extend with EXTRA_WHEELS="name==ver ..."
# (jsonschema and its needs: `prov run replay` checks tool-call arguments against schemas)
# vLLM's OpenAI server (python -m vllm.entrypoints.openai.api_server) and the openai SDK's
# transport: what the image lacks of them (bench/gpu/serve_check.sh)
SERVE="uvicorn==0.55.0 watchfiles==1.3.0 prometheus-fastapi-instrumentator==8.1.0
  model-hosting-container-standards==0.1.16 jmespath==1.0.1 supervisor==4.3.0
  python-multipart==0.0.34 setproctitle==1.3.8 httpcore2==2.16.2 jiter==0.19.0
  truststore==0.10.5"
PROV="tomlkit==0.15.2 gitpython==3.2.1 gitdb==4.0.12 smmap==5.0.3 zstandard==0.25.0
  jsonschema==4.26.0 jsonschema-specifications==2025.9.1 referencing==0.37.0 rpds-py==2026.9.1
  ${EXTRA_WHEELS:-}"
python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
  --implementation cp $PLAT -d "$D/dl" $VLLM $FI $DEPS $SERVE $PROV
rm -rf "$D/stage" && mkdir -p "$D/stage/site" "$D/stage/site_fi"
for w in "$D"/dl/*.whl; do
  case $(basename "$w") in
    flashinfer_python-*) python3 -m zipfile -e "$w" "$D/stage/site_fi" ;;
    *) python3 -m zipfile -e "$w" "$D/stage/site" ;;
  esac
done
rm -f "$D"/stage/site_fi/build_backend.py "$D"/stage/site_fi/build_utils.py
V=$D/stage/site/vllm
rm -rf "$V/vllm_flash_attn/_vllm_fa2_C.abi3.so" "$V/_moe_C_stable_libtorch.abi3.so" \
  "$V/vllm-rs" "$V/third_party/deep_gemm" "$V/third_party/fmha_sm100" \
  "$V/_flashmla_C.abi3.so" "$V/_flashmla_extension_C.abi3.so" "$V/_qutlass_C.abi3.so" \
  "$V/entrypoints/serve/instrumentator/static"
python3 "$HERE/prune_fatbin.py" "$V/_C_stable_libtorch.abi3.so" "$D/_C.pruned"
mv "$D/_C.pruned" "$V/_C_stable_libtorch.abi3.so"
chmod -R u+rwX,go+rX "$D/stage"
du -sh "$D/stage/site" "$D/stage/site_fi"
tar -C "$D/stage" -cf - site site_fi | xz -6 -T2 > "$D/payload.tar.xz"
rm -rf .v/c01 && mkdir -p .v/c01
split -b 50M -d "$D/payload.tar.xz" .v/c01/payload.part-
(cd .v/c01 && sha256sum "$D/payload.tar.xz" | sed "s|  .*|  payload.tar.xz|" > SHA256SUMS)
ls -la .v/c01
du -sh .v/c01
