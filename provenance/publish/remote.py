"""`prov verify registry:HOST/REPO@DIGEST`: pull a published artifact, verify its bundle, and
check that it names the image it hangs off (step 5)."""

from __future__ import annotations

import json
from pathlib import Path

from provenance.publish.verify import Report, verify_bundle


def verify_target(target: str, key: Path | None, no_signature: bool = False,
                  receipt: dict | None = None, model_dir: Path | None = None) -> Report:
    """Verify a bundle directory, .tar.gz, or `registry:` reference; never raises on a
    bundle that fails verification (the report says which step failed). A `key` that is
    not a public key (a private one, a FIFO, junk) is bad input and raises (exit 2)."""
    if key is not None:
        from provenance.publish.keys import load_public

        load_public(key)
    if target.startswith("registry:"):
        return verify_registry_bundle(target, key, no_signature, receipt, model_dir)
    return verify_bundle(target, key, no_signature, receipt, model_dir)


def verify_registry_bundle(text: str, key: Path | None, no_signature: bool = False,
                           receipt: dict | None = None, model_dir: Path | None = None) -> Report:
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
        report = verify_bundle(str(tmp / "bundle"), key, no_signature, receipt, model_dir)
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
