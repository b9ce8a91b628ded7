"""What verify's step 8 checks of a bundle's exchanges (served.py), and one receipt against them.

Each receipt names a server run whose record the bundle holds; its manifest digest is that
run's record's, or one of the run's record chain (a receipt given while the server was
serving names the live record's manifest), each such manifest bundled and its identity
digest recomputed; its request and response digests are its exchange's. A receipt held by
a third party passes when an exchange of the bundle carries exactly it.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from provenance.model.errors import ProvError
from provenance.model.inputs import read_json
from provenance.publish.served import EXCHANGES_KIND, RECEIPT_KEYS

_HEX = re.compile(r"^[0-9a-f]{64}$")
_DIGEST = re.compile(r"^sha256:[0-9a-f]{64}$")


@dataclass
class Checked:
    """The bundle's receipts once step 8 passed: (exchanges file, seq, receipt) each."""

    receipts: list[tuple[str, Any, dict[str, Any]]] = field(default_factory=list)
    servers: set[str] = field(default_factory=set)


def _object(root: Path, name: str) -> dict[str, Any]:
    doc = read_json(root / name, "bundle file")
    if not isinstance(doc, dict):
        raise ProvError(f"{name} is not a JSON object")
    return doc


def _manifest_ok(root: Path, names: set[str], digest: Any, whose: str) -> None:
    from provenance.model import Manifest, ManifestError

    if not isinstance(digest, str) or not _DIGEST.match(digest):
        raise ProvError(f"{whose}: manifest digest {digest!r} is not sha256:<hex>")
    rel = f"manifests/{digest[7:]}.json"
    if rel not in names:
        raise ProvError(f"{whose}: its manifest {digest} is not in the bundle")
    try:
        got = Manifest.read(root / rel).digest()
    except ManifestError as exc:
        raise ProvError(f"{rel}: {exc}") from None
    if got != digest:
        raise ProvError(f"{rel}: identity digest recomputed as {got}")


def _servers(root: Path, names: set[str], doc: dict[str, Any], where: str) -> dict[str, set]:
    """server run id -> the manifest digests a receipt of it may name."""
    out: dict[str, set] = {}
    for s in doc.get("servers") or []:
        sid = s.get("run_id") if isinstance(s, dict) else None
        if not isinstance(sid, str):
            raise ProvError(f"{where}: a server entry without a run id")
        rel = f"runs/{sid}.json"
        if rel not in names:
            raise ProvError(f"{where}: server run {sid}'s record is not in the bundle")
        record = _object(root, rel)
        if record.get("run_id") != sid:
            raise ProvError(f"{rel} is the record of run {record.get('run_id')!r}, not {sid}")
        chain = s.get("record_chain") if isinstance(s.get("record_chain"), list) else []
        digests = {record.get("manifest_digest")} | {
            c.get("manifest_digest") for c in chain if isinstance(c, dict)}
        for d in sorted(digests, key=str):
            _manifest_ok(root, names, d, f"server run {sid}")
        out[sid] = digests
    return out


def receipt_problem(r: dict[str, Any]) -> str | None:
    """What makes `r` no receipt (None: it has the five fields, each of its type)."""
    missing = [k for k in RECEIPT_KEYS if k not in r]
    if missing:
        return f"lacks {', '.join(missing)}"
    bad = [k for k in RECEIPT_KEYS[:4] if not isinstance(r[k], str)]
    if not isinstance(r["time"], (int, float)) or isinstance(r["time"], bool):
        bad.append("time")
    return f"has a malformed {', '.join(bad)}" if bad else None


def _exchange(e: Any, servers: dict[str, set], where: str) -> dict[str, Any]:
    if not isinstance(e, dict) or not isinstance(e.get("receipt"), dict):
        raise ProvError(f"{where}: an exchange without a receipt")
    seq, r = e.get("seq"), e["receipt"]
    at = f"{where} exchange seq {seq}"
    why = receipt_problem(r)
    if why:
        raise ProvError(f"{at}: its receipt {why}")
    sid = r["server_run_id"]
    if sid not in servers:
        raise ProvError(f"{at}: its receipt names server run {sid!r}, whose record is not in "
                        "the bundle")
    if e.get("server_run_id") != sid:
        raise ProvError(f"{at}: served by {e.get('server_run_id')!r}, receipt says {sid!r}")
    if r["server_manifest_digest"] not in servers[sid]:
        raise ProvError(f"{at}: receipt's server manifest {r['server_manifest_digest']} is not "
                        f"one server run {sid}'s records held")
    for side in ("request", "response"):
        got = (e.get(side) or {}).get("sha256") if isinstance(e.get(side), dict) else None
        if not isinstance(got, str) or not _HEX.match(got):
            raise ProvError(f"{at}: its {side} has no sha256")
        if r[f"{side}_sha256"] != got:
            raise ProvError(f"{at}: receipt's {side}_sha256 {r[f'{side}_sha256']} is not the "
                            f"exchange's {got}")
    return r


def check_exchanges(root: Path, byproducts: list[str], client_run_id: Any) -> Checked:
    """Step 8 over every exchanges/ file; ProvError naming the first mismatch."""
    names = set(byproducts)
    files = sorted(n for n in names if n.startswith("exchanges/"))
    out = Checked()
    for name in files:
        doc = _object(root, name)
        if doc.get("kind") != EXCHANGES_KIND:
            raise ProvError(f"{name}: kind {doc.get('kind')!r} is not {EXCHANGES_KIND}")
        if name != f"exchanges/{client_run_id}.json" or doc.get("client_run_id") != \
                client_run_id:
            raise ProvError(f"{name}: not the exchanges of the bundle's run {client_run_id}")
        servers = _servers(root, names, doc, name)
        out.servers |= set(servers)
        exchanges = doc.get("exchanges")
        if not isinstance(exchanges, list):
            raise ProvError(f"{name}: no exchanges list")
        for e in exchanges:
            receipt = _exchange(e, servers, name)
            out.receipts.append((name, e.get("seq"), receipt))
    extra = sorted(n for n in names if n.startswith("runs/")
                   and n != f"runs/{client_run_id}.json"
                   and n[5:-5] not in out.servers)
    if extra:
        raise ProvError(f"{extra[0]}: a run record that is neither the bundle's run nor a "
                        "server run of its exchanges")
    return out


def read_receipt(path: Path) -> dict[str, Any]:
    """A receipt as a client saved it: the receipt object, or an exchange holding one."""
    doc = read_json(path, "receipt")
    if isinstance(doc, dict) and isinstance(doc.get("receipt"), dict):
        doc = doc["receipt"]
    if not isinstance(doc, dict) or receipt_problem(doc):
        why = receipt_problem(doc) if isinstance(doc, dict) else "is not a JSON object"
        raise ProvError(f"{path}: not a receipt: it {why} (a receipt is a JSON object with "
                        f"strings {', '.join(RECEIPT_KEYS[:4])} and a number time)")
    return {k: doc[k] for k in RECEIPT_KEYS}


def check_receipt(receipt: dict[str, Any], checked: Checked) -> str:
    """The exchange carrying exactly `receipt`, said in one line; ProvError otherwise."""
    for name, seq, r in checked.receipts:
        if r == receipt:
            return (f"{name} exchange seq {seq}: server run {r['server_run_id']}, request "
                    f"sha256:{r['request_sha256'][:12]}..., response "
                    f"sha256:{str(r['response_sha256'])[:12]}...")
    sid = receipt.get("server_run_id")
    if sid not in checked.servers:
        raise ProvError(f"the receipt names server run {sid!r}, which this bundle does not "
                        "hold")
    near = [(n, s, r) for n, s, r in checked.receipts
            if r["request_sha256"] == receipt.get("request_sha256")]
    if near:
        n, s, r = near[0]
        differ = [k for k in RECEIPT_KEYS if r[k] != receipt.get(k)]
        raise ProvError(f"no exchange carries this receipt: {n} exchange seq {s} has its "
                        f"request but another {', '.join(differ)}")
    raise ProvError(f"no exchange of the bundle carries this receipt (request "
                    f"{json.dumps(receipt.get('request_sha256'))})")
