"""The `prov` command line: one typer app. Each command module registers its commands on
`app` when imported; `run` imports only the modules of the command it is given (every one for
`prov --help`), and command modules import the rooms they call inside their commands, so
`prov --help` never imports torch, vllm, docker, cyclonedx or rich tables.
"""

from __future__ import annotations

import importlib
import sys

import typer

from provenance.model.errors import EXIT_CODES


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


# Which modules register each top-level command (bench/bench_startup.py: `prov snapshot`
# with only its module against every module imported).
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
    from provenance.exec import recover

    return recover(store, info)


def load_commands(name: str | None = None) -> None:
    """Register command `name` on `app` (None, an option or an unknown name: every command,
    as `prov --help` lists them), and for a command that reads runs, the store's hook that
    finishes an abandoned run's record."""
    modules = COMMAND_MODULES.get(name or "")
    if modules is None:
        modules = tuple(dict.fromkeys(m for ms in COMMAND_MODULES.values() for m in ms))
    for module in modules:
        importlib.import_module(f"provenance.cli.{module}")
    if name in READS_RUNS:
        from provenance.store import on_abandoned

        on_abandoned(_recover_abandoned)


def command(escape_markup: bool = True):
    """The click command tree of `app` (the commands loaded so far: `load_commands`), with
    metavars that name what a value is."""
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
    args = sys.argv[1:] if args is None else list(args)
    try:
        load_commands(args[0] if args else None)
        # Without standalone mode click returns typer.Exit's code instead of exiting.
        code = command()(args=args, prog_name="prov", standalone_mode=False)
    except (Exception, KeyboardInterrupt) as exc:  # click's usage errors come here too
        from provenance.cli.failure import failed

        return failed(exc)
    return code if isinstance(code, int) else 0
