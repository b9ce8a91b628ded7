"""A client run bound to a server run, published: the bundle holds its exchanges with their
receipts and the server run's record and manifests; verify's step 8 checks every receipt,
`--receipt` one a third party holds. The server is the tiny FastAPI one (the vllm venv's
fastapi and uvicorn) under `prov exec`, the client curl under `prov exec`; published once
while the server serves (receipts name its live record) and once after it stopped."""

# ruff: noqa: F811 - pytest fixtures imported from tests.exec_support
from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest

from provenance.publish.bundle import UNSIGNED_NAME, publish
from tests.exec_support import prov, prov_cache  # noqa: F401 - fixtures
from tests.provenance.exec.serving.serving_support import client, free_port, served
from tests.provenance.sbom.helpers_sbom import sample_subject
from tests.runners.vllm_venv import VENV, vllm_python

TINY = Path(__file__).parents[1] / "exec" / "serving" / "tiny_server.py"
VPY = VENV / "bin" / "python"
SECRET = "sk-prov-receipt-secret-0077"
@pytest.fixture(scope="module", autouse=True)
def _vllm_venv() -> None:
    """The server runs on the vllm venv's fastapi and uvicorn: built here if missing (a
    skip would make these tests pass unseen on a fresh machine)."""
    vllm_python()


@pytest.fixture(scope="module")
def senv(tmp_path_factory, prov_cache) -> dict[str, str]:
    root = tmp_path_factory.mktemp("served")
    env = dict(os.environ)
    env.update({"PROV_STORE": str(root / "store"), "PROV_CACHE_DIR": str(prov_cache),
                "COLUMNS": "250", "PROV_NO_PYPROJECT": "1"})
    return env


def _curl(url: str, out: str) -> list[str]:
    body = json.dumps({"model": "m", "prompt": "hi", "max_tokens": 3, "logprobs": 2})
    return [shutil.which("curl") or "curl", "-sf", "--noproxy", "*", "-o", out,
            "-H", "content-type: application/json", "-H", f"Authorization: Bearer {SECRET}",
            "-d", body, f"{url}/v1/completions"]


def _publish(senv, cwd: Path, run_id: str, name: str) -> Path:
    out = cwd / name
    p = prov("publish", "out.json", "--run", run_id, "--out", str(out), env=senv, cwd=cwd,
             timeout=300)
    assert p.returncode == 0, p.stderr.decode(errors="replace")
    return out


@pytest.fixture(scope="module")
def bundles(senv):
    """(client run, server run id, bundle published while serving, bundle after its end)."""
    cwd = Path(senv["PROV_STORE"]).parent
    port = free_port()
    argv = [str(VPY), str(TINY), "--port", str(port), "the,cat,sat"]
    with served(senv, cwd, argv, port, "tiny-receipts") as srv:
        run = client(senv, cwd, *_curl(srv.url, "out.json"), options=("-o", "out.json"))
        live = _publish(senv, cwd, run["run_id"], "live")
    final = _publish(senv, cwd, run["run_id"], "final")
    return run, srv.run_id, live, final


def _verify(bundle: Path, *extra: str) -> tuple[int, str]:
    """(exit status, output) of `prov verify BUNDLE --no-signature` (one run: each verify
    re-checks the SBOM, seconds)."""
    p = prov("verify", str(bundle), "--no-signature", *extra, env=dict(os.environ))
    return p.returncode, (p.stdout + p.stderr).decode(errors="replace")


def _failed_at(text: str, step: int, name: str, detail: str) -> bool:
    """The output says verification failed at `step`, whose last detail holds `detail`."""
    block = text.split(f"{step}. {name}: FAIL", 1)[-1].split("verification FAILED")[0]
    return f"verification FAILED at step {step} ({name})" in text and detail in block


def _exchanges(bundle: Path, run: dict) -> Path:
    return bundle / "exchanges" / f"{run['run_id']}.json"


def _receipt(bundle: Path, run: dict) -> dict:
    return json.loads(_exchanges(bundle, run).read_text())["exchanges"][0]["receipt"]


def _rehash(bundle: Path, name: str) -> None:
    """The unsigned statement made to name `name`'s new bytes (what a forger would do)."""
    path = bundle / UNSIGNED_NAME
    st = json.loads(path.read_text())
    digest = hashlib.sha256((bundle / name).read_bytes()).hexdigest()
    for d in st["predicate"]["runDetails"]["byproducts"]:
        if d["name"] == name:
            d["digest"]["sha256"] = digest
    path.write_text(json.dumps(st, indent=2, sort_keys=True) + "\n")


def test_the_bundle_holds_the_exchanges_and_the_server_run(bundles):
    run, server, live, _ = bundles
    assert (live / "runs" / f"{server}.json").is_file()
    doc = json.loads(_exchanges(live, run).read_text())
    assert doc["client_run_id"] == run["run_id"]
    [entry] = doc["servers"]
    assert entry["run_id"] == server and entry["record"] == f"runs/{server}.json"
    [ex] = doc["exchanges"]
    assert ex["method"] == "POST" and ex["path"] == "/v1/completions" and ex["status"] == 200
    assert ex["response"]["choices"][0]["tokens"] == ["the", "cat", "sat"]
    assert ex["receipt"]["request_sha256"] == ex["request"]["sha256"]
    # where the client was, who served it, where the stores lie: not in a bundle
    assert not {"client", "server_store", "server_pid", "server_address"} & set(ex)
    digest = ex["receipt"]["server_manifest_digest"]
    assert (live / "manifests" / f"{digest[7:]}.json").is_file()
    statement = json.loads((live / UNSIGNED_NAME).read_text())
    names = {d["name"] for d in statement["predicate"]["runDetails"]["byproducts"]}
    assert {f"exchanges/{run['run_id']}.json", f"runs/{server}.json"} <= names


@pytest.mark.parametrize("which", ["live", "final"])
def test_verify_passes_with_every_receipt_checked(bundles, which):
    run, server, live, final = bundles
    rc, text = _verify(live if which == "live" else final)
    assert rc == 0, text
    for n in range(3, 9):
        assert f"\n{n}. " in text and text.split(f"\n{n}. ", 1)[1].split("\n")[0] \
            .endswith(": pass"), text
    assert f"8. exchange receipts: pass\n     1 receipt(s) name server run(s) {server}" in text


def test_the_api_key_is_nowhere_in_the_bundle(bundles):
    _, _, live, final = bundles
    for bundle in (live, final):
        data = b"".join(p.read_bytes() for p in sorted(bundle.rglob("*")) if p.is_file())
        assert SECRET.encode() not in data
        assert b"Bearer" not in data.replace(b"Authorization: <redacted>", b"")


def test_a_tampered_exchange_digest_fails_at_contents_then_at_receipts(bundles, tmp_path):
    run, _, live, _ = bundles
    bundle = tmp_path / "b"
    shutil.copytree(live, bundle)
    path = _exchanges(bundle, run)
    doc = json.loads(path.read_text())
    doc["exchanges"][0]["response"]["sha256"] = "0" * 64
    path.write_text(json.dumps(doc, indent=2, sort_keys=True) + "\n")
    rc, text = _verify(bundle)  # the statement hashes the file: step 4 decides
    assert rc == 1 and _failed_at(text, 4, "subjects re-hashed", "exchanges/"), text
    _rehash(bundle, path.relative_to(bundle).as_posix())  # a statement made to agree
    rc, text = _verify(bundle)
    assert rc == 1 and _failed_at(text, 8, "exchange receipts", "response_sha256"), text


@pytest.mark.parametrize("named", ["first record", "never held"])
def test_a_receipt_may_name_any_manifest_of_the_servers_record_chain(bundles, tmp_path, named):
    run, _, _, final = bundles
    bundle = tmp_path / "b"
    shutil.copytree(final, bundle)
    path = _exchanges(bundle, run)
    doc = json.loads(path.read_text())
    [server] = doc["servers"]
    first = server["record_chain"][0]["manifest_digest"]  # the started record's snapshot
    assert first != server["manifest_digest"]
    digest = first if named == "first record" else "sha256:" + "1" * 64
    doc["exchanges"][0]["receipt"]["server_manifest_digest"] = digest
    path.write_text(json.dumps(doc))
    _rehash(bundle, path.relative_to(bundle).as_posix())
    rc, text = _verify(bundle)
    if named == "first record":
        assert rc == 0, text
    else:
        assert rc == 1 and _failed_at(text, 8, "exchange receipts", "is not one server run"), \
            text


def test_receipt_good_tampered_unknown_and_malformed(bundles, tmp_path):
    from provenance.model.errors import ProvError
    from provenance.publish.receipts import read_receipt

    run, _, live, _ = bundles
    good = _receipt(live, run)
    cases = {
        "good": good,
        "tampered": {**good, "response_sha256": "f" * 64},
        "unknown": {**good, "server_run_id": "0123456789abcdef"},
        "exchange": {"receipt": good, "path": "/v1/completions"},  # an exchange line as saved
        "bad": '{"request_sha256": "ab"',
        "half": {"request_sha256": "ab"},
    }
    for name, doc in cases.items():
        (tmp_path / f"{name}.json").write_text(doc if isinstance(doc, str) else json.dumps(doc))
    assert read_receipt(tmp_path / "exchange.json") == good
    rc, text = _verify(live, "--receipt", str(tmp_path / "good.json"))
    assert rc == 0 and "10. receipt: pass" in text, text
    rc, text = _verify(live, "--receipt", str(tmp_path / "tampered.json"))
    assert rc == 1 and _failed_at(text, 10, "receipt",
                                  "has its request but another response_sha256"), text
    rc, text = _verify(live, "--receipt", str(tmp_path / "unknown.json"))
    assert rc == 1 and _failed_at(text, 10, "receipt", "which this bundle does not hold"), text
    for name in ("bad", "half"):  # bad input: one line, exit 2, before any step runs
        rc, text = _verify(live, "--receipt", str(tmp_path / f"{name}.json"))
        assert rc == 2 and len(text.strip().splitlines()) == 1, text
        with pytest.raises(ProvError):
            read_receipt(tmp_path / f"{name}.json")
    assert "not a receipt" in text


def test_a_bundle_without_exchanges_skips_step_8_and_refuses_a_receipt(bundles, tmp_path):
    run, _, live, _ = bundles
    results = tmp_path / "r.json"
    results.write_text('{"metric": "x", "value": 1}')
    out = tmp_path / "plain"
    publish([results], sample_subject(), out, allow_unrecorded=True)
    (tmp_path / "good.json").write_text(json.dumps(_receipt(live, run)))
    rc, text = _verify(out, "--receipt", str(tmp_path / "good.json"))
    assert rc == 1 and "8. exchange receipts: skipped" in text, text
    assert _failed_at(text, 10, "receipt", "holds no exchanges"), text


def test_a_stray_run_record_is_refused(bundles, tmp_path):
    run, server, live, _ = bundles
    bundle = tmp_path / "b"
    shutil.copytree(live, bundle)
    path = _exchanges(bundle, run)
    doc = json.loads(path.read_text())
    doc["servers"] = []
    doc["exchanges"] = []
    path.write_text(json.dumps(doc))
    _rehash(bundle, path.relative_to(bundle).as_posix())
    rc, text = _verify(bundle)
    assert rc == 1 and _failed_at(text, 8, "exchange receipts", f"runs/{server}.json"), text
