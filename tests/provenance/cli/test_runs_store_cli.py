# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
"""`prov runs`, `prov show`, `prov snapshot` into the store, `prov diff` by digest, fsck CLI."""

from __future__ import annotations

import json
import os

from tests.exec_support import penv, prov, prov_cache, runs_json, show_json  # noqa: F401


def one_line_error(p, code=2) -> str:
    assert p.returncode == code, (p.returncode, p.stdout, p.stderr)
    err = p.stderr.decode().strip()
    assert "Traceback" not in err and len(err.splitlines()) == 1, err
    return err


def test_runs_table_json_and_show(penv):
    assert one_line_error(prov("show", "abc", env=penv)).startswith("prov: error: no store")
    empty = prov("runs", "--json", env=penv)
    assert empty.returncode == 0 and json.loads(empty.stdout) == []
    for i in range(3):
        prov(
            "exec", "-q", "--name", f"r{i}", "--tag", "k=v", "--", "sh", "-c", f"exit {i}", env=penv
        )
    runs = runs_json(penv)
    assert [r["name"] for r in runs] == ["r2", "r1", "r0"]  # newest first
    assert [r["exit_status"] for r in runs] == [2, 1, 0]
    table = prov("runs", env=penv).stdout.decode()
    for r in runs:  # piped: whole ids, tab-separated
        assert f"{r['run_id']}\t" in table
    assert "complete" in table and "failed (exit 2)" in table  # was "complete" (issue #18)
    rid = runs[1]["run_id"]
    human = prov("show", rid[:7], env=penv)
    assert human.returncode == 0
    text = human.stdout.decode()
    assert rid in text and "exit  1" in text and "k=v" in text
    rec = show_json(rid, penv)
    assert rec["tags"] == {"k": "v"} and rec["state"] == "failed"  # exit 1 (was "complete")
    assert "failed (exit 1)" in text
    assert "no such run" in one_line_error(prov("show", "fffffff", env=penv))
    assert "has no stored" in one_line_error(prov("show", rid, "--cat", "nothing", env=penv))
    bad = prov("exec", "--tag", "novalue", "--", "true", env=penv)
    assert "KEY=VALUE" in one_line_error(bad)


def test_snapshot_stores_its_manifest_and_diff_takes_digests_and_runs(penv, tmp_path):
    p = prov("snapshot", env=penv)
    assert p.returncode == 0, p.stderr
    rows = dict(line.split(None, 1) for line in p.stdout.decode().splitlines() if line.strip())
    stored = rows["stored"].strip()
    assert stored.startswith("sha256:")
    obj = os.path.join(penv["PROV_STORE"], "objects", "sha256", stored[7:9], stored[9:])
    with open(obj) as fh:
        doc = json.load(fh)
    assert doc["digest"] == rows["digest"].strip()
    # --out writes the file and stores nothing
    out = tmp_path / "m.toml"
    assert prov("snapshot", "--out", str(out), env=penv).returncode == 0
    d = prov("diff", stored[:16], str(out), env=penv)
    assert d.returncode == 0, d.stderr  # same identity
    prov("exec", "-q", "--", "true", env=penv)
    rid = runs_json(penv)[0]["run_id"]
    d2 = prov("diff", rid[:8], rows["digest"].strip()[:20], "--json", env=penv)
    # the run's identity is the snapshot's plus the command it ran
    assert json.loads(d2.stdout)["identity"]["removed"] == {"code.program": ["true"]}
    assert "no such manifest" in one_line_error(prov("diff", "0000beef", rid, env=penv))


def test_store_fsck_and_reindex_cli(penv):
    assert "no store" in one_line_error(prov("store", "fsck", env=penv))
    prov("exec", "-q", "--", "echo", "x", env=penv)
    ok = prov("store", "fsck", env=penv)
    assert ok.returncode == 0 and ok.stdout.decode().strip().endswith("ok")
    assert "1 complete" in ok.stdout.decode()
    re = prov("store", "reindex", env=penv)
    assert re.returncode == 0 and "1 runs" in re.stdout.decode()
    rec = show_json(runs_json(penv)[0]["run_id"], penv)
    log = rec["logs"]["stdout"]["digest"]
    path = os.path.join(penv["PROV_STORE"], "objects", "sha256", log[7:9], log[9:])
    os.chmod(path, 0o644)
    with open(path, "wb") as fh:
        fh.write(b"y\n")
    bad = prov("store", "fsck", env=penv)
    assert bad.returncode == 1
    assert f"corrupt   {log}" in bad.stdout.decode()
    assert prov("show", rec["run_id"], "--cat", "stdout", env=penv).returncode != 0
