"""File verification of an image's final view: every file a package claims, re-hashed.

The digests were taken while the layers streamed (`FileView.digests`, see filehash.py);
here they meet the claims, all read from the same final view:

- Python: each `*.dist-info/RECORD` row with a hash (`sha256=`, urlsafe base64 without
  padding, or hex where a distribution writes hex: see `python_dist.record_digest`),
  the path relative to the site-packages directory; rows without a hash (RECORD itself,
  often .pyc) are not checked; when a path appears twice the last row wins, as pip's
  uninstaller reads it.
- dpkg: `var/lib/dpkg/info/<package>.md5sums` of every installed package (md5, paths
  relative to the root), and the conffiles with their md5 from the package's status stanza
  (md5sums leaves them out; `dpkg --verify` checks both).
- conda: `<prefix>/conda-meta/*.json` `paths_data.paths[]` (`sha256_in_prefix` when the
  installer rewrote the prefix, else `sha256`), paths relative to the prefix.
- apk: every `R:` file of `lib/apk/db/installed` with its `Z:` checksum (SHA-1, base64 after
  `Q1`); a claimed symlink's checksum is of its target, compared as such.

Claimed paths are resolved through the image's symlinks (a usr-merged `bin/bash` is
`usr/bin/bash`). A claimed file that is not a regular file of the final view is missing;
the layer whose whiteout removed it is named when known.

Unclaimed files (Python only; see `unclaimed`): a site-packages directory's *package roots*
are the top-level entries (`vllm/`, `six.py`, `idna-3.10.dist-info/`) that some RECORD of
that directory lists a file under. A regular file under a package root that no RECORD and
no dpkg md5sums lists is unclaimed, charged to the distribution owning its nearest
directory (a root shared by several, like `nvidia/`, is charged to none: the file goes to
`unowned:<site-packages>`). Top-level files and directories that nothing lists at all (a
stray `sitecustomize.py`, a `.pth` no installer wrote) are unowned too. `__pycache__`
byte-code is skipped: the interpreter writes it at import time, unlisted.
"""

from __future__ import annotations

import hashlib
import posixpath
from dataclasses import dataclass, field
from typing import Any

from containers.catalogers import apk, python_dist
from containers.catalogers.dpkg import INFO, STATUS_D
from containers.dists import PythonDist, dist_keys
from containers.filehash import FileDigest
from containers.jsondoc import load_content
from containers.walk import FileView

UNOWNED = "unowned:"


# Each finding's kind, the reason it names: the ONE table (the lock, `prov pin` and
# `prov verify --lock` print these names).
KINDS: dict[str, str] = {
    "modified": "differs from its package's claim; `layer` wrote it (after the install when "
    "later than `installed`, the package's layer)",
    "shared": "claimed by two packages: the file is the copy of `other`, installed later",
    "dpkg_intact": "differs from RECORD but matches dpkg's md5sums of `other` (Debian "
    "rewrites some files after the wheel was built, e.g. strips extension modules)",
    "missing": "listed, then deleted (whiteout or replaced) in `layer`",
    "never_installed": "listed, never written by any layer",
    "unclaimed": "a file under a package's directory that no package lists",
    "unlisted": "a file no package lists, anywhere (recorded with --all-files)",
}
PROBLEMS = ("modified", "missing", "never_installed", "unclaimed")  # unlisted: an inventory


@dataclass(frozen=True)
class FileIssue:
    path: str  # "/opt/venv/lib/python3.11/site-packages/vllm/envs.py"
    layer: int | None  # the layer that last wrote (or deleted) it; None when unknown
    expected: str  # "sha256:<hex>" / "md5:<hex>" as the package claims ("" if unclaimed)
    actual: str  # the final view's digest ("" if missing)
    installed: int | None = None  # modified: the layer that installed the package
    other: str = ""  # shared, dpkg_intact: the package whose claim the file matches


@dataclass
class PackageCheck:
    checked: int = 0
    skipped: int = 0  # claims in an algorithm the walk does not take (sha384, sha512, ...)
    modified: list[FileIssue] = field(default_factory=list)
    shared: list[FileIssue] = field(default_factory=list)
    dpkg_intact: list[FileIssue] = field(default_factory=list)
    missing: list[FileIssue] = field(default_factory=list)
    never_installed: list[FileIssue] = field(default_factory=list)
    unclaimed: list[FileIssue] = field(default_factory=list)
    unlisted: list[FileIssue] = field(default_factory=list)

    @property
    def clean(self) -> bool:
        """No finding that says the file is not what its packages installed."""
        return not any(getattr(self, kind) for kind in PROBLEMS)


# a claim: final-view path -> (algorithm, expected digest bytes)
Claims = dict[str, tuple[str, bytes]]
# final-view path -> every (package key, algorithm, digest) that claims it
Claimants = dict[str, list[tuple[str, str, bytes]]]


def _actual(d: FileDigest, algo: str) -> bytes | None:
    """The view's digest in `algo` (None: not taken; a RECORD may name sha384/sha512)."""
    if algo == "sha256":
        return d.sha256
    return d.md5 if algo == "md5" else d.sha1 if algo == "sha1" else None


def _link(view: FileView, path: str) -> tuple[str, tuple[int, str]] | None:
    """(its path in the view, (layer, target)) when `path` itself is a symlink (its
    directories resolved): apk claims a symlink by the checksum of its target."""
    parent, _, name = path.rpartition("/")
    real = view.resolve(parent) if parent else ""
    if real is None:
        return None
    here = f"{real}/{name}" if real else name
    link = view.links.get(here)
    return (here, link) if link is not None else None


def _check_link(out: PackageCheck, path: str, link: tuple, claim: tuple, installed) -> None:
    """One claimed symlink: the digest of its target text against the claim."""
    (layer, target), (algo, want) = link, claim
    got = hashlib.new(algo, target.encode("utf-8", "surrogateescape")).digest()
    out.checked += 1
    if got != want:
        out.modified.append(FileIssue("/" + path, layer, f"{algo}:{want.hex()}",
                                      f"{algo}:{got.hex()}", installed))


def _matching_other(key: str, found: FileDigest, others: list) -> str:
    """Another package whose claim the file matches ("" if none): who really wrote it."""
    for other, algo, want in others:
        if other != key and _actual(found, algo) == want:
            return other
    return ""


def check_claims(
    view: FileView,
    claims: Claims,
    key: str = "",
    installed: int | None = None,
    claimants: Claimants | None = None,
) -> PackageCheck:
    """Compare one package's claims with the final view's digests, each finding with its
    kind (KINDS); `claimants` (every package's claims by path) tells a file another package
    installed over this one's, or one dpkg vouches for, from a modified one."""
    out = PackageCheck()
    links = key.startswith("apk:")  # apk's checksum of a symlink is of its target
    for path in sorted(claims):
        algo, want = claims[path]
        link = _link(view, path) if links else None
        if link is not None:
            _check_link(out, path, link[1], claims[path], installed)
            continue
        real = view.resolve(path)
        found = view.digests.get(real) if real is not None else None
        expected = f"{algo}:{want.hex()}"
        if found is None:
            gone = view.deleted.get(real or path)
            kind = out.missing if gone is not None else out.never_installed
            kind.append(FileIssue("/" + path, gone, expected, ""))
            continue
        got = _actual(found, algo)
        if got is None:  # not hashed with this algorithm (see filehash.py): not checkable
            out.skipped += 1
            continue
        out.checked += 1
        if got == want:
            continue
        actual = f"{algo}:{got.hex()}"
        other = _matching_other(key, found, (claimants or {}).get(real or path, []))
        if other:
            vouched = other.startswith("dpkg:") and not key.startswith("dpkg:")
            kind = out.dpkg_intact if vouched else out.shared
            kind.append(FileIssue("/" + path, found.layer, expected, actual, None, other))
        else:
            out.modified.append(FileIssue("/" + path, found.layer, expected, actual, installed))
    return out


def _record_path(location: str, row_path: str) -> str:
    return posixpath.normpath(posixpath.join("/" + location, row_path)).lstrip("/")


def record_listed(location: str, record: bytes) -> set[str]:
    """Every path a RECORD lists, hashed or not (RECORD itself, unhashed .pyc rows)."""
    rows = python_dist.record_rows(record.decode("utf-8", "replace"))
    return {_record_path(location, row[0]) for row in rows if row and row[0]}


def record_claims(location: str, record: bytes) -> Claims:
    """A RECORD's hashed rows as final-view paths (`location` without the leading /): the
    digest read as installers read it (`python_dist.record_digest`: base64 or hex); a row
    whose hash is not a readable digest claims nothing (never a garbled expectation)."""
    claims: Claims = {}
    for row in python_dist.record_rows(record.decode("utf-8", "replace")):
        if len(row) < 2 or not row[1]:
            continue
        found = python_dist.record_digest(row[1])
        if found is None:
            continue
        path = _record_path(location, row[0])
        claims.pop(path, None)  # the last row wins, in row order
        claims[path] = found
    return claims


def md5sums_claims(data: bytes) -> Claims:
    """`<md5>  <path>` lines of a dpkg md5sums file."""
    claims: Claims = {}
    for line in data.decode("utf-8", "surrogateescape").splitlines():
        digest, _, path = line.partition(" ")
        path = path.lstrip(" *").lstrip("/")
        if len(digest) != 32 or not path:
            continue
        try:
            claims[path] = ("md5", bytes.fromhex(digest))
        except ValueError:
            continue
    return claims


def conda_claims(prefix: str, data: bytes) -> Claims:
    """`paths_data.paths` of one conda-meta record (prefix without the leading /)."""
    doc = load_content(data)
    paths = (doc.get("paths_data") or {}).get("paths") if isinstance(doc, dict) else None
    claims: Claims = {}
    for item in paths if isinstance(paths, list) else []:
        if not isinstance(item, dict) or not isinstance(item.get("_path"), str):
            continue
        digest = item.get("sha256_in_prefix") or item.get("sha256")
        if item.get("path_type") == "softlink" or not isinstance(digest, str):
            continue
        try:
            want = bytes.fromhex(digest)
        except ValueError:
            continue
        claims[posixpath.normpath(f"{prefix}/{item['_path']}").lstrip("/")] = ("sha256", want)
    return claims


def conda_listed(prefix: str, data: bytes) -> set[str]:
    """Every path one conda-meta record lists (`files`, and `paths_data` hashed or not)."""
    doc = load_content(data)
    if not isinstance(doc, dict):
        return set()
    data_ = doc.get("paths_data")
    paths = data_.get("paths") if isinstance(data_, dict) else None
    files = doc.get("files")
    names = [f for f in files if isinstance(f, str)] if isinstance(files, list) else []
    for item in paths if isinstance(paths, list) else []:
        if isinstance(item, dict) and isinstance(item.get("_path"), str):
            names.append(item["_path"])
    return {posixpath.normpath(f"{prefix}/{n}").lstrip("/") for n in names}


def dpkg_claims(view: FileView, packages: list[tuple[Any, int]]) -> dict[str, Claims]:
    """`dpkg:<key>` -> claims, for every installed package with an md5sums file or
    conffiles (their md5 in the status stanza, which `dpkg --verify` checks too)."""
    out: dict[str, Claims] = {}
    for pkg, _ in packages:
        key = pkg.key
        for name in (key, key.split(":")[0]) if ":" in key else (key,):
            found = view.files.get(f"{INFO}{name}.md5sums")
            found = found or view.files.get(f"{STATUS_D}{name}.md5sums")  # distroless
            if found is not None:
                out[f"dpkg:{key}"] = md5sums_claims(found[1])
                break
    for pkg, _ in packages:
        if not pkg.conffiles:
            continue
        claims = out.setdefault(f"dpkg:{pkg.key}", {})
        for path, digest in pkg.conffiles:
            try:
                claims.setdefault(path.lstrip("/"), ("md5", bytes.fromhex(digest)))
            except ValueError:
                continue
    return out


def apk_claims(packages: list[tuple[Any, int]]) -> tuple[dict[str, Claims], set[str]]:
    """`apk:<name>` -> claims (every file with a `Z:` checksum apk writes), and every path
    the database lists (with a checksum or not)."""
    out: dict[str, Claims] = {}
    listed: set[str] = set()
    for pkg, _ in packages:
        claims: Claims = {}
        for path, checksum in pkg.files:
            listed.add(path)
            found = apk.checksum_digest(checksum) if checksum else None
            if found is not None:
                claims[path] = found
        if claims:
            out[f"apk:{pkg.key}"] = claims
    return out, listed


def python_claims(view: FileView, dists: list[tuple[str, PythonDist]]) -> dict[str, Claims]:
    """Package key -> claims, for every distribution with a RECORD or a conda record."""
    out: dict[str, Claims] = {}
    for key, dist in dists:
        if dist.meta.endswith(".dist-info"):
            record = view.files.get(f"{dist.meta}/RECORD")
            if record is not None:
                out[key] = record_claims(dist.location.lstrip("/"), record[1])
        elif dist.meta.endswith(".json") and dist.facts.get("installer") == "conda":
            found = view.files.get(dist.meta)
            prefix = dist.meta.rsplit("/", 2)[0]
            if found is not None:
                out[key] = conda_claims(prefix, found[1])
    return out


def _top(path: str, site: str) -> str | None:
    """The top-level entry of `site` that `path` lies under (None: not under it)."""
    if not path.startswith(site + "/"):
        return None
    return path[len(site) + 1 :].split("/", 1)[0]


def _owners_by_dir(site: str, listed: dict[str, set[str]], keys: list[str]) -> dict[str, str]:
    """Directory under `site` -> the one package listing files in it ("" if several)."""
    owner: dict[str, str] = {}
    for key in keys:
        for path in listed[key]:
            d = path.rpartition("/")[0]
            while len(d) > len(site) and d.startswith(site + "/"):
                if owner.setdefault(d, key) != key:
                    owner[d] = ""
                d = d.rpartition("/")[0]
    return owner


def unclaimed(
    view: FileView, site: str, listed: dict[str, set[str]], keys: list[str], claimed: set[str]
) -> dict[str, list[FileIssue]]:
    """Unclaimed regular files under one site-packages directory, by the package charged
    (`unowned:/<site>` when no single package owns the place); see the module docstring."""
    roots = {_top(p, site) for key in keys for p in listed[key]} - {None}
    owner = _owners_by_dir(site, listed, keys)
    out: dict[str, list[FileIssue]] = {}
    for path, d in view.digests.items():
        top = _top(path, site)
        if top is None or path in claimed or "/__pycache__/" in path or top == "__pycache__":
            continue
        charged = f"{UNOWNED}/{site}"
        if top in roots:
            parent = path.rpartition("/")[0]
            while parent.startswith(site + "/") and parent not in owner:
                parent = parent.rpartition("/")[0]
            charged = owner.get(parent) or charged
        issue = FileIssue("/" + path, d.layer, "", "sha256:" + d.sha256.hex())
        out.setdefault(charged, []).append(issue)
    return out


def _claimants(view: FileView, claims: dict[str, Claims]) -> Claimants:
    out: Claimants = {}
    for key, c in claims.items():
        links = key.startswith("apk:")
        for path, (algo, want) in c.items():
            link = _link(view, path) if links else None
            where = link[0] if link is not None else view.resolve(path) or path
            out.setdefault(where, []).append((key, algo, want))
    return out


@dataclass
class Coverage:
    """What file verification covered: every regular file of the final view in one bucket.

    checked: a package claims it with a digest that was compared; skipped, by rule (`rules`):
    `unhashed` (listed without a hash: RECORD itself, pip's .pyc), `algorithm` (a hash the
    walk does not take: sha384, sha512), `pycache` (byte-code the interpreter writes at
    import, unlisted); unlisted: no package lists it (/etc/passwd, /var, a stray file).
    With `all_files`, every unlisted file is a finding too (key UNLISTED), with its layer.
    """

    files: int = 0
    checked: int = 0
    skipped: int = 0
    unlisted: int = 0
    rules: dict[str, int] = field(default_factory=dict)
    all_files: bool = False

    def as_dict(self) -> dict:
        out = {k: getattr(self, k) for k in ("files", "checked", "skipped", "unlisted")}
        out["skipped_by_rule"] = dict(sorted(self.rules.items()))
        out["all_files"] = self.all_files
        return out


UNLISTED = "unlisted:/"  # the findings key of files no package lists (with all_files)


def file_coverage(
    view: FileView, everyone: Claimants, listed: set[str], all_files: bool
) -> tuple[Coverage, list[FileIssue]]:
    """Each regular file's bucket (see Coverage); with `all_files`, the unlisted ones."""
    cov = Coverage(files=len(view.digests), all_files=all_files)
    rules = {"unhashed": 0, "algorithm": 0, "pycache": 0}
    found: list[FileIssue] = []
    for path, d in view.digests.items():
        claims = everyone.get(path)
        if claims and any(_actual(d, algo) is not None for _, algo, _ in claims):
            cov.checked += 1
            continue
        rule = (
            "algorithm" if claims else "unhashed" if path in listed
            else "pycache" if "__pycache__/" in path else ""
        )
        if rule:
            rules[rule] += 1
            continue
        cov.unlisted += 1
        if all_files:
            found.append(FileIssue("/" + path, d.layer, "", "sha256:" + d.sha256.hex()))
    cov.skipped = sum(rules.values())
    cov.rules = {k: n for k, n in rules.items() if n}
    return cov, sorted(found, key=_by_path)


def verify_files(
    view: FileView, dists: list[PythonDist], databases: dict[str, list],
    all_files: bool = False,
) -> tuple[dict[str, PackageCheck], Coverage]:
    """Every package's file check, keyed as the lock keys packages (plus `unowned:` keys,
    and with `all_files` the UNLISTED key), and what the check covered; `databases`: the
    OS databases' (package, layer that installed it) lists (`catalog.os_section`)."""
    keyed = dist_keys(dists)
    os_packages = [(kind, pkg, layer) for kind, found in databases.items()
                   for pkg, layer in found]
    claims = dpkg_claims(view, databases.get("dpkg", []))
    apk_found, apk_listed = apk_claims(databases.get("apk", []))
    claims.update(apk_found)
    claims.update(python_claims(view, keyed))
    layers = {f"{kind}:{pkg.key}": layer for kind, pkg, layer in os_packages}
    layers.update((key, dist.facts.get("layer")) for key, dist in keyed)
    everyone = _claimants(view, claims)
    checks = {
        key: check_claims(view, c, key, layers.get(key), everyone) for key, c in claims.items()
    }
    listed: dict[str, set[str]] = {}
    sites: dict[str, list[str]] = {}
    for key, dist in keyed:
        record = view.files.get(f"{dist.meta}/RECORD")
        if dist.meta.endswith(".dist-info") and record is not None:
            site = dist.location.lstrip("/")
            listed[key] = record_listed(site, record[1])
            sites.setdefault(site, []).append(key)
    claimed = set(everyone)
    claimed.update(view.resolve(p) or p for paths in listed.values() for p in paths)
    claimed.update(view.resolve(p) or p for p in apk_listed)
    for site, keys in sorted(sites.items()):
        for key, issues in unclaimed(view, site, listed, keys, claimed).items():
            checks.setdefault(key, PackageCheck()).unclaimed.extend(sorted(issues, key=_by_path))
    cov, unlisted = file_coverage(view, everyone, claimed, all_files)
    if all_files:
        charged = {i.path for c in checks.values() for i in c.unclaimed}
        rest = [i for i in unlisted if i.path not in charged]  # not reported twice
        checks[UNLISTED] = PackageCheck(unlisted=rest)
    return dict(sorted(checks.items())), cov


def _by_path(issue: FileIssue) -> str:
    return issue.path
