"""A small shared library for the LD_PRELOAD row: its constructor turns on flush-to-zero and
denormals-are-zero (MXCSR), as linking with -ffast-math's crtfastmath.o does. Built with the
system C compiler into the selftest's work directory; never committed."""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
from pathlib import Path

SOURCE = r"""
#include <xmmintrin.h>
#include <pmmintrin.h>
__attribute__((constructor)) static void prov_selftest_ftz(void) {
    _MM_SET_FLUSH_ZERO_MODE(_MM_FLUSH_ZERO_ON);
    _MM_SET_DENORMALS_ZERO_MODE(_MM_DENORMALS_ZERO_ON);
}
"""


def build_ftz_library(directory: Path) -> Path:
    from provenance.selftest.identity import NotRun

    if platform.machine() not in ("x86_64", "AMD64"):
        raise NotRun(f"the FTZ/DAZ library is x86-only (this is {platform.machine()})")
    cc = shutil.which("cc") or shutil.which("gcc")
    if not cc:
        raise NotRun("no C compiler to build the preloaded library")
    directory.mkdir(parents=True, exist_ok=True)
    lib = directory / "libprov_selftest_ftz.so"
    if lib.exists():
        return lib
    src = directory / "ftz.c"
    src.write_text(SOURCE)
    tmp = directory / f".ftz-{os.getpid()}.so"
    proc = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-msse3", "-o", str(tmp), str(src)],
                          capture_output=True, text=True)
    if proc.returncode != 0:
        raise NotRun(f"building the preloaded library failed: {proc.stderr.strip()[:300]}")
    os.chmod(tmp, 0o755)
    os.replace(tmp, lib)
    return lib
