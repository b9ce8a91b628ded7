"""prov audit: offline OSV matching with real advisory records, pip-audit's own OSV client
against an OSV-compatible service on loopback, and an unreachable service."""

from __future__ import annotations

import json
import socket
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest
from packaging.specifiers import SpecifierSet
from packaging.version import Version

from provenance.audit.base import Package
from provenance.audit.osv_db import Advisory, OsvDbBackend, matches
from provenance.model import Manifest
from provenance.sbom import validate
from tests.golden import check_golden
from tests.provenance.sbom.helpers_sbom import prov, sample_facts

# Real advisories (GitHub Advisory Database / PyPA, in OSV format), trimmed of references.
REQUESTS_GHSA = {
    "schema_version": "1.4.0",
    "id": "GHSA-j8r2-6x86-q33q",
    "modified": "2024-11-18T16:26:11Z",
    "published": "2023-05-22T20:36:32Z",
    "aliases": ["CVE-2023-32681"],
    "related": ["PYSEC-2023-74"],
    "summary": "Unintended leak of Proxy-Authorization header in requests",
    "details": "Since Requests v2.3.0, Requests has been vulnerable to potentially leaking "
               "Proxy-Authorization headers to destination servers, specifically during "
               "redirects to an HTTPS origin.",
    "severity": [{"type": "CVSS_V3", "score": "CVSS:3.1/AV:N/AC:H/PR:N/UI:R/S:C/C:H/I:N/A:N"}],
    "affected": [{"package": {"ecosystem": "PyPI", "name": "requests",
                              "purl": "pkg:pypi/requests"},
                  "ranges": [{"type": "ECOSYSTEM",
                              "events": [{"introduced": "2.3.0"}, {"fixed": "2.31.0"}]}]}],
    "database_specific": {"cwe_ids": ["CWE-200"], "severity": "MODERATE",
                          "github_reviewed": True},
}
JINJA2_XMLATTR_KEYS = {
    "schema_version": "1.4.0",
    "id": "GHSA-h5c8-rqwp-cp95",
    "modified": "2024-02-16T08:16:59Z",
    "published": "2024-01-11T15:20:48Z",
    "aliases": ["CVE-2024-22195"],
    "summary": "Jinja vulnerable to HTML attribute injection when passing user input as keys "
               "to xmlattr filter",
    "affected": [{"package": {"ecosystem": "PyPI", "name": "Jinja2"},
                  "ranges": [{"type": "ECOSYSTEM",
                              "events": [{"introduced": "0"}, {"fixed": "3.1.3"}]}]}],
}
JINJA2_XMLATTR_CHARS = {
    "schema_version": "1.4.0",
    "id": "GHSA-h75v-3vvj-5mfj",
    "modified": "2024-06-10T18:35:45Z",
    "published": "2024-05-06T14:20:23Z",
    "aliases": ["CVE-2024-34064"],
    "summary": "Jinja vulnerable to HTML attribute injection when passing user input as keys "
               "to xmlattr filter",
    "affected": [{"package": {"ecosystem": "PyPI", "name": "jinja2"},
                  "ranges": [{"type": "ECOSYSTEM",
                              "events": [{"introduced": "0"}, {"fixed": "3.1.4"}]}]}],
}
# What the loopback service answers for, as a specifier written independently of the
# OSV range evaluation under test.
SERVED = {"GHSA-j8r2-6x86-q33q": ("requests", ">=2.3.0,<2.31.0"),
          "GHSA-h5c8-rqwp-cp95": ("jinja2", "<3.1.3"),
          "GHSA-h75v-3vvj-5mfj": ("jinja2", "<3.1.4")}
RECORDS = [REQUESTS_GHSA, JINJA2_XMLATTR_KEYS, JINJA2_XMLATTR_CHARS]


@pytest.fixture
def osv_db(tmp_path):
    root = tmp_path / "osv"
    (root / "PyPI").mkdir(parents=True)
    for rec in RECORDS:
        (root / "PyPI" / f"{rec['id']}.json").write_text(json.dumps(rec, indent=1))
    return root


def _manifest(tmp_path, requests_version="2.30.0", extra=None):
    facts = sample_facts(requests_version=requests_version)
    if extra:
        facts["python"]["packages"].update(extra)
    path = tmp_path / f"m-{requests_version}.json"
    Manifest(facts=facts).write(path, fmt="json")
    return path


def _adv(rec) -> Advisory:
    return Advisory(rec["id"], tuple(rec.get("aliases", [])), rec["summary"], rec["modified"],
                    tuple(rec["affected"]))


@pytest.mark.parametrize(
    ("rec", "name", "version", "hit"),
    [
        (REQUESTS_GHSA, "requests", "2.2.1", False),
        (REQUESTS_GHSA, "requests", "2.3.0", True),
        (REQUESTS_GHSA, "requests", "2.30.0", True),
        (REQUESTS_GHSA, "requests", "2.31.0", False),
        (REQUESTS_GHSA, "requests", "2.32.3", False),
        (JINJA2_XMLATTR_KEYS, "jinja2", "2.11.3", True),
        (JINJA2_XMLATTR_KEYS, "jinja2", "3.1.2", True),
        (JINJA2_XMLATTR_KEYS, "jinja2", "3.1.3", False),
        (JINJA2_XMLATTR_CHARS, "jinja2", "3.1.3", True),
        (JINJA2_XMLATTR_CHARS, "jinja2", "3.1.4", False),
    ],
)
def test_osv_range_matching(rec, name, version, hit):
    got, fixes = matches(_adv(rec), name, Version(version))
    assert got is hit
    assert fixes == (rec["affected"][0]["ranges"][0]["events"][1]["fixed"],)


def test_versions_list_and_last_affected():
    rec = {"id": "T-1", "summary": "", "modified": "", "affected": [
        {"package": {"ecosystem": "PyPI", "name": "pkg"}, "versions": ["1.0.5"],
         "ranges": [{"type": "ECOSYSTEM",
                     "events": [{"introduced": "2.0"}, {"last_affected": "2.4"}]}]}]}
    adv = _adv(rec)
    assert matches(adv, "pkg", Version("1.0.5"))[0]
    assert not matches(adv, "pkg", Version("1.0.6"))[0]
    assert matches(adv, "pkg", Version("2.4"))[0]
    assert not matches(adv, "pkg", Version("2.4.1"))[0]


def test_offline_audit_cli(tmp_path, osv_db):
    mpath = _manifest(tmp_path, extra={"weird": {"version": "not a version"}})
    sbom = tmp_path / "audited.cdx.json"
    r = prov("audit", "--manifest", str(mpath), "--osv-db", str(osv_db), "--json",
             "--sbom-out", str(sbom))
    assert r.returncode == 1, r.stderr  # vulnerable
    doc = json.loads(r.stdout)
    found = {(f["name"], f["version"], f["id"]) for f in doc["findings"]}
    assert found == {("requests", "2.30.0", "GHSA-j8r2-6x86-q33q"),
                     ("jinja2", "3.1.3", "GHSA-h75v-3vvj-5mfj")}
    assert doc["database"]["newest_modified"] == "2024-11-18T16:26:11Z"
    assert doc["database"]["records"] == 3 and doc["database"]["digest"].startswith("sha256:")
    assert doc["not_audited"] == 1 and doc["skipped"][0]["name"] == "weird"
    doc.pop("subject")
    doc["database"]["path"] = "OSV_DB"
    doc["backend"] = "osv-db OSV_DB"
    check_golden("audit/audit-offline.json", json.dumps(doc, indent=2, sort_keys=True) + "\n")

    text = sbom.read_text()
    validate(text)
    vulns = json.loads(text)["vulnerabilities"]
    assert {(v["id"], v["affects"][0]["ref"]) for v in vulns} == {
        ("GHSA-j8r2-6x86-q33q", "pkg:pypi/requests@2.30.0"),
        ("GHSA-h75v-3vvj-5mfj", "pkg:pypi/jinja2@3.1.3")}

    table = prov("audit", "--manifest", str(mpath), "--osv-db", str(osv_db))
    assert "GHSA-j8r2-6x86-q33q" in table.stdout and "1 packages NOT audited" in table.stdout
    clean = prov("audit", "--manifest", str(_manifest(tmp_path, "2.31.0")), "--osv-db",
                 str(osv_db), "--json")
    assert {f["id"] for f in json.loads(clean.stdout)["findings"]} == {"GHSA-h75v-3vvj-5mfj"}


def test_changing_the_database_changes_its_digest(tmp_path, osv_db):
    pkgs = [Package("requests", "2.30.0")]
    before = OsvDbBackend(osv_db).audit(pkgs).database["digest"]
    (osv_db / "PyPI" / "GHSA-h75v-3vvj-5mfj.json").unlink()
    assert OsvDbBackend(osv_db).audit(pkgs).database["digest"] != before


class _OsvHandler(BaseHTTPRequestHandler):
    def do_POST(self):  # noqa: N802 - http.server's naming
        query = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        name, version = query["package"]["name"], Version(query["version"])
        vulns = [rec for rec in RECORDS
                 if SERVED[rec["id"]][0] == name and version in SpecifierSet(SERVED[rec["id"]][1])]
        body = json.dumps({"vulns": vulns} if vulns else {}).encode()
        self.send_response(200)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture
def osv_service():
    server = ThreadingHTTPServer(("127.0.0.1", 0), _OsvHandler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/v1/query"
    finally:
        server.shutdown()
        server.server_close()
        thread.join(5)


def test_pip_audit_client_against_loopback_osv_service(tmp_path, osv_service, osv_db):
    mpath = _manifest(tmp_path)
    r = prov("audit", "--manifest", str(mpath), "--osv-url", osv_service, "--json")
    assert r.returncode == 1, r.stderr
    doc = json.loads(r.stdout)
    online = {(f["name"], f["version"], f["id"], tuple(f["fix_versions"]))
              for f in doc["findings"]}
    # pip-audit makes the CVE id primary and keeps the GHSA id as an alias.
    assert online == {("requests", "2.30.0", "CVE-2023-32681", ("2.31.0",)),
                      ("jinja2", "3.1.3", "CVE-2024-34064", ("3.1.4",))}
    assert doc["not_audited"] == 0 and doc["audited"] == 5
    offline = json.loads(prov("audit", "--manifest", str(mpath), "--osv-db", str(osv_db),
                              "--json").stdout)
    # Same advisories found online and offline, comparing id sets with aliases folded in.
    def ids(findings):
        return {(f["name"], frozenset([f["id"], *f["aliases"]])) for f in findings}
    assert ids(doc["findings"]) == ids(offline["findings"])


def test_unreachable_service_is_reported_not_clean(tmp_path):
    with socket.socket() as s:  # a loopback port with nobody listening
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    r = prov("audit", "--manifest", str(_manifest(tmp_path)), "--osv-url",
             f"http://127.0.0.1:{port}/v1/query", "--timeout", "5")
    assert r.returncode == 4  # EXIT_UNAVAILABLE (was 3, the gate's "refused")
    assert "unreachable" in r.stderr and "NOTHING was audited (5 packages not audited)" in r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert "no known vulnerabilities" not in (r.stdout + r.stderr).lower()
    j = prov("audit", "--manifest", str(_manifest(tmp_path)), "--osv-url",
             f"http://127.0.0.1:{port}/v1/query", "--timeout", "5", "--json")
    assert j.returncode == 4
    doc = json.loads(j.stdout)
    assert doc["audited"] == 0 and doc["not_audited"] == 5 and doc["findings"] == []
    assert all("unreachable" in s["reason"] for s in doc["skipped"])


def test_pip_audits_private_service_api_is_used_only_where_tested():
    """pip-audit's service layer is private: the adapter runs only under the versions it was
    tested with, the installed (locked) one among them, and pyproject pins the same range."""
    import tomllib
    from importlib.metadata import version
    from pathlib import Path

    from packaging.requirements import Requirement

    from provenance.audit.pip_audit_backend import PIP_AUDIT_VERSIONS, supported

    assert supported(version("pip-audit"))
    assert not any(supported(v) for v in ("2.6.3", "2.11.0", "3.0.0"))
    root = Path(__file__).resolve().parents[3]
    deps = tomllib.loads((root / "pyproject.toml").read_text())["project"]["dependencies"]
    [pin] = [Requirement(d) for d in deps if Requirement(d).name == "pip-audit"]
    assert pin.specifier == Requirement(f"pip-audit{PIP_AUDIT_VERSIONS}").specifier
