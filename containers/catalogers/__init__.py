"""One small module per file format, each a pure `parse(...)` over bytes or text.

Re-exports load on first use (PEP 562): the host's Python collector imports
`containers.catalogers.python_dist` inside every inspected interpreter, and should not pay
for the dpkg cataloger's dataclasses there.
"""

__all__ = ["DpkgPackage", "parse_os_release", "parse_status"]
_HOME = {"DpkgPackage": "dpkg", "parse_status": "dpkg", "parse_os_release": "os_release"}


def __getattr__(name: str) -> object:
    if name not in _HOME:
        raise AttributeError(name)
    import importlib

    return getattr(importlib.import_module(f"containers.catalogers.{_HOME[name]}"), name)
