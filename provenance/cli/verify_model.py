"""`prov verify --model DIR [--run RUN] [--signature FILE [--key PUB | --no-signature]]`.

The checks live in `provenance.publish.model_dir`; here they are chosen and rendered.
Exit 0 when every check matches, 1 when a file differs, is missing or unlisted, or the
signature does not verify; bad input is a ProvError (exit 2).
"""

from __future__ import annotations

from pathlib import Path

from provenance.model.errors import EXIT_DIFFERS, EXIT_OK, ProvError


def verify_model_command(model: Path, run: str | None, signature: Path | None,
                         key: Path | None, no_signature: bool, as_json: bool) -> int:
    from provenance.publish import model_dir

    if not model.is_dir():
        raise ProvError(f"--model {model}: not a directory")
    if run is None and signature is None:
        raise ProvError("--model needs --run RUN and/or --signature FILE to check against")
    if signature is not None and key is None and not no_signature:
        raise ProvError("--signature: give --key PUBLIC.pem to check who signed it, or "
                        "--no-signature to check the digests only")
    if key is not None and signature is None:
        raise ProvError("--key with --model checks a --signature; none was given")
    checks = []
    if run is not None:
        checks.append(model_dir.from_run(model, *_run_facts(run)))
    if signature is not None:
        checks.append(model_dir.from_signature(model, signature, key))
    checks = [model_dir.compare(model, c) for c in checks]
    if as_json:
        from provenance.cli.output import print_json

        print_json({"model": str(model), "match": not any(c.failed for c in checks),
                    "checks": [c.to_json() for c in checks]})
    else:
        _print(model, checks)
    return EXIT_DIFFERS if any(c.failed for c in checks) else EXIT_OK


def _run_facts(run: str) -> tuple[str, dict]:
    from provenance.store import open_store

    store = open_store()
    if not (store.root / "objects").is_dir():
        raise ProvError(f"no store at {store.root}")
    info = store.get_run(run)
    return info.run_id, info.record.facts or {}


def _print(model: Path, checks: list) -> None:
    from provenance.cli.output import console

    out = console()
    for c in checks:
        out.print(f"{model} against {c.source}:", markup=False)
        if c.signature != "not applicable":
            mark = "[red bold]" if c.signature.startswith("FAILED") else (
                "[yellow]" if c.signature.startswith("NOT") else "[green]")
            out.print(f"  signature: {mark}{c.signature}[/]")
        for name, (want, got) in c.differing.items():
            out.print(f"  [red bold]differs[/] {name}: expected {want}, found {got}")
        for name in c.missing:
            out.print(f"  [red bold]missing[/] {name}")
        for name in c.unlisted:
            out.print(f"  [red bold]not in the signature[/] {name}")
        verdict = "[red bold]FAILED[/]" if c.failed else "[green]verified[/]"
        out.print(f"  {verdict}: {len(c.matched)} of {len(c.expected)} file(s) match")
