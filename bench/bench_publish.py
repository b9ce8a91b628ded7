"""SBOM, audit and publish/verify speed, measured side by side in one run.

    .venv/bin/python bench/bench_publish.py [--repeats N] [--advisories N]

Median of N interleaved runs, as CLI processes (what a user waits for):
  prov sbom (this venv, JSON, strictly validated)  vs  cyclonedx-py environment (same venv)
  prov audit --osv-db (N synthetic OSV records)    vs  prov audit --osv-url (pip-audit's OSV
                                                       client against a loopback service
                                                       serving the same records)
  prov publish (signed .tar.gz) and prov verify    (absolute; no outside tool does both)
Absolute times on a shared machine are noisy; the ratios are the result.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

BIN = Path(sys.executable).parent
PROV = [sys.executable, "-c", "from provenance.cli import main; main()"]


def timed(cmd: list[str], ok=(0,)) -> float:
    start = time.perf_counter()
    r = subprocess.run(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    if r.returncode not in ok:
        raise SystemExit(f"{cmd[:4]} failed ({r.returncode}): {r.stderr.decode()[:300]}")
    return time.perf_counter() - start


def synthetic_db(root: Path, names: list[str], count: int) -> list[dict]:
    """OSV records spread over the installed names; every third affects nothing installed."""
    records = []
    for i in range(count):
        name = names[i % len(names)]
        rec = {"schema_version": "1.6.0", "id": f"BENCH-{i:05d}", "modified":
               f"2025-01-{1 + i % 28:02d}T00:00:00Z", "summary": f"synthetic {i}",
               "affected": [{"package": {"ecosystem": "PyPI", "name": name},
                             "ranges": [{"type": "ECOSYSTEM", "events": [
                                 {"introduced": "0"}, {"fixed": f"0.0.{i + 1}"}]}]}]}
        records.append(rec)
        (root / f"{rec['id']}.json").write_text(json.dumps(rec))
    return records


def serve(records: list[dict]):
    from packaging.version import Version

    from provenance.audit.osv_db import Advisory, matches

    by_name: dict[str, list] = {}
    for r in records:
        by_name.setdefault(r["affected"][0]["package"]["name"], []).append(r)

    class H(BaseHTTPRequestHandler):
        def do_POST(self):  # noqa: N802
            q = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
            name, v = q["package"]["name"], Version(q["version"])
            hits = [r for r in by_name.get(name, [])
                    if matches(Advisory(r["id"], (), "", "", tuple(r["affected"])), name, v)[0]]
            body = json.dumps({"vulns": hits} if hits else {}).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, *a):
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--advisories", type=int, default=2000)
    args = ap.parse_args()
    tmp = Path(tempfile.mkdtemp(prefix="prov-bench-publish-"))
    snap = tmp / "m.json"
    subprocess.run([*PROV, "snapshot", "-o", str(snap), "-f", "json"], check=True,
                   capture_output=True)
    facts = json.loads(snap.read_text())
    names = sorted(facts["python"]["packages"])
    db = tmp / "osv"
    db.mkdir()
    records = synthetic_db(db, names, args.advisories)
    server = serve(records)
    url = f"http://127.0.0.1:{server.server_address[1]}/v1/query"
    subprocess.run([*PROV, "keygen", "-o", str(tmp / "k")], check=True, capture_output=True)
    result = tmp / "result.json"
    result.write_text(json.dumps({"metric": "top1_agreement", "value": 0.93}))

    cases = {
        "prov sbom (manifest of this venv)": [*PROV, "sbom", "--manifest", str(snap), "-o",
                                               str(tmp / "s.json")],
        "prov sbom (this venv, incl. snapshot)": [*PROV, "sbom", "-o", str(tmp / "s2.json")],
        "cyclonedx-py environment": [str(BIN / "cyclonedx-py"), "environment", "--spec-version",
                                     "1.6", "-o", str(tmp / "c.json"), sys.executable],
        "prov audit --osv-db": [*PROV, "audit", "--manifest", str(snap), "--osv-db", str(db),
                                "--json"],
        "prov audit --osv-url (pip-audit client)": [*PROV, "audit", "--manifest", str(snap),
                                                    "--osv-url", url, "--json"],
        "prov publish (signed, .tar.gz)": [*PROV, "publish", str(result), "--manifest",
                                            str(snap), "--key", str(tmp / "k.key"), "--out",
                                            str(tmp / "b.tar.gz"), "--force"],
        "prov verify (signed, .tar.gz)": [*PROV, "verify", str(tmp / "b.tar.gz"), "--key",
                                           str(tmp / "k.pub")],
    }
    times: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(args.repeats):
        for name, cmd in cases.items():
            times[name].append(timed(cmd, ok=(0, 1)))
    server.shutdown()
    server.server_close()
    shutil.rmtree(tmp, ignore_errors=True)
    med = {k: statistics.median(v) for k, v in times.items()}
    print(f"{len(names)} Python packages, {len(facts['os'].get('dpkg', {}))} Debian packages, "
          f"{args.advisories} advisories, median of {args.repeats}")
    print(f"{'case':45} {'seconds':>8}")
    for k, v in med.items():
        print(f"{k:45} {v:8.2f}")
    print(f"ratio sbom(manifest) / cyclonedx-py: "
          f"{med['prov sbom (manifest of this venv)'] / med['cyclonedx-py environment']:.2f}")
    print(f"ratio audit offline / pip-audit online (loopback): "
          f"{med['prov audit --osv-db'] / med['prov audit --osv-url (pip-audit client)']:.2f}")


if __name__ == "__main__":
    main()
