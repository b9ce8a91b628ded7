"""`prov verify BUNDLE [--key PUB]`: print each numbered step with its verdict."""

from __future__ import annotations

import json
from pathlib import Path

from provenance.publish.verify import FAIL, PASS, SKIP, WARN, verify_bundle


def verify_bundle_command(target: str, key: Path | None, as_json: bool) -> int:
    if target.startswith("registry:"):
        from provenance.errors import ProvError

        raise ProvError("verifying bundles in a registry is not supported in this build")
    report = verify_bundle(target, key)
    if as_json:
        from provenance.cli.output import print_json

        print_json(report.to_json())
    else:
        from provenance.cli.output import console

        out = console()
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
            signed = report.steps[1].verdict == PASS
            out.print("[green]bundle verified[/]" + ("" if signed else
                      " (contents only: signature not checked or bundle unsigned)"))
    return 1 if report.failed else 0
