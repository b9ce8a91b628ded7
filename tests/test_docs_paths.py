"""Every repository path the docs name in backticks exists.

A backticked word is taken for a path when it starts with one of the repository's top-level
folders (`provenance/`, `tests/`, ...) or is one of its top-level files; `{a,b}` alternatives
and `*` globs are expanded (a glob must match something). Words holding a placeholder
(`<date>`, `...`, `NAME.py`) name no one file and are skipped, as are fenced blocks (commands
and output, checked by tests/test_docs_examples.py where marked).
"""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
TOP = ("provenance", "runners", "containers", "lockfiles", "tests", "bench", "docs", ".ci")
FILES = ("Makefile", "pyproject.toml", "README.md")
PLACEHOLDER = re.compile(r"<|\.\.\.|…|\$|(^|/)[A-Z][A-Z_]*[A-Z](/|$|\.(?!md))")

# Paths the docs name ahead of a move in flight; the entry fails once the path exists, so
# the list cannot go stale (the lead deletes it at merge).
PENDING: dict[str, str] = {}


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def named_paths(text: str) -> list[tuple[int, str]]:
    """(line, word) of each backticked word outside fenced blocks that looks like a path."""
    text = re.sub(r"^```.*?^```", lambda m: "\n" * m.group(0).count("\n"), text,
                  flags=re.S | re.M)
    found = []
    for m in re.finditer(r"`([^`\n]+)`", text):
        word = m.group(1).strip().split(":")[0]  # `file.py:function` names the file
        top = word.split("/")[0]
        if " " in word or not ((top in TOP and "/" in word) or word in FILES):
            continue
        if not PLACEHOLDER.search(word):
            found.append((text.count("\n", 0, m.start()) + 1, word))
    return found


def expand(word: str) -> list[str]:
    m = re.search(r"\{([^{}]*)\}", word)
    if not m:
        return [word]
    return [w for alt in m.group(1).split(",")
            for w in expand(word[:m.start()] + alt + word[m.end():])]


def missing(word: str) -> list[str]:
    gone = []
    for path in expand(word):
        hits = list(ROOT.glob(path)) if "*" in path else [ROOT / path]
        if not any(p.exists() for p in hits):
            gone.append(path)
    return gone


def test_every_path_the_docs_name_exists():
    bad = [f"{page.relative_to(ROOT)}:{line}: `{word}` ({', '.join(gone)})"
           for page in pages() for line, word in named_paths(page.read_text())
           if word not in PENDING and (gone := missing(word))]
    assert not bad, "paths the docs name that do not exist:\n" + "\n".join(bad)


def test_pending_paths_are_still_pending():
    for word, why in PENDING.items():
        assert missing(word), f"`{word}` exists now ({why}): delete its PENDING entry"
