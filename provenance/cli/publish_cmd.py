"""`prov publish` (results -> signed bundle) and `prov keygen` (an ed25519 key pair)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import typer

from provenance.cli import app
from provenance.errors import ProvError

_DIGEST = re.compile(r"^(sha256|sha512):[0-9a-f]{64,128}$")


def _pairs(items: list[str], option: str, digest: bool = False) -> dict[str, str]:
    out = {}
    for item in items or []:
        key, sep, value = item.partition("=")
        if not sep or not key:
            raise ProvError(f"{option} {item!r}: expected NAME=VALUE")
        if digest and not _DIGEST.match(value):
            raise ProvError(f"{option} {item!r}: the value must be sha256:<hex> or sha512:<hex>")
        out[key] = value
    return out


@app.command()
def publish(
    results: list[Path] = typer.Argument(..., help="Result files (the statement's subjects)."),
    run: str = typer.Option(None, "--run", help="The run that produced the results."),
    manifest: Path = typer.Option(
        None, "--manifest", help="Without a run: the manifest of the environment used."
    ),
    key: Path = typer.Option(None, "--key", help="ed25519 private key; without it: unsigned."),
    out: Path = typer.Option(..., "--out", "-o", help="Bundle: a directory, or a .tar.gz file."),
    param: list[str] = typer.Option(
        None, "--param", help="External parameter NAME=VALUE (model, engine arguments); repeatable."
    ),
    dependency: list[str] = typer.Option(
        None, "--dependency", help="Resolved dependency NAME=sha256:HEX (weights); repeatable."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing bundle."),
) -> None:
    """Bundle results with their run, manifest, SBOM and an in-toto/SLSA attestation (DSSE)."""
    from provenance.publish.bundle import publish as do_publish
    from provenance.sbom import resolve_subject

    if not run and not manifest:
        raise ProvError("give --run RUN (or --manifest FILE) for the results' provenance")
    subject = resolve_subject(run=run, manifest=manifest)
    done = do_publish(results, subject, out, key_path=key, parameters=_pairs(param, "--param"),
                      dependencies=_pairs(dependency, "--dependency", digest=True), force=force)
    how = f"signed with {done.key_id}" if done.signed else "UNSIGNED (no --key given)"
    print(f"published {done.subjects} result(s) to {done.path}, {how}"
          + (f"; {done.kl_cards} KL disclosure card(s)" if done.kl_cards else ""),
          file=sys.stderr)


@app.command()
def keygen(
    out: Path = typer.Option(Path("prov-signing"), "--out", "-o",
                             help="Path prefix: writes PREFIX.key and PREFIX.pub."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing key pair."),
) -> None:
    """Create an ed25519 key pair for signing bundles."""
    from provenance.keys import generate

    priv, pub, kid = generate(out, force=force)
    print(f"private key {priv} (keep it secret), public key {pub}, key id {kid}",
          file=sys.stderr)
