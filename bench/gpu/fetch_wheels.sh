#!/usr/bin/env bash
# Download, into .whl/ of the repository root, the wheels of prov's runtime dependencies that
# the GPU machine's image lacks (it has torch, triton, transformers, tokenizers, safetensors,
# numpy, rich, typer 0.27.2, packaging, nvidia-ml-py, pytest, click, as the device machine's
# notes list them). cp312 manylinux x86_64, no dependencies pulled implicitly:
# each one is named. Run on this machine, from the repository root; about 6 MB.
set -euo pipefail
cd "$(git rev-parse --show-toplevel 2>/dev/null || pwd)"
grep -qxF '/.whl/' .gitignore 2>/dev/null || grep -qxF '/.whl/' .git/info/exclude 2>/dev/null \
  || echo '/.whl/' >> "$(git rev-parse --git-path info/exclude)"
rm -rf .whl && mkdir -p .whl
PY=${PY:-python3}
# prov snapshot/exec/show/runs, prov run repeat|diverge and the gate import these at run time:
# tomlkit (manifest TOML, gate config), gitpython + gitdb + smmap (git state of a run),
# zstandard (container layers; small, so the whole CLI imports cleanly).
PKGS="tomlkit==0.15.2 gitpython==3.2.1 gitdb==4.0.12 smmap==5.0.3 zstandard==0.25.0"
$PY -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 --implementation cp \
  --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
  --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 \
  --platform manylinux1_x86_64 -d .whl $PKGS
ls -la .whl
du -sh .whl
