"""The `prov` command line. Each command group lives in its own module and registers itself.

Heavy modules (torch, vllm, docker, cyclonedx, rich tables) are imported inside commands,
never here, so `prov --help` stays fast.
"""

from __future__ import annotations

import os
import sys

from provenance.cli.fast import dispatch

dispatch(sys.argv)  # `prov snapshot ...` runs and exits here, without importing typer

import typer  # noqa: E402

from provenance.model.errors import EXIT_CODES  # noqa: E402


def _exit_code_epilog() -> str:
    """The exit-code table of provenance/model/errors.py, as `prov --help` shows it."""
    return "Exit codes: " + "; ".join(f"{code} {what}" for code, what in EXIT_CODES.items()) + "."


app = typer.Typer(
    name="prov",
    help="Provenance for LLM inference experiments: snapshot, compare and publish environments.",
    epilog=_exit_code_epilog(),
    no_args_is_help=True,
    add_completion=True,  # typer's own --install-completion / --show-completion
    pretty_exceptions_enable=False,
)


def _print_version(value: bool) -> None:
    if value:
        from provenance import __version__

        print(f"prov {__version__}")
        raise typer.Exit(0)


@app.callback()
def _group(
    version: bool = typer.Option(
        False, "--version", callback=_print_version, is_eager=True,
        help="Print prov's version and exit.",
    ),
) -> None:
    """Keeps `prov` a command group even when only one command module is loaded."""


# Which modules register each top-level command. `prov NAME ...` imports only NAME's
# modules (about 15 ms less at start-up); anything else (`--help`, an unknown name, an
# import from Python) registers every command.
COMMAND_MODULES: dict[str, tuple[str, ...]] = {
    "snapshot": ("snapshot_cmd",), "diff": ("diff_cmd",), "verify": ("verify_cmd",),
    "lock": ("lock_cmd",), "pin": ("pin_cmd",), "compare": ("compare_cmd",),
    "exec": ("exec_cmd",), "runs": ("runs_cmd",), "show": ("runs_cmd",), "store": ("store_cmd",),
    "demo": ("demo_cmd",), "run": ("run_cmd", "replay_cmd"), "audit": ("audit_cmd",),
    "publish": ("publish_cmd",), "keygen": ("publish_cmd",), "sbom": ("sbom_cmd",),
    "report": ("report_cmd",), "selftest": ("selftest_cmd",), "sweep": ("sweep_cmd",),
    "serve": ("exec_cmd",),
}


# Commands that read runs: the first to find a run abandoned finishes its record
# (exec/recover.py, through the store's hook: the store may not import exec).
READS_RUNS = {"runs", "show", "compare", "store", "report", "publish", "audit", "sbom", "run",
              "sweep", "verify"}


def _recover_abandoned(store, info):
    from provenance.exec.recover import recover

    return recover(store, info)


def _register(argv: list[str]) -> None:
    import importlib

    invoked = os.path.basename(argv[0]) == "prov" and len(argv) > 1
    modules = COMMAND_MODULES.get(argv[1]) if invoked else None
    if modules is None:
        modules = tuple(dict.fromkeys(m for ms in COMMAND_MODULES.values() for m in ms))
    for name in modules:
        importlib.import_module(f"provenance.cli.{name}")
    if not invoked or argv[1] in READS_RUNS:  # not for `prov --help` (the store's import)
        import provenance.store.store as store_module

        store_module.RECOVER_ABANDONED = _recover_abandoned


_register(sys.argv)


def command(escape_markup: bool = True):
    """The click command tree of `app`, with metavars that name what a value is."""
    from provenance.cli import conventions, option_checks

    cmd = typer.main.get_command(app)
    conventions.apply(cmd, escape_markup)
    option_checks.apply(cmd)  # contradicting or empty options: refused, never ignored
    return cmd


def main() -> None:
    """Entry point: user errors print one line; unexpected ones too, unless PROV_DEBUG=1."""
    sys.exit(run())


def run(args: list[str] | None = None) -> int:
    """Run prov on `args` (default: sys.argv[1:]) and return its exit status. Every error is
    turned into its one line here, once (provenance/cli/failure.py); SystemExit passes."""
    try:
        # Without standalone mode click returns typer.Exit's code instead of exiting.
        code = command()(args=args, prog_name="prov", standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:  # click's usage errors come here too
        return _failed(exc)
    return code if isinstance(code, int) else 0


def _failed(exc: BaseException) -> int:
    from provenance.cli.failure import error_line, failed

    try:  # typer >= 0.27 vendors click; a separately installed click is not the one raising
        from typer._click import exceptions as click_exc
    except ImportError:
        from click import exceptions as click_exc  # type: ignore[no-redef]
    if isinstance(exc, typer.Exit):
        return exc.exit_code
    if isinstance(exc, click_exc.UsageError):
        where = exc.ctx.command_path if exc.ctx is not None else "prov"
        error_line(f"{exc.format_message()} (see '{where} --help')")
        return 2
    if isinstance(exc, click_exc.ClickException):
        error_line(exc.format_message())
        return exc.exit_code or 2
    if isinstance(exc, getattr(click_exc, "Abort", ())):
        print("prov: aborted", file=sys.stderr)
        return 130
    return failed(exc)
