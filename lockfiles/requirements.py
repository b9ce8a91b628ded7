"""`requirements.txt` as pip reads it (pip's `req_file.py`), for `prov verify --lock`.

- physical lines ending in `\\` join the next; messages cite the ORIGINAL first line;
- `#` starts a comment at the line start or after whitespace;
- a requirement is parsed by `packaging.requirements` (PEP 508: extras, markers, `name @ url`)
  and must pin one version (`==` without a wildcard, or `===`, arbitrary equality);
- its per-requirement options (`--hash=...`, `--config-settings`) are accepted and ignored;
- `-r`/`--requirement` and `-c`/`--constraint` include other files, relative to the including
  file; constraints only narrow what is installed, so their packages are not required;
- index and install options (`-i`, `--extra-index-url`, `-f`, `--no-index`, `--pre`, ...)
  are accepted: they change where pip looks, not what the environment must hold;
- `-e PATH` names a source tree; its name comes from `#egg=` or the tree's pyproject.toml.

A requirements file constrains the packages it names; it names the whole environment (the
lock is exact: an installed package it does not name is a mismatch) only when it is a full
pin set, which this reader recognises as pip does: every version requirement an exact pin
carrying `--hash`. pip's hash-checking mode then installs nothing the file does not pin with
a hash, dependencies included, so such a file (`pip-compile --generate-hashes`,
`uv pip compile --generate-hashes`, `uv export`) lists a complete environment. `-e` and
`name @ URL` lines neither make nor break it (uv export writes `-e .` beside hashed pins).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from packaging.utils import canonicalize_name

from lockfiles.errors import LockError
from lockfiles.kind import LockKind
from lockfiles.read import Lock, LockedPackage

_COMMENT = re.compile(r"(^|\s+)#.*$")
# pip's global options that take a value, and those that do not (pip 26, req_file.py).
_WITH_VALUE = {
    "-i": "index", "--index-url": "index", "--extra-index-url": "index",
    "-f": "index", "--find-links": "index", "--trusted-host": "index",
    "--no-binary": "index", "--only-binary": "index", "--use-feature": "index",
    "-r": "requirement", "--requirement": "requirement",
    "-c": "constraint", "--constraint": "constraint",
    "-e": "editable", "--editable": "editable",
}
_FLAGS = {"--no-index", "--pre", "--prefer-binary", "--require-hashes"}
_PER_REQUIREMENT = ("--hash", "--config-settings", "--global-option")


@dataclass(frozen=True)
class Line:
    path: Path
    number: int  # the first physical line of this logical line
    text: str

    def where(self) -> str:
        return f"{self.path}:{self.number}"


def logical_lines(path: Path) -> list[Line]:
    """Joined continuation lines with comments removed, each with its first line number."""
    from provenance.model.inputs import InputError, read_text

    try:  # regular files only (a FIFO never hangs), bounded, strict UTF-8
        text = read_text(path, "lock")
    except InputError as exc:
        raise LockError(str(exc)) from None
    out: list[Line] = []
    parts: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        if not parts:
            start = number
        if raw.endswith("\\") and not _COMMENT.search(raw):
            parts.append(raw[:-1])
            continue
        parts.append(raw)
        joined = _COMMENT.sub("", "".join(parts)).strip()
        parts = []
        if joined:
            out.append(Line(path, start, joined))
    if parts:
        joined = _COMMENT.sub("", "".join(parts)).strip()
        if joined:
            out.append(Line(path, start, joined))
    return out


def _split_option(line: Line) -> tuple[str, str]:
    """(`--option`, value) of a global option line; value '' for a flag."""
    head, sep, rest = line.text.partition("=")
    token = line.text.split(None, 1)
    if sep and head.strip().startswith("--") and " " not in head.strip():
        token = [head.strip(), rest.strip()]
    if token[0] in _FLAGS:
        return token[0], ""
    if token[0] in _WITH_VALUE:
        if len(token) < 2:
            raise LockError(f"{line.where()}: {token[0]} needs a value")
        return token[0], token[1].strip()
    for short in ("-i", "-f", "-r", "-c", "-e"):  # pip also takes `-rfile` and `-ifile`
        if token[0].startswith(short) and len(token[0]) > 2:
            return short, line.text[2:].strip()
    raise LockError(f"{line.where()}: option {token[0]!r} is not one pip accepts here")


def _strip_per_requirement_options(line: Line) -> tuple[str, bool]:
    """The requirement text without its `--hash=...` style options, and whether it has a
    `--hash`."""
    tokens = line.text.split()
    for i, token in enumerate(tokens):
        if token.startswith("--"):
            for option in tokens[i:]:
                if option.startswith("--") and not option.startswith(_PER_REQUIREMENT):
                    raise LockError(f"{line.where()}: option {option!r} is not one pip "
                                    "accepts on a requirement line")
            return " ".join(tokens[:i]), any(t.startswith("--hash") for t in tokens[i:])
    return line.text, False


def _requirement(line: Line, text: str) -> LockedPackage:
    from packaging.requirements import InvalidRequirement, Requirement

    try:
        req = Requirement(text)
    except InvalidRequirement as exc:
        first = str(exc).splitlines()[0]  # packaging adds the text and a caret below
        message = f"{line.where()}: not a valid requirement ({first}): {text[:60]!r}"
        raise LockError(message) from None
    name = canonicalize_name(req.name)
    marker = str(req.marker) if req.marker is not None else None
    if req.url:
        return LockedPackage(name, None, source="url", marker=marker)
    specs = list(req.specifier)
    exact = len(specs) == 1 and (
        specs[0].operator == "===" or (specs[0].operator == "==" and "*" not in specs[0].version)
    )
    if not exact:
        return LockedPackage(name, None, source="requirements", marker=marker,
                             specifier=str(req.specifier))
    arbitrary = specs[0].operator == "==="
    return LockedPackage(name, specs[0].version, source="requirements", marker=marker,
                         arbitrary=arbitrary)


def _editable(line: Line, target: str) -> LockedPackage:
    egg = re.search(r"#egg=([A-Za-z0-9][A-Za-z0-9._-]*)", target)
    if egg:
        return LockedPackage(canonicalize_name(egg.group(1)), None, source="editable")
    local = re.sub(r"\[[^\]]*\]$", "", target.removeprefix("file://"))  # `-e .[dev]`
    tree = (line.path.parent / local).resolve()
    try:
        import tomllib

        name = tomllib.loads((tree / "pyproject.toml").read_text())["project"]["name"]
    except (OSError, ValueError, KeyError, TypeError):
        raise LockError(f"{line.where()}: editable {target!r}: no #egg= name and no "
                        "[project] name in its pyproject.toml") from None
    return LockedPackage(canonicalize_name(str(name)), None, source="editable")


@dataclass
class _Read:
    packages: list[LockedPackage]
    hashed_pins: int = 0  # exact pins with --hash
    others: int = 0  # version requirements that are not (a range, or a pin without --hash)


def _read(path: Path, seen: tuple[Path, ...], constraint: bool, out: _Read) -> None:
    resolved = path.resolve()
    if resolved in seen:
        raise LockError(f"{path}: included from itself ({' -> '.join(map(str, seen))})")
    for line in logical_lines(path):
        if not line.text.startswith("-"):
            text, hashed = _strip_per_requirement_options(line)
            pkg = _requirement(line, text)
            if not constraint:
                out.packages.append(pkg)
                if pkg.source != "url":
                    if pkg.version is not None and hashed:
                        out.hashed_pins += 1
                    else:
                        out.others += 1
            continue
        option, value = _split_option(line)
        kind = _WITH_VALUE.get(option)
        if kind in ("requirement", "constraint"):
            child = path.parent / value
            if not child.is_file():
                raise LockError(f"{line.where()}: {option} {value}: no such file")
            _read(child, (*seen, resolved), constraint or kind == "constraint", out)
        elif kind == "editable" and not constraint:
            out.packages.append(_editable(line, value))


def read_requirements(path: Path) -> Lock:
    """Every package a requirements file (and the files it includes) requires; exact only
    for a full pin set (every version requirement `==`-pinned with `--hash`)."""
    read = _Read([])
    _read(Path(path), (), constraint=False, out=read)
    return Lock(kind=LockKind.REQUIREMENTS, created_by="requirements.txt", packages=read.packages,
                exact=read.hashed_pins > 0 and read.others == 0)
