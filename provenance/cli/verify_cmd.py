"""`prov verify`: a bundle against its signature, or an image/environment against a lock.

The command dispatches and renders; each room owns its own verification:
- `--lock FILE [SOURCE]`: `lockfiles` (environment locks: `lock_cmd`; image locks:
  `verify_image`);
- `BUNDLE` (a directory, .tar.gz or registry reference): `provenance.publish`, whose report
  is printed here step by step; `--receipt FILE` adds a step checking one exchange receipt;
- `--model DIR` with `--run RUN` and/or `--signature FILE`: a model directory's files against
  a run's recorded digests or an OpenSSF model-signing signature (`verify_model`); with a
  BUNDLE, against the bundle's model component (the bundle's step 9).
"""

from __future__ import annotations

from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import EXIT_DIFFERS, EXIT_OK, ProvError


@app.command()
def verify(
    target: str = typer.Argument(None, help="A bundle, or with --lock the image SOURCE to check."),
    lock: Path = typer.Option(None, "--lock", help="Check an image or environment against a lock."),
    image: str = typer.Option(None, "--image", help="With --lock: the image SOURCE to check."),
    key: Path = typer.Option(
        None, "--key",
        help="Public key: a bundle's (ed25519), or with --signature the model signer's (EC)."),
    python: str = typer.Option(None, "--python", help="With --lock: check this interpreter's env."),
    exact: bool = typer.Option(
        False, "--exact",
        help="With an environment --lock: an installed package the lock does not name is a "
             "mismatch (the default only for locks that name a whole environment)."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    no_signature: bool = typer.Option(
        False, "--no-signature",
        help="Check a bundle's or --signature's digests without a trusted key "
             "(authenticity NOT checked)."),
    model: Path = typer.Option(
        None, "--model",
        help="Check a model directory's files (against a BUNDLE, --run and/or --signature)."),
    run: str = typer.Option(None, "--run", help="With --model: the digests this run recorded."),
    signature: Path = typer.Option(
        None, "--signature", help="With --model: an OpenSSF model-signing signature (model.sig)."),
    receipt: Path = typer.Option(
        None, "--receipt",
        help="With a BUNDLE: check one exchange receipt (JSON) a client saved against it."),
) -> None:
    """Verify a published bundle, an image/environment against its lock, or a model directory."""
    _refuse_mixed(target, lock, model, run, signature, receipt)
    if model is not None and (target is None or lock is not None):
        if lock is not None:
            raise ProvError("--model is checked against a BUNDLE or on its own, not with --lock")
        from provenance.cli.verify_model import verify_model_command

        raise typer.Exit(verify_model_command(model, run, signature, key, no_signature, as_json))
    if exact and lock is None:
        raise ProvError("--exact checks an environment against a --lock FILE")
    if lock is not None:
        raise typer.Exit(_verify_lock(lock, image or target, bool(image and target), as_json,
                                      python, exact))
    raise typer.Exit(_verify_bundle(target, key, no_signature, receipt, model, as_json))


def _refuse_mixed(target: str | None, lock: Path | None, model: Path | None, run: str | None,
                  signature: Path | None, receipt: Path | None) -> None:
    """Options that belong to different kinds of check, given together (exit 2)."""
    if receipt is not None and (lock is not None or (model is not None and target is None)):
        raise ProvError("--receipt is checked against a BUNDLE, not with --lock or a --model "
                        "directory on its own")
    bundle_model = model is not None and target is not None and lock is None
    if bundle_model and (run is not None or signature is not None):
        raise ProvError("with a BUNDLE, --model DIR is checked against the bundle's model; "
                        "--run and --signature check a directory on their own")


def _verify_lock(lock: Path, source: str | None, given_twice: bool, as_json: bool,
                 python: str | None, exact: bool) -> int:
    """An environment (pylock.toml, uv.lock, requirements.txt) or an image against a lock."""
    if given_twice:
        raise ProvError("give the image either as SOURCE or with --image, not both")
    from lockfiles import is_environment_lock

    if is_environment_lock(lock):
        from provenance.cli.lock_cmd import verify_environment_command

        return verify_environment_command(lock, source, as_json, python=python, exact=exact)
    if exact:
        raise ProvError(f"{lock}: an image lock names every package already; --exact is "
                        "for environment locks")
    from provenance.cli.verify_image import verify_image_lock

    return verify_image_lock(lock, source=source, as_json=as_json)


def _verify_bundle(target: str | None, key: Path | None, no_signature: bool,
                   receipt: Path | None, model: Path | None, as_json: bool) -> int:
    """A published bundle, step by step (and a receipt, and a model directory, if given)."""
    if target is None:
        raise ProvError("nothing to verify: give a BUNDLE, or --lock FILE")
    if not target.startswith("registry:") and not Path(target).exists():
        raise ProvError(f"{target}: no such bundle")  # a missing input is 2, as for --lock
    from provenance.publish import verify_target

    wanted = None
    if receipt is not None:
        from provenance.publish import read_receipt

        wanted = read_receipt(receipt)  # malformed: bad input, exit 2
    if model is not None and not model.is_dir():
        raise ProvError(f"--model {model}: not a directory")
    report = verify_target(target, key, no_signature, wanted, model)
    if as_json:
        from provenance.cli.output import print_json

        print_json(report.to_json())
    else:
        _print_steps(report)
    return EXIT_DIFFERS if report.failed else EXIT_OK


def _print_steps(report) -> None:
    """Each numbered step with its verdict, the KL disclosure cards, then the outcome."""
    import json

    from provenance.cli.output import console
    from provenance.publish import FAIL, PASS, SKIP, WARN

    out = console()
    if report.headline:  # the first line: nobody's signature was checked
        out.print(f"[yellow bold]{report.headline}[/]")
    marks = {PASS: "[green]pass[/]", FAIL: "[red bold]FAIL[/]", WARN: "[yellow]warn[/]",
             SKIP: "[dim]skipped[/]"}
    for step in report.steps:
        out.print(f"{step.number}. {step.name}: {marks[step.verdict]}")
        for line in step.details:
            out.print(f"     {line}", markup=False)
    for name, card in report.cards.items():
        out.print(f"KL disclosure for {name}:")
        out.print(json.dumps(card, indent=2, sort_keys=True), markup=False)
    failed = report.failed
    if failed:
        out.print(f"[red bold]verification FAILED at step {failed.number} ({failed.name})[/]")
    else:
        out.print("[green]bundle verified[/]" + ("" if report.authenticated else
                  " (contents only: authenticity NOT checked)"))
