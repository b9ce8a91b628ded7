"""Options that contradict each other, need another, or are given empty (issue #30): every
entry of provenance/cli/option_checks.py is refused in one line, exit 2, before any work; and
every option the table names exists on its command, so the table cannot rot. In-process
(provenance.cli.run), as the app reads the command line."""

from __future__ import annotations

import pytest

from provenance.cli import option_checks
from tests.test_docs_cli import _commands

COMMANDS = {name.removeprefix("prov "): cmd for name, cmd in _commands()}


def _value(cmd, option: str) -> list[str]:
    """`option` as given on a command line: a flag alone, else with a plausible value."""
    param = next(p for p in cmd.params if option in p.opts)
    return [option] if param.is_flag else [option, "1"]


def _required(cmd) -> list[str]:
    """Plausible values of the command's required arguments and options."""
    out: list[str] = []
    for p in cmd.params:
        if p.required:
            out += ["0123"] if not p.opts[0].startswith("-") else [p.opts[0], "1"]
    return out


def _refused(capsys, argv: list[str]) -> str:
    from provenance.cli import run

    code = run(argv)
    err = capsys.readouterr().err.strip()
    assert code == 2, (argv, err)
    assert len(err.splitlines()) == 1 and err.startswith("prov: error: "), err
    return err


PAIRS = [(c, a, b) for c, pairs in option_checks.CONFLICTS.items() for a, b, _ in pairs]
NEEDS = [(c, a, b) for c, needs in option_checks.NEEDS.items() for a, b in needs.items()]


@pytest.mark.parametrize("command,a,b", PAIRS, ids=[f"{c}: {a} {b}" for c, a, b in PAIRS])
def test_contradicting_options_are_refused(capsys, command, a, b):
    cmd = COMMANDS[command]
    argv = [*command.split(), *_value(cmd, a), *_value(cmd, b), *_required(cmd)]
    err = _refused(capsys, argv)
    assert f"{a} and {b} cannot be used together" in err


@pytest.mark.parametrize("command,option,needed", NEEDS,
                         ids=[f"{c}: {a} needs {b}" for c, a, b in NEEDS])
def test_an_option_without_the_one_it_needs_is_refused(capsys, command, option, needed):
    cmd = COMMANDS[command]
    assert any(needed in p.opts for p in cmd.params), needed
    argv = [*command.split(), *_value(cmd, option), *_required(cmd)]
    err = _refused(capsys, argv)
    assert f"{option} works only with {needed}" in err


@pytest.mark.parametrize("argv", [
    ["show", "--json", "--cat", "stdout", "0123"],  # the pair the issue names
    ["show", "0123", "--cat=stdout", "--json"],  # spelled otherwise, in another order
    ["exec", "-o", "", "--", "true"], ["exec", "--output=", "--", "true"],
    ["snapshot", "--out", ""], ["sbom", "--image", ""], ["exec", "-t", "", "--", "true"],
    ["compare", "0123", "4567", "--vary", ""],
])
def test_the_issue_cases(capsys, argv):
    err = _refused(capsys, argv)
    assert "cannot be used together" in err or "an empty value" in err


def test_defaults_are_not_choices(capsys, tmp_path, monkeypatch):
    """`prov show RUN --cat stdout` alone passes the check (the default --json=False is no
    conflict): it fails later, on the missing store, in its own words."""
    from provenance.cli import run

    monkeypatch.setenv("PROV_STORE", str(tmp_path / "none"))
    assert run(["show", "0123", "--cat", "stdout"]) == 2
    assert "no store" in capsys.readouterr().err
