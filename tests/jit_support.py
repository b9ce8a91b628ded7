"""Workloads that load a library a JIT compiled into its cache, for the exec and gate tests.

Triton on CPU (TRITON_INTERPRET=1) interprets kernels and writes nothing to its cache, so
the workloads write artifacts as Triton does, through Triton's own cache manager and build
helper: `triton.runtime.cache.get_cache_manager(key)` names the folder after the key
(base32 of a sha256), and the launcher is a C extension built with the system compiler.
"""

from __future__ import annotations

# argv: kernel id (the "source" that decides the key), then "fresh" to give the library a
# per-run build id, as a per-run compile in a fresh cache does (GPU runs saw this).
TRITON_CACHE_WORKLOAD = r"""
import ctypes, hashlib, json, os, subprocess, sys, sysconfig, tempfile, time
import triton
from triton.runtime.cache import get_cache_manager

src = "int kernel_id(void) { return %s; }\n" % sys.argv[1]
key = hashlib.sha256(src.encode()).hexdigest()
cache = get_cache_manager(key)
flags = ["-Wl,--build-id=0x" + os.urandom(16).hex()] if sys.argv[2:] == ["fresh"] else []
with tempfile.TemporaryDirectory() as d:
    with open(os.path.join(d, "launcher.c"), "w") as fh:
        fh.write(src)
    out = os.path.join(d, "launcher.so")
    subprocess.check_call(["cc", os.path.join(d, "launcher.c"), "-O2", "-shared", "-fPIC",
                           *flags, "-o", out])
    with open(out, "rb") as fh:
        so = cache.put(fh.read(), "__triton_launcher" + sysconfig.get_config_var("EXT_SUFFIX"))
meta = {"hash": key, "name": "add_kernel", "triton_version": triton.__version__}
cache.put(json.dumps(meta), "add_kernel.json", binary=False)
print(ctypes.CDLL(so).kernel_id(), flush=True)
time.sleep(0.6)
"""

# Triton's own build helper: the launcher compiled and cached exactly as Triton does.
TRITON_BUILD_WORKLOAD = r"""
import ctypes, sys, time
from triton.runtime.build import compile_so_from_src

so = compile_so_from_src("int kernel_id(void) { return %s; }\n" % sys.argv[1],
                         "__triton_launcher")
print(ctypes.CDLL(so).kernel_id(), flush=True)
time.sleep(0.6)
"""

# A library outside every JIT cache, rebuilt each run with a fresh build id.
PLAIN_WORKLOAD = r"""
import ctypes, os, subprocess, sys, time
d = sys.argv[1]
with open(os.path.join(d, "plain.c"), "w") as fh:
    fh.write("int plain(void) { return 1; }\n")
out = os.path.join(d, "libplain.so")
subprocess.check_call(["cc", os.path.join(d, "plain.c"), "-shared", "-fPIC",
                       "-Wl,--build-id=0x" + os.urandom(16).hex(), "-o", out])
print(ctypes.CDLL(out).plain(), flush=True)
time.sleep(0.6)
"""
