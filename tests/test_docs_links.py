"""The README and docs/ stay short, self-contained and linked: every relative link resolves.

Checked for README.md, docs/**/*.md and bench/results/**/*.md: a relative link must name a
file or folder inside the repository (an anchor must name a heading of the target page);
nothing may point outside the repository (absolute paths, `..` past the root, file: URLs);
the README stays at most 200 lines and names every top-level command.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

import pytest

ROOT = Path(__file__).resolve().parent.parent
README_MAX_LINES = 200

FENCE = re.compile(r"^(```|~~~).*?^\1", re.S | re.M)
INLINE_CODE = re.compile(r"`[^`\n]*`")
LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")
HEADING = re.compile(r"^#{1,6}\s+(.+?)\s*#*\s*$", re.M)
EXTERNAL = ("http://", "https://", "mailto:")


def _pages() -> list[Path]:
    pages = [ROOT / "README.md"]
    for folder in ("docs", "bench/results"):
        pages += sorted((ROOT / folder).rglob("*.md"))
    return pages


def _prose(text: str) -> str:
    """The text without fenced code blocks and inline code, where links are not links."""
    return INLINE_CODE.sub("", FENCE.sub("", text))


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    text = re.sub(r"[`*]|\[([^\]]*)\]\([^)]*\)", lambda m: m.group(1) or "", heading)
    text = re.sub(r"[^\w\- ]", "", text.strip().lower())
    return text.replace(" ", "-")


def _anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    anchors = set()
    for heading in HEADING.findall(FENCE.sub("", page.read_text(encoding="utf-8"))):
        slug = _slug(heading)
        n = seen.get(slug, 0)
        seen[slug] = n + 1
        anchors.add(slug if n == 0 else f"{slug}-{n}")
    return anchors


def link_problems(page: Path, root: Path = ROOT) -> list[str]:
    problems = []
    for target in LINK.findall(_prose(page.read_text(encoding="utf-8"))):
        if target.startswith(EXTERNAL):
            continue
        where = f"{page.relative_to(root)}: ({target})"
        path_part, _, anchor = target.partition("#")
        if path_part.startswith(("/", "file:")) or re.match(r"^[a-z][a-z0-9+.-]*:", path_part):
            problems.append(f"{where} points outside the repository")
            continue
        dest = (page.parent / unquote(path_part)).resolve() if path_part else page
        if not dest.is_relative_to(root):
            problems.append(f"{where} points outside the repository")
        elif not dest.exists():
            problems.append(f"{where} does not exist")
        elif anchor and dest.suffix == ".md" and anchor not in _anchors(dest):
            problems.append(f"{where}: no heading '{anchor}' in {dest.relative_to(root)}")
    return problems


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_inside_the_repository(page: Path) -> None:
    assert link_problems(page) == []


@pytest.mark.parametrize("page", _pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_no_page_names_a_path_outside_the_repository(page: Path) -> None:
    text = page.read_text(encoding="utf-8")
    assert "../shared" not in text and "/work/" not in text


def test_readme_is_short() -> None:
    lines = (ROOT / "README.md").read_text(encoding="utf-8").count("\n")
    assert lines <= README_MAX_LINES, f"README.md has {lines} lines (at most {README_MAX_LINES})"


def test_readme_and_cli_reference_name_every_command() -> None:
    from provenance.cli import COMMAND_MODULES

    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    reference = (ROOT / "docs/reference/cli.md").read_text(encoding="utf-8")
    for name in COMMAND_MODULES:
        assert f"`prov {name}" in readme, f"README.md has no line for prov {name}"
        assert f"### `prov {name}" in reference, f"docs/reference/cli.md lacks prov {name}"


def test_the_checker_catches_broken_and_outside_links(tmp_path: Path) -> None:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "index.md").write_text("# Map\n\n## Concepts\n", encoding="utf-8")
    page = root / "docs" / "probe.md"
    page.write_text(
        "[ok](index.md) [gone](no-such-page.md) [up](../../etc/passwd) [abs](/etc/passwd)\n"
        "[bad anchor](index.md#no-such-heading) [good anchor](index.md#concepts)\n"
        "`[in code](ignored.md)` [web](https://example.org/x)\n",
        encoding="utf-8",
    )
    problems = link_problems(page, root)
    assert len(problems) == 4, problems
    assert any("no-such-page.md) does not exist" in p for p in problems)
    assert sum("outside the repository" in p for p in problems) == 2
    assert any("no heading 'no-such-heading'" in p for p in problems)
