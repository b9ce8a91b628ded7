"""The docs' console examples are what prov prints: each marked block is run and compared.

A block is checked when the line before its ```` ```console ```` fence is
`<!-- checked example -->`; README.md and docs/getting-started.md must have some, any page
under docs/ may. Each block runs in a scratch directory of its own (its store is `.prov/`
there), one `$ ` command after another through bash, on a 100-column pseudo-terminal (what
a user at a terminal sees: stdout and stderr as one stream), with a fixed environment
(`example_env`). The lines after a command are its expected output. What must vary is
written with placeholders, by one rule (docs/development.md, "Checked examples"):

- `…` stands for any text within one line (a timing, a digest, a path); hex digits right
  before it belong to it (`sha256:8e55cef8…` is any digest).
- Two or more spaces stand for one or more (a table's columns move with what `…` hides).
- A line that is only `…` stands for any number of lines.
- A word of 12 to 16 hex digits is a run id: the id printed at that place, whatever it is;
  the same word later in the block (or a prefix of it, four digits or more, as a command's
  argument) means the same run.
- `$ cat FILE` of a file the block has not made yet first writes FILE with the lines shown.

`PROV_UPDATE_GOLDEN=1` rewrites each block's output with what prov printed (lines that
still match keep their placeholders; ids keep the names the page gave them; digests and
timings are written with `…`): review the diff.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.terminal import on_terminal

ROOT = Path(__file__).resolve().parent.parent
MARKER = "<!-- checked example -->"
MUST_HAVE = ("README.md", "docs/getting-started.md")
COLUMNS = 100
HEX_ID = re.compile(r"\b(?=[0-9]*[a-f])[0-9a-f]{12,16}\b")  # a run id, full or as tables cut it


@dataclass
class Step:
    command: str
    expected: list[str]


@dataclass
class Block:
    page: Path
    line: int  # of the fence, 1-based
    text: str  # the block's lines between the fences, as written
    steps: list[Step] = field(default_factory=list)


def blocks(page: Path) -> list[Block]:
    lines = page.read_text().splitlines()
    found = []
    for i, line in enumerate(lines[:-1]):
        if line.strip() != MARKER or lines[i + 1].strip() != "```console":
            continue
        end = next(j for j in range(i + 2, len(lines)) if lines[j].strip() == "```")
        body = lines[i + 2:end]
        block = Block(page, i + 2, "\n".join(body))
        for text in body:
            if text.startswith("$ "):
                block.steps.append(Step(text[2:], []))
            else:
                assert block.steps, f"{page}:{i + 3}: output before the first `$ ` command"
                block.steps[-1].expected.append(text)
        found.append(block)
    return found


def pages() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]


def all_blocks() -> list[Block]:
    return [b for p in pages() for b in blocks(p)]


def example_env(home: Path, cache: Path) -> dict[str, str]:
    """Only what an example needs, the same on every machine: this venv's `prov` and
    `python` first on PATH, a private HOME, a shared snapshot cache, UTC, no colour."""
    bin_dir = str(Path(sys.executable).parent)
    return {"PATH": f"{bin_dir}:/usr/local/bin:/usr/bin:/bin", "HOME": str(home),
            "LANG": "C.UTF-8", "TZ": "UTC", "NO_COLOR": "1", "TERM": "xterm",
            "PROV_CACHE_DIR": str(cache)}


# -- the placeholder rule ---------------------------------------------------------------------

class Ids:
    """Run ids named in the page -> the ids this run of the block printed there."""

    def __init__(self) -> None:
        self.actual: dict[str, str] = {}

    def known(self, word: str) -> str | None:
        """The actual id (cut to the word's length) a page's word names, if it names one."""
        for name, real in self.actual.items():
            if name.startswith(word) and len(word) >= 4:
                return real[:len(word)]
        return None

    def command(self, command: str) -> str:
        """The command with each id prefix the page used replaced by the id it names."""
        def real(m: re.Match) -> str:
            word = m.group(0)
            full = next((r for n, r in self.actual.items() if n.startswith(word)), None)
            return full or word

        return re.sub(r"(?<![\w:/.-])[0-9a-f]{4,16}(?![\w:/.-])", real, command)


def _literal(text: str) -> str:
    return " +".join(re.escape(part) for part in re.split(r" {2,}", text))


def line_pattern(line: str, ids: Ids, new: dict[str, str]) -> str:
    """A regex for one expected line; `new` collects group names of ids first seen here."""
    out, pos = [], 0
    for m in re.finditer(r"[0-9a-f]*…|" + HEX_ID.pattern, line):
        out.append(_literal(line[pos:m.start()]))
        word = m.group(0)
        if word.endswith("…"):
            out.append(".*?")
        elif (real := ids.known(word)) is not None:
            out.append(re.escape(real))
        elif word in new:
            out.append(f"(?P={new[word]})")
        else:
            new[word] = f"id{len(new)}"
            out.append(f"(?P<{new[word]}>[0-9a-f]{{{len(word)}}})")
        pos = m.end()
    out.append(_literal(line[pos:]))
    return "".join(out)


def block_pattern(expected: list[str], ids: Ids, new: dict[str, str]) -> re.Pattern:
    parts = ["(?:[^\n]*\n)*?" if line == "…" else line_pattern(line, ids, new) + "\n"
             for line in expected]
    return re.compile("".join(parts))


def shown(text: str) -> str:
    """What the terminal shows: escape sequences dropped, a line rewritten in place (`\\r`)
    shows its last text; trailing spaces dropped."""
    text = re.sub(r"\x1b\[[0-9;?]*[A-Za-z]|\x1b\][^\x07]*\x07", "", text)
    lines = [line.split("\r")[-1].rstrip() for line in text.split("\n")]
    return "\n".join(lines).rstrip("\n") + "\n" if any(lines) else ""


# -- running a block ----------------------------------------------------------------------------

@dataclass
class Outcome:
    step: Step
    actual: str
    matched: bool


def run_block(block: Block, where: Path, env: dict[str, str]) -> list[Outcome]:
    ids, status, outcomes = Ids(), 0, []
    for step in block.steps:
        words = shlex.split(step.command, comments=True)
        if words[:1] == ["cat"] and len(words) == 2 and not (where / words[1]).exists():
            (where / words[1]).write_text("".join(line + "\n" for line in step.expected))
        status, raw = on_terminal(["bash", "-c", f"(exit {status}); {ids.command(step.command)}"],
                                  env, where, COLUMNS)
        actual = shown(raw)
        new: dict[str, str] = {}
        m = block_pattern(step.expected, ids, new).fullmatch(actual)
        if m:
            ids.actual.update({word: m.group(group) for word, group in new.items()})
        else:
            bind_line_by_line(step.expected, actual, ids)
        outcomes.append(Outcome(step, actual, bool(m)))
    return outcomes


def bind_line_by_line(expected: list[str], actual: str, ids: Ids) -> None:
    """Ids from the lines that match when the whole output does not: later commands still
    name the right runs, so one changed line fails one step, not every step after it."""
    for line in expected:
        new: dict[str, str] = {}
        pattern = line_pattern(line, ids, new)
        if not new:
            continue
        m = next(filter(None, (re.fullmatch(pattern, a) for a in actual.splitlines())), None)
        if m:
            ids.actual.update({word: m.group(group) for word, group in new.items()})


# what varies between runs, written as a placeholder when a page is regenerated
VARYING = (re.compile(r"(?<=sha256:)([0-9a-f]{8})[0-9a-f]{56}"),  # a digest: 8 digits kept
           re.compile(r"\b\d+(?:\.\d+)?(?= s\b| min\b)"),  # a timing
           re.compile(r"\d{4}-\d\d-\d\d[ T]\d\d:\d\d:\d\d(?:\.\d+)?Z?"))  # a timestamp


def _placeholder(line: str, pattern: re.Pattern, keep: bool) -> str:
    """`pattern`'s matches as `…` (a digest keeps its first digits); in a table, the cell
    keeps its width (the spaces after its text grow by what the placeholder saved)."""
    out, pos = "", 0
    for m in pattern.finditer(line):
        if m.start() < pos:
            continue
        text = (m.group(1) if keep else "") + "…"
        out += line[pos:m.start()] + text
        pos = m.end()
        cell = re.match(r"[^│┃]*?(?= {2,}| [│┃])", line[pos:])  # the rest of a table cell
        if cell:
            out += cell.group(0) + " " * (len(m.group(0)) - len(text))
            pos += cell.end()
    return out + line[pos:]


def regenerated(step: Step, actual: str, ids: Ids, where: Path) -> list[str]:
    """The step's new expected lines: an expected line that still matches an actual line is
    kept (placeholders and all), in order; any other actual line is written with ids named
    as the page names them, the scratch directory, digests, timings and timestamps as `…`."""
    def name(m: re.Match) -> str:
        word = m.group(0)
        found = next((n for n, real in ids.actual.items() if real.startswith(word)), None)
        return found[:len(word)] if found else word

    exp, out, j = step.expected, [], 0
    for line in actual.splitlines():
        k = next((k for k in range(j, len(exp)) if exp[k] != "…" and re.fullmatch(
            line_pattern(exp[k], ids, {}), line)), None)
        if k is not None:
            out += [e for e in exp[j:k] if e == "…"]
            out.append(exp[k])
            j = k + 1
            continue
        line = HEX_ID.sub(name, line.replace(str(where), "…"))
        for i, pattern in enumerate(VARYING):
            line = _placeholder(line, pattern, keep=i == 0)
        out.append(line)
    return out + [e for e in exp[j:] if e == "…"]


def rewrite(block: Block, outcomes: list[Outcome], where: Path) -> None:
    ids = Ids()
    lines = []
    for o in outcomes:
        new = regenerated(o.step, o.actual, ids, where)
        bind_line_by_line(new, o.actual, ids)
        lines += [f"$ {o.step.command}", *new]
    text = block.page.read_text()
    assert block.text in text, f"{block.page}: the block at line {block.line} moved"
    block.page.write_text(text.replace(block.text, "\n".join(lines), 1))


# -- the tests --------------------------------------------------------------------------------

@pytest.fixture(scope="module")
def example_cache(tmp_path_factory) -> Path:
    return tmp_path_factory.mktemp("docs-examples-cache")


def test_the_pages_that_must_have_checked_examples_have_them():
    for name in MUST_HAVE:
        assert blocks(ROOT / name), f"{name}: no `{MARKER}` block"


@pytest.mark.parametrize("block", all_blocks(),
                         ids=lambda b: f"{b.page.relative_to(ROOT)}:{b.line}")
def test_example_prints_what_the_page_shows(block: Block, tmp_path, example_cache):
    (tmp_path / "home").mkdir()
    outcomes = run_block(block, tmp_path, example_env(tmp_path / "home", example_cache))
    if os.environ.get("PROV_UPDATE_GOLDEN") == "1":
        rewrite(block, outcomes, tmp_path)
        return
    for o in outcomes:
        assert o.matched, (f"{block.page.relative_to(ROOT)}:{block.line}: `$ {o.step.command}` "
                           "printed something else (PROV_UPDATE_GOLDEN=1 rewrites the page):\n"
                           + "\n".join(o.step.expected) + "\n--- printed ---\n" + o.actual)
