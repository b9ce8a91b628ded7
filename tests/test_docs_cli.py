"""docs/reference/cli.md lists every command and option exactly as the typer app defines them.

The block between the two markers of that page is generated from the app's click objects;
`PROV_UPDATE_GOLDEN=1` rewrites it (then review the diff), as for every golden file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from tests.golden import check_generated_block

ROOT = Path(__file__).resolve().parent.parent
PAGE = ROOT / "docs" / "reference" / "cli.md"
BEGIN = "<!-- generated from the typer app: PROV_UPDATE_GOLDEN=1 pytest tests/test_docs_cli.py -->"
END = "<!-- end of generated block -->"


def _commands() -> list[tuple[str, Any]]:

    import provenance.cli as cli

    cli.load_commands()  # every command module, as `prov --help` loads them
    order = list(cli.COMMAND_MODULES)

    def walk(cmd: Any, path: list[str]):
        if hasattr(cmd, "commands"):
            for name, sub in sorted(cmd.commands.items()):
                yield from walk(sub, [*path, name])
        else:
            yield " ".join(path), cmd

    found = list(walk(cli.command(escape_markup=False), ["prov"]))
    return sorted(found, key=lambda nc: (order.index(nc[0].split()[1]), nc[0]))


def _is_argument(param: Any) -> bool:
    return type(param).__name__.endswith("Argument")


def _usage(name: str, params: list[Any]) -> str:
    if name == "prov exec":
        return "prov exec [OPTIONS] -- CMD [ARGS]..."
    words = [name]
    if any(not _is_argument(p) for p in params):
        words.append("[OPTIONS]")
    for p in filter(_is_argument, params):
        word = p.name.upper() + ("..." if p.nargs == -1 else "")
        words.append(word if p.required else f"[{word}]")
    return " ".join(words)


def _default(param: Any) -> str:
    if param.is_flag:
        return "on" if param.default is True else "off"
    value = param.default
    if callable(value) or value in (None, [], ()):
        return "–"
    return f"`{str(value).replace(str(Path.home()), '~')}`"


def _option_row(param: Any) -> str:
    flags = ", ".join(f"`{o}`" for o in [*param.opts, *param.secondary_opts])
    text = " ".join((param.help or "").split()).replace("|", "\\|")
    if param.multiple and "epeat" not in text:
        text += " (repeatable)"
    return f"| {flags} | {_default(param)} | {text} |"


def generated_block() -> str:
    out = [BEGIN, ""]
    for name, cmd in _commands():
        out += [f"### `{name}`", "", " ".join((cmd.help or "").strip().split("\n\n")[0].split())]
        out += ["", "```", _usage(name, cmd.params), "```", ""]
        options = [p for p in cmd.params if not _is_argument(p)]
        if options:
            out += ["| option | default | meaning |", "|---|---|---|"]
            out += [_option_row(p) for p in options]
            out.append("")
    out.append(END)
    return "\n".join(out)


def test_cli_reference_matches_the_app() -> None:
    check_generated_block(PAGE, BEGIN, END, generated_block())
