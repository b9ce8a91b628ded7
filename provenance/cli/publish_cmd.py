"""`prov publish` (results -> signed bundle) and `prov keygen` (an ed25519 key pair)."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import typer

from provenance.cli import app
from provenance.model.errors import ProvError

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
    out: Path = typer.Option(None, "--out", "-o", help="Bundle: a directory, or a .tar.gz file."),
    to: str = typer.Option(
        None, "--to", help="Also push it as an OCI artifact: registry:HOST/REPO[:TAG]."
    ),
    param: list[str] = typer.Option(
        None, "--param", help="External parameter NAME=VALUE (model, engine arguments); repeatable."
    ),
    dependency: list[str] = typer.Option(
        None, "--dependency",
        help="Another resolved dependency NAME=sha256:HEX (a dataset; the model files the run "
             "read are listed without it); repeatable."
    ),
    force: bool = typer.Option(False, "--force", help="Replace an existing bundle."),
    allow_unrecorded: bool = typer.Option(
        False, "--allow-unrecorded",
        help="Publish results the run did not record as outputs (said in the statement)."),
    as_json: bool = typer.Option(False, "--json", help="Print what was published as JSON."),
) -> None:
    """Bundle results with their run, manifest, SBOM and an in-toto/SLSA attestation (DSSE)."""
    from provenance.publish import publish as do_publish
    from provenance.sbom import resolve_subject

    if not run and not manifest:
        raise ProvError("give --run RUN (or --manifest FILE) for the results' provenance")
    if out is None and to is None:
        raise ProvError("give --out BUNDLE (a directory or .tar.gz) and/or --to registry:...")
    target = _push_target(to)
    subject = resolve_subject(run=run, manifest=manifest)
    image_digest = _image_digest(subject) if target else None
    if target is not None:
        from provenance.publish import subject_descriptor

        subject_descriptor(target, image_digest)  # fail before building anything
    import tempfile

    with tempfile.TemporaryDirectory(prefix="prov-publish-") as tmp:
        dest = out if out is not None else Path(tmp) / "bundle.tar.gz"
        done = do_publish(results, subject, dest, key_path=key,
                          parameters=_pairs(param, "--param"),
                          dependencies=_pairs(dependency, "--dependency", digest=True),
                          force=force, allow_unrecorded=allow_unrecorded)
        how = f"signed with {done.key_id}" if done.signed else "UNSIGNED (no --key given)"
        where = str(done.path) if out is not None else "a bundle"
        print(f"published {done.subjects} result(s) to {where}, {how}"
              + (f"; {done.kl_cards} KL disclosure card(s)" if done.kl_cards else ""),
              file=sys.stderr)
        pushed = None
        if target is not None:
            pushed = _push(done.path, Path(tmp), image_digest, target)
            if not as_json:
                print(pushed)
        if as_json:
            from provenance.cli.output import print_json

            print_json({"bundle": str(done.path) if out is not None else None,
                        "subjects": done.subjects, "signed": done.signed,
                        "key_id": done.key_id if done.signed else None,
                        "kl_cards": done.kl_cards, "pushed": pushed})


def _push_target(to: str | None):
    """--to's registry target, refused when it names a digest; None without --to."""
    if to is None:
        return None
    from provenance.publish import parse_target

    target = parse_target(to)
    if target.digest:
        raise ProvError(f"{to}: push to a repository or tag, not a digest")
    return target


def _push(bundle: Path, tmp: Path, image_digest: str | None, target) -> str:
    """Push the bundle as an OCI artifact referring to the image; the pushed reference."""
    from provenance.publish import push_bundle

    digest, how_ref = push_bundle(_archive_bytes(bundle, tmp), image_digest, target)
    pushed = f"registry:{target.host}/{target.repository}@{digest}"
    print(f"pushed {pushed} (subject {image_digest}, {how_ref})", file=sys.stderr)
    return pushed


def _image_digest(subject) -> str:
    image = subject.manifest.facts.get("image")
    if isinstance(image, dict):
        for k in ("manifest_digest", "digest"):
            if isinstance(image.get(k), str) and image[k].startswith("sha256:"):
                return image[k]
    raise ProvError("--to needs a run or manifest of a container image (its manifest has no "
                    "image digest to attach the bundle to)")


def _archive_bytes(path: Path, tmp: Path) -> bytes:
    from provenance.publish import is_archive, write_tar_gz

    if is_archive(path):
        return path.read_bytes()
    packed = tmp / "packed.tar.gz"
    write_tar_gz(path, packed)
    return packed.read_bytes()


@app.command()
def keygen(
    out: Path = typer.Option(Path("prov-signing"), "--out", "-o",
                             help="Path prefix: writes PREFIX.key and PREFIX.pub."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing key pair."),
) -> None:
    """Create an ed25519 key pair for signing bundles."""
    from provenance.publish import keys

    priv, pub, kid = keys.generate(out, force=force)
    print(f"private key {priv} (keep it secret), public key {pub}, key id {kid}",
          file=sys.stderr)
