"""Help-text conventions applied once to the whole click tree (see tests/provenance/cli).

typer shows a value's type as `<str>`, which says nothing; every option and argument gets a
metavar naming what the value is (PATH, RUN, KEY, ...). Rich markup would eat literal
brackets such as `[tool.prov]` in help text, so help text is escaped before rich renders it.
"""

from __future__ import annotations

from typing import Any

# parameter name -> metavar; anything else: PATH for a path, N for a number, else its NAME
METAVARS: dict[str, str] = {
    "a": "REF", "b": "REF", "run": "RUN", "cand": "RUN", "ref": "REF", "target": "TARGET",
    "vary": "KEY", "only": "KEY", "param": "KEY=VALUE", "image": "SOURCE", "source": "SOURCE",
    "python": "PYTHON", "alt_python": "PYTHON", "index_url": "URL", "osv_url": "URL",
    "find_links": "DIR", "osv_db": "DIR", "workdir": "DIR", "store": "DIR", "spec": "SPEC",
    "command": "CMD", "cat": "FILE", "fmt": "FORMAT", "tag": "TAG", "name": "NAME",
    "timeout": "SECONDS",
    "manifest": "PATH", "output": "PATH", "config": "PATH", "key": "PATH", "engine": "ENGINE",
    "platform": "OS/ARCH", "dependency": "SPEC", "to": "REF", "model": "PATH",
}


def _metavar(param: Any) -> str:
    if param.name in METAVARS:
        return METAVARS[param.name]
    kind = getattr(param.type, "name", "")
    if kind == "path":
        return "PATH"
    if kind in ("integer", "int", "float"):
        return "N"
    return (param.name or "VALUE").upper()


class _Named:
    """Wraps a param type so rich help shows the metavar where typer would print `<str>`."""

    def __init__(self, inner: Any, metavar: str) -> None:
        self._inner, self._metavar = inner, metavar

    def __getattr__(self, attr: str) -> Any:
        return getattr(self._inner, attr)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._inner(*args, **kwargs)

    def get_metavar(self, param: Any, ctx: Any = None) -> str:
        return self._metavar


def walk(cmd: Any, path: tuple[str, ...] = ("prov",)):
    """(command path, click command) for every leaf command, in name order."""
    if hasattr(cmd, "commands"):
        for name, sub in sorted(cmd.commands.items()):
            yield from walk(sub, (*path, name))
    else:
        yield " ".join(path), cmd


def _escape(text: str | None) -> str | None:
    return text.replace("[", "\\[") if text else text


def apply(root: Any, escape_markup: bool = True) -> None:
    """Name every metavar; escape brackets in help text when rich will render it."""
    nodes = [root]
    while nodes:
        cmd = nodes.pop()
        nodes.extend(getattr(cmd, "commands", {}).values())
        if escape_markup:
            cmd.help, cmd.short_help = _escape(cmd.help), _escape(cmd.short_help)
        for param in cmd.params:
            if getattr(param, "is_flag", False) or param.name in ("help",):
                continue
            if escape_markup and getattr(param, "help", None):
                param.help = _escape(param.help)
            if param.metavar is None and type(param).__name__.endswith("Option"):
                param.metavar = _metavar(param)
            elif type(param).__name__.endswith("Argument") and param.metavar is None:
                param.type = _Named(param.type, _metavar(param))
                more = "..." if param.nargs != 1 else ""
                param.metavar = (param.name or "value").upper() + more
