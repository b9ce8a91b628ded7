"""Options checked at the edge, for every command: refused in one line (exit 2), never ignored.

- Options that contradict each other, or mean nothing without another: `prov show RUN
  --json --cat stdout` used to print the log and drop --json without a word. Each entry of
  CONFLICTS and NEEDS is refused before the command does any work; only options given on
  the command line count (a default is not a choice).
- An empty value (`--out ''`, `prov exec -o ''`): a path option would read it as `.`, the
  working directory; a name, a URL or a key as nothing at all.
`apply` hooks both into the click tree (`provenance.cli.command`).
tests/hostile/cli/test_option_checks.py tries every entry.
"""

from __future__ import annotations

import functools
from typing import Any

# command -> (option, option, why): the two cannot be given together
CONFLICTS: dict[str, tuple[tuple[str, str, str], ...]] = {
    "show": (("--json", "--cat", "--cat writes the stored file itself, not JSON"),
             ("--json", "--libs", "--json holds every library already"),
             ("--cat", "--libs", "--cat writes the stored file itself")),
    "snapshot": (("--image", "--python", "an image is read without running an interpreter"),
                 ("--image", "--verify-files", "an image's files are checked by `prov pin`")),
    "verify": (("--key", "--no-signature", "--key checks the signature; --no-signature skips "
                "it"),
               ("--lock", "--key", "a lock is not signed"),
               ("--lock", "--no-signature", "a lock is not signed")),
    "lock": (("--offline", "--index-url", "--offline asks no index"),),
    "audit": (("--osv-db", "--osv-url", "--osv-db is offline"),
              ("--osv-db", "--timeout", "--osv-db asks no service")),
    "sweep": (("--ray", "--budget", "--budget works with the local executor only"),
              ("--ray", "--jobs", "--jobs works with the local executor only; Ray places "
               "the cells")),
    "selftest identity": (("--programs", "--gpu", "--programs runs on the CPU"),
                          ("--programs", "--alt-python", "--alt-python is a row of the matrix"),
                          ("--programs", "--tokens", "--tokens is the matrix's text length")),
    "run diverge": (("--standalone", "--vary", "--standalone runs without the gate that "
                     "--vary declares to"),),
}

# command -> {option: the option it only works with}
NEEDS: dict[str, dict[str, str]] = {
    "snapshot": {"--format": "--out"},
    "verify": {"--image": "--lock", "--python": "--lock", "--run": "--model",
               "--signature": "--model"},
    "publish": {"--force": "--out"},
    "selftest identity": {"--python": "--programs"},
}


def refusal(command: str, given: set[str]) -> str | None:
    """Why options `given` (long names) cannot go together in `command`, or None."""
    for a, b, why in CONFLICTS.get(command, ()):
        if a in given and b in given:
            return f"{a} and {b} cannot be used together ({why})"
    for option, needed in NEEDS.get(command, {}).items():
        if option in given and needed not in given:
            return f"{option} works only with {needed}"
    return None


def _long_name(param: Any) -> str:
    return next((o for o in param.opts if o.startswith("--")), param.opts[0])


def _click() -> tuple[Any, Any, Any]:
    try:  # typer >= 0.27 vendors click (as provenance.cli does)
        from typer._click import core, exceptions, globals
    except ImportError:
        from click import core, exceptions, globals  # type: ignore[no-redef]
    return core, exceptions, globals


def apply(cmd: Any, path: str = "") -> None:
    """Hook the checks into every command of the click tree `cmd`."""
    if hasattr(cmd, "commands"):
        for name, sub in cmd.commands.items():
            apply(sub, f"{path} {name}".strip())
        return
    for param in cmd.params:
        if param.opts and param.opts[0].startswith("-") and not getattr(param, "is_flag", False):
            _refuse_empty(param)
    if (path in CONFLICTS or path in NEEDS) and cmd.callback is not None:
        _check_pairs(cmd, path)


def _refuse_empty(param: Any) -> None:
    """An option given an empty value on the command line is refused (before its type reads
    '' as a path, `.`)."""
    process = param.process_value

    def checked(ctx: Any, value: Any) -> Any:
        core, exceptions, _ = _click()
        given = ctx.get_parameter_source(param.name) is core.ParameterSource.COMMANDLINE
        if given and (value == "" or (isinstance(value, list | tuple) and "" in value)):
            raise exceptions.BadParameter("an empty value", ctx=ctx, param=param)
        return process(ctx, value)

    param.process_value = checked


def _check_pairs(cmd: Any, path: str) -> None:
    callback = cmd.callback

    @functools.wraps(callback)
    def checked(*args: Any, **kwargs: Any) -> Any:
        from provenance.model.errors import ProvError

        core, _, click_globals = _click()
        ctx = click_globals.get_current_context()
        given = {_long_name(p) for p in cmd.params if p.opts and ctx.get_parameter_source(
            p.name) is core.ParameterSource.COMMANDLINE}
        why = refusal(path, given)
        if why:
            raise ProvError(why)
        return callback(*args, **kwargs)

    cmd.callback = checked
