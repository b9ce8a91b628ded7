"""What is mapped into this process, from /proc/self/maps (Linux): shared objects, and
model weight files (safetensors and GGUF are read through mmap)."""

import os

WEIGHT_SUFFIXES = (b".safetensors", b".gguf", b".bin", b".pt", b".pth")


def _is_shared_object(name):
    # libfoo.so, libfoo.so.1.2, _C.cpython-311-x86_64-linux-gnu.so
    return name.endswith(b".so") or b".so." in name


def mapped_files():
    """(sorted shared-object paths, sorted weight-file paths); ([], []) without /proc."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            data = fh.read()
    except OSError:
        return [], []
    libs, weights = set(), set()
    for line in data.split(b"\n"):
        slash = line.find(b"/")
        if slash < 0:
            continue
        path = line[slash:]
        if path.endswith(b" (deleted)"):
            path = path[: -len(b" (deleted)")]
        name = path.rsplit(b"/", 1)[-1]
        if _is_shared_object(name):
            libs.add(os.fsdecode(path))
        elif name.endswith(WEIGHT_SUFFIXES):
            weights.add(os.fsdecode(path))
    return sorted(libs), sorted(weights)
