"""`prov verify`: a bundle against its signature, or an image/environment against a lock.

The command only dispatches; each room owns its own verification:
- `--lock FILE [SOURCE]`: `lockfiles` (image locks and environment locks);
- `BUNDLE` (a directory, .tar.gz or registry reference): `provenance.publish`.
"""

from __future__ import annotations

from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import ProvError


@app.command()
def verify(
    target: str = typer.Argument(None, help="A bundle, or with --lock the image SOURCE to check."),
    lock: Path = typer.Option(None, "--lock", help="Check an image or environment against a lock."),
    image: str = typer.Option(None, "--image", help="With --lock: the image SOURCE to check."),
    key: Path = typer.Option(None, "--key", help="Public key for a signed bundle."),
    python: str = typer.Option(None, "--python", help="With --lock: check this interpreter's env."),
    as_json: bool = typer.Option(False, "--json", help="Machine-readable output."),
    no_signature: bool = typer.Option(
        False, "--no-signature",
        help="Check a bundle's contents without a trusted key (authenticity NOT checked)."),
) -> None:
    """Verify a published bundle, or an image/environment against its lock."""
    if lock is not None:
        if image and target:
            raise ProvError("give the image either as SOURCE or with --image, not both")
        from lockfiles.read import is_environment_lock

        if is_environment_lock(lock):  # pylock.toml, uv.lock, requirements.txt
            from provenance.cli.lock_cmd import verify_environment_command

            code = verify_environment_command(lock, image or target, as_json, python=python)
            raise typer.Exit(code)
        from lockfiles.verify_command import verify_lock_command

        raise typer.Exit(verify_lock_command(lock, source=image or target, as_json=as_json))
    if target is None:
        raise ProvError("nothing to verify: give a BUNDLE, or --lock FILE")
    from provenance.publish.verify_command import verify_bundle_command

    raise typer.Exit(verify_bundle_command(target, key=key, as_json=as_json,
                                           no_signature=no_signature))
