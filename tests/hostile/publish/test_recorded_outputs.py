"""#18 item 6: `prov publish FILE --run R` signs only what R recorded as its outputs."""

from __future__ import annotations

import base64
import json

from provenance.publish.bundle import SIGNED_NAME
from tests.helpers import run_prov

WRITE = "import sys; open('out.json', 'w').write(sys.argv[1])"


def _run_id(env, cwd):
    runs = json.loads(run_prov("runs", "--json", env=env, cwd=cwd, check=True).stdout)
    return (runs if isinstance(runs, list) else runs["runs"])[0]["run_id"]


def test_a_file_overwritten_by_a_later_run_is_refused_unless_allowed(tmp_path):
    env = {"PROV_STORE": str(tmp_path / "store")}
    run_prov("exec", "-q", "-o", "out.json", "--", "python3", "-c", WRITE, '{"v": 1}',
             env=env, cwd=tmp_path, check=True)
    first = _run_id(env, tmp_path)
    run_prov("exec", "-q", "-o", "out.json", "--", "python3", "-c", WRITE, '{"v": 2}',
             env=env, cwd=tmp_path, check=True)
    run_prov("keygen", "-o", str(tmp_path / "k"), check=True)
    refused = run_prov("publish", "out.json", "--run", first, "--key", str(tmp_path / "k.key"),
                       "--out", str(tmp_path / "b"), env=env, cwd=tmp_path)
    assert refused.returncode == 2 and "did not record" in refused.stderr
    assert "--allow-unrecorded" in refused.stderr and "sha256:" in refused.stderr
    assert len(refused.stderr.strip().splitlines()) == 1 and not (tmp_path / "b").exists()

    allowed = run_prov("publish", "out.json", "--run", first, "--key", str(tmp_path / "k.key"),
                       "--out", str(tmp_path / "b"), "--allow-unrecorded", env=env, cwd=tmp_path)
    assert allowed.returncode == 0, allowed.stderr
    env_doc = json.loads((tmp_path / "b" / SIGNED_NAME).read_text())
    st = json.loads(base64.b64decode(env_doc["payload"]))
    ext = st["predicate"]["buildDefinition"]["externalParameters"]
    assert ext["allowUnrecorded"] == ["results/out.json"]  # said in the signed statement
    assert "annotations" not in st["subject"][0]  # not claimed as a run output
    ok = run_prov("verify", str(tmp_path / "b"), "--key", str(tmp_path / "k.pub"))
    assert ok.returncode == 0, ok.stdout


def test_the_runs_own_output_publishes_and_is_annotated(tmp_path):
    env = {"PROV_STORE": str(tmp_path / "store")}
    run_prov("exec", "-q", "-o", "out.json", "--", "python3", "-c", WRITE, '{"v": 1}',
             env=env, cwd=tmp_path, check=True)
    rid = _run_id(env, tmp_path)
    p = run_prov("publish", "out.json", "--run", rid, "--out", str(tmp_path / "b"), env=env,
                 cwd=tmp_path)
    assert p.returncode == 0, p.stderr
    st = json.loads((tmp_path / "b" / "attestation.intoto.json").read_text())
    assert st["subject"][0]["annotations"] == {"runOutput": "out.json"}
    assert "allowUnrecorded" not in st["predicate"]["buildDefinition"]["externalParameters"]
