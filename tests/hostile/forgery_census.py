"""Forgery census: `python -m tests.hostile.forgery_census CHECKOUT OUT.json`.

With CHECKOUT's own prov: record a run (`prov exec`), publish it signed (`prov publish
--run`), then forge the bundle in every way tests/hostile/publish/test_forgeries.py does
(the forgeries edit files and re-sign with the right key or another one; nothing here
depends on the checkout) and ask CHECKOUT's `prov verify` about each. A forgery counts as
accepted when verify exits 0. Run it against the old main and this branch for the table.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

PROV = str(Path(sys.executable).parent / "prov")


def _sign(payload: bytes, key_path: Path) -> dict:
    from cryptography.hazmat.primitives import serialization

    from provenance.publish.keys import key_id

    key = serialization.load_pem_private_key(key_path.read_bytes(), password=None)
    t = b"application/vnd.in-toto+json"
    pae = b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)
    return {"payload": base64.b64encode(payload).decode(), "payloadType": t.decode(),
            "signatures": [{"keyid": key_id(key.public_key()),
                            "sig": base64.b64encode(key.sign(pae)).decode()}]}


def _statement(b: Path) -> dict:
    env = json.loads((b / "attestation.dsse.json").read_text())
    return json.loads(base64.b64decode(env["payload"]))


def _resign(b: Path, key: Path, st: dict) -> None:
    payload = (json.dumps(st, indent=2, sort_keys=True) + "\n").encode()
    (b / "attestation.dsse.json").write_text(json.dumps(_sign(payload, key)))


def _envelope(b: Path, fn) -> None:
    env = json.loads((b / "attestation.dsse.json").read_text())
    out = fn(env)
    (b / "attestation.dsse.json").write_text(out if isinstance(out, str) else json.dumps(env))


def _dup_payload(env):
    evil = json.loads(base64.b64decode(env["payload"]))
    evil["predicate"]["buildDefinition"]["externalParameters"]["command"] = ["rm", "-rf", "/"]
    e64 = base64.b64encode(json.dumps(evil).encode()).decode()
    rest = json.dumps({k: v for k, v in env.items() if k != "payload"})[1:]
    return f'{{"payload": "{e64}", "payload": "{env["payload"]}", {rest}'


def _edit_sbom(b: Path, key: Path, edit) -> None:
    doc = json.loads((b / "sbom.cdx.json").read_text())
    edit(doc)
    data = json.dumps(doc, indent=2).encode()
    (b / "sbom.cdx.json").write_bytes(data)
    st = _statement(b)
    for d in st["predicate"]["runDetails"]["byproducts"]:
        if d["name"] == "sbom.cdx.json":
            d["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    _resign(b, key, st)


def _debs(doc):
    return [c for c in doc["components"] if c.get("purl", "").startswith("pkg:deb/")]


def _deb_version(doc):
    c = _debs(doc)[0]
    old = c["version"]
    c["version"] = "99.0"
    c["purl"] = c["purl"].replace(f"@{old}", "@99.0")
    c["bom-ref"] = c["purl"]


def _ext(st):
    return st["predicate"]["buildDefinition"]["externalParameters"]


def _rewrite_resign(signer: Path):
    def f(b):
        st = _statement(b)
        _ext(st)["command"] = ["rm", "-rf", "/"]
        _resign(b, signer, st)
    return f


def forgeries(key: Path, other: Path) -> dict[str, tuple]:
    """name -> (mutate(bundle), verify with the right key?)"""
    def add(rel, text='{"x": 1}'):
        def f(b):
            (b / rel).parent.mkdir(parents=True, exist_ok=True)
            (b / rel).write_text(text)
        return f

    def resigned(edit):
        def f(b):
            st = _statement(b)
            edit(st)
            _resign(b, key, st)
        return f

    def symlink(b):
        r = next((b / "results").iterdir())
        moved = b.parent / f"moved-{r.name}"
        shutil.move(r, moved)
        r.symlink_to(moved)

    return {
        "extra EVIL.sh": (add("EVIL.sh", "rm -rf /"), True),
        "extra runs/ffff.json": (add("runs/" + "f" * 16 + ".json"), True),
        "extra manifests/ffff.json": (add("manifests/" + "f" * 64 + ".json"), True),
        "second attestation.intoto.json": (add("attestation.intoto.json"), True),
        "symlinked result": (symlink, True),
        "changed keyid": (lambda b: _envelope(b, lambda e: e["signatures"][0].__setitem__(
            "keyid", "sha256:" + "0" * 64)), True),
        "junk in base64": (lambda b: _envelope(b, lambda e: e.__setitem__(
            "payload", e["payload"][:8] + "\n" + e["payload"][8:])), True),
        "extra envelope field": (lambda b: _envelope(b, lambda e: e.__setitem__("x", 1)), True),
        "duplicate payload, evil first": (lambda b: _envelope(b, _dup_payload), True),
        "re-signed: command rm -rf /": (resigned(lambda st: _ext(st).__setitem__(
            "command", ["rm", "-rf", "/"])), True),
        "re-signed: run parameters": (resigned(lambda st: _ext(st).__setitem__(
            "runParameters", {"model": "other"})), True),
        "re-signed: invocation id": (resigned(lambda st: st["predicate"]["runDetails"][
            "metadata"].__setitem__("invocationId", "r-other")), True),
        "re-signed: SBOM Debian version": (lambda b: _edit_sbom(b, key, _deb_version), True),
        "re-signed: SBOM Debian removed": (lambda b: _edit_sbom(b, key, lambda d: d.__setitem__(
            "components", [c for c in d["components"] if c not in _debs(d)])), True),
        "no --key: re-signed by another key": (lambda b: _resign(b, other, _statement(b)),
                                               False),
        "no --key: command rewritten, re-signed": (_rewrite_resign(other), False),
    }


def census(checkout: Path, work: Path) -> dict:
    env = {**os.environ, "PYTHONPATH": str(checkout), "PROV_STORE": str(work / "store"),
           "NO_COLOR": "1"}

    def prov(*args, check=True):
        p = subprocess.run([PROV, *args], cwd=work, env=env, capture_output=True, text=True,
                           timeout=300)
        if check and p.returncode != 0:
            raise RuntimeError(f"prov {args[0]}: {p.stderr}")
        return p

    prov("exec", "-q", "-o", "out.json", "--", "python3", "-c",
         "open('out.json','w').write('{\"metric\": \"x\", \"value\": 1}')")
    runs = json.loads(prov("runs", "--json").stdout)
    rid = (runs if isinstance(runs, list) else runs["runs"])[0]["run_id"]
    prov("keygen", "-o", "k")
    prov("keygen", "-o", "mallory")
    prov("publish", "out.json", "--run", rid, "--key", "k.key", "--out", "good")
    out = {"good bundle, --key": prov("verify", "good", "--key", "k.pub", check=False).returncode}
    accepted = []
    for name, (mutate, with_key) in forgeries(work / "k.key", work / "mallory.key").items():
        b = work / f"forged-{len(accepted)}-{abs(hash(name))}"
        shutil.copytree(work / "good", b, symlinks=True)
        mutate(b)
        args = ["verify", str(b)] + (["--key", "k.pub"] if with_key else [])
        code = prov(*args, check=False).returncode
        out[name] = code
        if code == 0:
            accepted.append(name)
    return {"checkout": str(checkout), "tried": len(out) - 1, "accepted": len(accepted),
            "accepted_forgeries": accepted, "exit_codes": out}


def main() -> None:
    checkout = Path(sys.argv[1]).resolve()
    with tempfile.TemporaryDirectory(prefix="prov-forgery-") as tmp:
        doc = census(checkout, Path(tmp))
    print(json.dumps(doc, indent=1))
    if len(sys.argv) > 2:
        Path(sys.argv[2]).write_text(json.dumps(doc, indent=1))


if __name__ == "__main__":
    main()
