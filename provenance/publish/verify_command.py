"""`prov verify BUNDLE [--key PUB]`: print each numbered step with its verdict."""

from __future__ import annotations

import json
from pathlib import Path

from provenance.publish.verify import FAIL, PASS, SKIP, WARN, verify_bundle


def verify_bundle_command(target: str, key: Path | None, as_json: bool,
                          no_signature: bool = False) -> int:
    if key is not None:
        from provenance.keys import load_public

        load_public(key)  # a private key or a bad file: exit 2 before anything is judged
    if target.startswith("registry:"):
        report = _verify_from_registry(target, key, no_signature)
    else:
        report = verify_bundle(target, key, no_signature)
    if as_json:
        from provenance.cli.output import print_json

        print_json(report.to_json())
    else:
        from provenance.cli.output import console

        out = console()
        if report.headline:  # first line: nobody's signature was checked
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
    return 1 if report.failed else 0


def _verify_from_registry(text: str, key: Path | None, no_signature: bool = False):
    """Pull the artifact, verify the bundle, and check it names the image it hangs off."""
    import base64
    import shutil
    import tempfile

    from provenance.publish.archive import extract_tar_gz
    from provenance.publish.bundle import SIGNED_NAME, UNSIGNED_NAME
    from provenance.publish.registry import parse_target, pull_bundle
    from provenance.publish.verify import FAIL

    target = parse_target(text)
    tmp = Path(tempfile.mkdtemp(prefix="prov-verify-registry-"))
    try:
        manifest = pull_bundle(target, tmp / "bundle.tar.gz")
        extract_tar_gz(tmp / "bundle.tar.gz", tmp / "bundle")
        report = verify_bundle(str(tmp / "bundle"), key, no_signature)
        report.target = text
        subject = (manifest.get("subject") or {}).get("digest")
        first = report.steps[0]
        first.details.insert(0, f"pulled {text} (manifest and bundle blob digests match); "
                                f"subject image {subject or 'none'}")
        if report.failed is None and subject:
            signed, unsigned = tmp / "bundle" / SIGNED_NAME, tmp / "bundle" / UNSIGNED_NAME
            if signed.exists():
                payload = base64.b64decode(json.loads(signed.read_text())["payload"])
            else:
                payload = unsigned.read_bytes()
            deps = json.loads(payload)["predicate"]["buildDefinition"]["resolvedDependencies"]
            images = {"sha256:" + d["digest"].get("sha256", "") for d in deps
                      if d.get("name") == "image"}
            step = report.steps[4]
            if subject not in images:
                step.verdict = FAIL
                step.details.append(f"the artifact hangs off {subject}, but the statement's "
                                    f"image is {', '.join(sorted(images)) or 'absent'}")
            else:
                step.details.append(f"artifact subject {subject} is the run's image")
        return report
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
