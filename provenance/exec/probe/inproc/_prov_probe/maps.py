"""The shared objects mapped into this process, from /proc/self/maps (Linux)."""

import os


def _is_shared_object(name):
    # libfoo.so, libfoo.so.1.2, _C.cpython-311-x86_64-linux-gnu.so
    return name.endswith(b".so") or b".so." in name


def mapped_libraries():
    """Sorted paths of file-backed shared objects; [] where /proc is not there."""
    try:
        with open("/proc/self/maps", "rb") as fh:
            data = fh.read()
    except OSError:
        return []
    found = set()
    for line in data.split(b"\n"):
        slash = line.find(b"/")
        if slash < 0:
            continue
        path = line[slash:]
        if path.endswith(b" (deleted)"):
            path = path[: -len(b" (deleted)")]
        if _is_shared_object(path.rsplit(b"/", 1)[-1]):
            found.add(os.fsdecode(path))
    return sorted(found)
