# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""CLI conventions, for every command of the typer app (issue #18, "A CLI that fits").

--help names its values (no `<str>`) and keeps literal brackets such as `[tool.prov]`;
every command that prints data accepts --json and prints valid JSON; piped output never
truncates ids with `…`; a missing input file exits 2 (provenance/model/errors.py's table).
"""

from __future__ import annotations

import json
import os
import re
import socket

import pytest

import provenance.cli as cli
from provenance.cli.conventions import walk
from provenance.model.errors import EXIT_CODES, EXIT_UNAVAILABLE, EXIT_USAGE
from tests.exec_support import penv, prov, prov_cache, runs_json  # noqa: F401

# Commands that print no data of their own: they write a file (keygen, report, reindex's
# index) or their output already is a JSON document (sbom: CycloneDX).
NO_JSON = {"prov keygen", "prov report", "prov sbom", "prov store reindex"}


def _commands() -> list[tuple[str, object]]:
    cli.load_commands()
    return list(walk(cli.command(escape_markup=False)))


def _flat(text: str) -> str:
    """Help text without rich's box drawing and line wrapping."""
    return " ".join(re.sub(r"[│╭╮╰╯─]", " ", text).split())


@pytest.mark.parametrize("path", [p for p, _ in _commands()])
def test_help_names_values_and_keeps_brackets(path):
    cmd = dict(_commands())[path]
    r = prov(*path.split()[1:], "--help", env={**os.environ, "COLUMNS": "200", "NO_COLOR": "1"})
    assert r.returncode == 0, r.stderr
    text = r.stdout.decode()
    assert not re.search(r"<[a-z]+>", text), re.findall(r".{30}<[a-z]+>", text)
    sources = [cmd.help or ""] + [getattr(p, "help", None) or "" for p in cmd.params]
    for literal in re.findall(r"\[[^\]\s]+\]", " ".join(sources)):  # e.g. [tool.prov]
        assert literal in _flat(text), f"{path} --help lost {literal}"


def test_top_level_help_lists_every_exit_code_and_the_version():
    text = _flat(prov("--help", env={**os.environ, "COLUMNS": "200"}).stdout.decode())
    for code, meaning in EXIT_CODES.items():
        assert f"{code} {meaning}" in text
    from provenance import __version__

    v = prov("--version", env=dict(os.environ))
    assert v.returncode == 0 and v.stdout.decode().strip() == f"prov {__version__}"
    import subprocess
    import sys

    m = subprocess.run([sys.executable, "-m", "provenance", "--version"], capture_output=True)
    assert m.returncode == 0 and m.stdout == v.stdout
    assert "--install-completion" in text and "--show-completion" in text
    words = {**os.environ, "_PROV_COMPLETE": "complete_bash", "COMP_WORDS": "prov lock --ma",
             "COMP_CWORD": "2"}
    assert prov(env=words).stdout.decode().split() == ["--manifest"]  # typer's completion


def test_every_data_command_has_json():
    missing = [p for p, c in _commands()
               if p not in NO_JSON and "--json" not in [o for x in c.params for o in x.opts]]
    assert missing == []


@pytest.fixture()
def fixture(penv, tmp_path):
    """Two runs (OMP_NUM_THREADS differs) and two manifests that differ."""
    assert prov("exec", "-q", "--", "true", env=penv).returncode == 0
    assert prov("exec", "-q", "--", "true", env={**penv, "OMP_NUM_THREADS": "3"}).returncode == 0
    b, a = (r["run_id"] for r in runs_json(penv)[:2])
    ma, mb = tmp_path / "a.json", tmp_path / "b.json"
    assert prov("snapshot", "--format", "json", "-o", str(ma), env=penv).returncode == 0
    assert prov("snapshot", "--format", "json", "-o", str(mb),
                env={**penv, "OMP_NUM_THREADS": "3"}).returncode == 0
    (tmp_path / "result.json").write_text('{"score": 1}\n')
    return {"env": penv, "a": a, "b": b, "ma": str(ma), "mb": str(mb), "tmp": tmp_path}


def _dead_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1/query"


def test_data_commands_print_valid_json(fixture):
    f, t = fixture, fixture["tmp"]
    cases = {
        ("runs", "--json"): 0,
        ("show", f["a"], "--json"): 0,
        ("diff", f["ma"], f["mb"], "--json"): 1,
        ("compare", f["a"], f["b"], "--json"): 3,
        ("compare", f["a"], f["b"], "--vary", "threads", "--json"): 0,
        ("exec", "--json", "--", "sh", "-c", "echo not-json; exit 5"): 5,
        ("snapshot", "--json"): 0,
        ("store", "fsck", "--json"): 0,
        ("audit", "--manifest", f["ma"], "--osv-url", _dead_url(), "--timeout", "2",
         "--json"): EXIT_UNAVAILABLE,
        ("lock", "--manifest", f["ma"], "--offline", "--allow-missing-hashes", "-o",
         str(t / "pylock.toml"), "--json"): 0,
        ("publish", str(t / "result.json"), "--manifest", f["ma"], "-o", str(t / "bundle"),
         "--json"): 0,
        ("verify", str(t / "bundle"), "--json"): None,  # exit per verdict; JSON either way
    }
    for args, code in cases.items():
        r = prov(*args, env=f["env"])
        assert code is None or r.returncode == code, (args, r.returncode, r.stderr[-400:])
        json.loads(r.stdout)  # one valid document on stdout, nothing else
        assert b"\r" not in r.stderr  # no progress line when stderr is not a terminal


def test_lock_shows_progress_only_on_a_terminal(fixture):
    import pty
    import subprocess

    from tests.exec_support import PROV

    f, t = fixture, fixture["tmp"]
    args = [PROV, "lock", "--manifest", f["ma"], "--offline", "--allow-missing-hashes",
            "-o", str(t / "pylock.toml")]
    master, slave = pty.openpty()
    r = subprocess.run(args, env=f["env"], stdout=subprocess.PIPE, stderr=slave, timeout=120)
    os.close(slave)
    seen = b""
    while True:
        try:
            chunk = os.read(master, 65536)
        except OSError:
            break
        if not chunk:
            break
        seen += chunk
    os.close(master)
    assert r.returncode == 0 and b"looking up artifact hashes: 1" in seen
    piped = subprocess.run(args, env=f["env"], capture_output=True, timeout=120)
    assert piped.returncode == 0 and b"looking up" not in piped.stderr


def test_piped_output_has_whole_ids(fixture):
    f = fixture
    for args in (("runs",), ("show", f["a"]), ("diff", f["ma"], f["mb"])):
        out = prov(*args, env=f["env"]).stdout.decode()
        assert "…" not in out, (args, out)
        assert not set("│┃━─┏┗") & set(out), (args, out)  # plain columns, no box drawing
    diff = prov("diff", f["ma"], f["mb"], env=f["env"]).stdout.decode()
    assert "env\tenv.OMP_NUM_THREADS\t" in diff
    runs = prov("runs", env=f["env"]).stdout.decode().splitlines()
    assert runs[0].split("\t")[0] == "run"
    assert {line.split("\t")[0] for line in runs[1:]} >= {f["a"], f["b"]}
    colored = prov("runs", env={**f["env"], "NO_COLOR": "1"}).stdout.decode()
    assert "\033[" not in colored


def test_a_missing_input_file_is_bad_input_everywhere(fixture, tmp_path):
    f, gone = fixture, str(tmp_path / "nonexistent")
    cases = [
        ("diff", gone, f["ma"]),
        ("verify", gone),
        ("verify", "--lock", gone),
        ("lock", "--manifest", gone, "-o", str(tmp_path / "pylock.toml")),
        ("audit", "--manifest", gone),
        ("sbom", "--manifest", gone),
        ("publish", gone, "--manifest", f["ma"], "-o", str(tmp_path / "b")),
        ("publish", str(f["tmp"] / "result.json"), "--manifest", gone, "-o", str(tmp_path / "c")),
        ("show", "ffffffffffff"),
        ("compare", "ffffffffffff", f["a"]),
    ]
    for args in cases:
        r = prov(*args, env=f["env"])
        assert r.returncode == EXIT_USAGE, (args, r.returncode, r.stderr)
        err = r.stderr.decode().strip().splitlines()
        assert len(err) == 1 and err[0].startswith("prov: error:"), (args, err)
