"""One small module per file format, each a pure `parse(...)` over bytes or text, and the
globs it owns in an image (its `CATALOGER`, see `base.py`; `containers.catalog` dispatches).

The public API the host collectors use (standard library only, Python 3.8-compatible: the
Python collector runs inside the interpreter it inspects). Names load on first use
(PEP 562): the Python collector imports this package inside every inspected interpreter and
should not pay there for the dpkg cataloger's dataclasses (~15 ms of a snapshot).
"""

_HOME = {
    "ApkPackage": "apk", "parse_installed": "apk",
    "DpkgPackage": "dpkg", "parse_status": "dpkg", "parse_status_d_entry": "dpkg",
    "parse_os_release": "os_release", "OS_RELEASE_PATHS": "os_release",
    "INSTALLER_FILES": "python_dist", "NO_RECORD": "python_dist",
    "checked_rows": "python_dist", "content_fingerprint": "python_dist",
    "headers": "python_dist", "is_installer_file": "python_dist",
    "normalize_name": "python_dist", "record_digest": "python_dist",
    "record_rows": "python_dist",
}
__all__ = sorted(_HOME)


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(f"module 'containers.catalogers' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(f"containers.catalogers.{_HOME[name]}"), name)
