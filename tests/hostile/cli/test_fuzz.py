"""The CLI's arguments and environment fuzzed with hypothesis (issue #30).

Every command and every option that takes a value is read from the typer app itself (as
tests/test_docs_cli.py reads it), so a new option is fuzzed without touching this file.
Values are what a hostile user can put on a command line: any bytes (argv is bytes; those
that are not UTF-8 arrive as surrogates), integers past Python's 4,300-digit conversion
limit, 100,000-character strings, odd paths (a symlink loop, a FIFO, a directory where a
file belongs, /dev/zero, a name that is not UTF-8, a path under a regular file); the same
values go into every PROV_* variable prov reads. The only acceptable outcomes: exit
0/1/2/3/4/5 (for `prov exec -- CMD`, CMD's own 126/127 too), no traceback, no "internal
error". In-process (provenance.cli.run) to keep it cheap; derandomized, a fixed number of
examples per command, so CI time is bounded and a failure replays.

Commands whose valid options start real work are fuzzed with a base that fails fast (a
missing model, manifest or source), and two are left out: `prov demo` (trains a model)
and `prov selftest identity` (runs the identity matrix).
"""

from __future__ import annotations

import contextlib
import io
import os
from pathlib import Path

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from tests.test_docs_cli import _commands, _is_argument

EXAMPLES = 4
# Tried first on every target, whatever hypothesis draws: a 100,000-digit hex id (a run id
# or digest prefix: SQLite refused the LIKE pattern built from it) and bytes that are not
# UTF-8 (the writers met them as surrogates).
ALWAYS = ("f" * 100_000, os.fsdecode(b"\xff\xfe"))
BUDGET = settings(max_examples=EXAMPLES, deadline=None, derandomize=True, database=None,
                  suppress_health_check=[HealthCheck.too_slow,
                                         HealthCheck.function_scoped_fixture])
LEFT_OUT = {"demo", "selftest identity"}
# Required arguments and options, and bases that fail fast; G is a good manifest, M a
# missing file (every value here is replaced by the fuzzed one when it is the target).
BASE: dict[str, list[str]] = {
    "diff": ["G", "G"], "compare": ["G", "G"], "show": ["0123"], "pin": ["M"],
    "exec": [], "report": ["M"], "sweep": ["M"], "verify": [],
    "run repeat": ["--engine", "nope", "--model", "M", "--text", "M"],
    "run diverge": ["--ref", "nope", "--cand", "nope", "--model", "M", "--text", "M"],
    "run invariance": ["--engine", "nope", "--model", "M", "--text", "M"],
    "run replay": ["M", "--model", "M"], "serve": ["--upstream", "nope"],
    "publish": ["M", "--manifest", "M", "--out", "bundle"], "sbom": ["--manifest", "M"],
    "audit": ["--manifest", "M", "--osv-db", "M"], "keygen": ["-o", "k"],
    "lock": ["--offline", "--manifest", "M"],
}
PROV_VARIABLES = ("PROV_STORE", "PROV_CACHE_DIR", "PROV_INPROCESS", "PROV_NO_PYPROJECT",
                  "PROV_VLLM_PYTHON", "PROV_ANALYSIS_DEVICE", "PROV_TEMPLATE", "PROV_RUN_ID",
                  "PROV_RUN_DIR", "PROV_LIVE_FACTS", "PROV_PROBE_READERS", "PROV_PROBE_FAULT")
ENV_COMMANDS = (["runs"], ["show", "0123"], ["store", "fsck"], ["snapshot", "--json"],
                ["exec", "--", "true"], ["diff", "G", "G"])


def _targets() -> list[tuple[str, object, object]]:
    """(command, click command, parameter) for every argument and valued option."""
    out = []
    for name, cmd in _commands():
        name = name.removeprefix("prov ")
        if name in LEFT_OUT:
            continue
        for param in cmd.params:
            if _is_argument(param) or not param.is_flag:
                out.append((name, cmd, param))
    return out


TARGETS = _targets()


@pytest.fixture(scope="module")
def odd(tmp_path_factory) -> dict[str, str]:
    """Odd paths, a good manifest (G) and a missing file (M), in a directory of their own."""
    from provenance.cli import run

    w = tmp_path_factory.mktemp("fuzz")
    os.mkfifo(w / "fifo")
    (w / "dir").mkdir()
    os.symlink("loop", w / "loop")
    (w / "file").write_text("x")
    raw = os.fsencode(w) + b"/n\xffme"
    with open(raw, "wb") as fh:
        fh.write(b"\xff\xfe junk")
    env = {"PROV_STORE": str(w / "store"), "PROV_NO_PYPROJECT": "1", "NO_COLOR": "1"}
    with _environment(env), contextlib.redirect_stdout(io.StringIO()):
        assert run(["snapshot", "-o", str(w / "good.json"), "-f", "json"]) == 0
        assert run(["exec", "--", "true"]) == 0  # a store with a run: ids are looked up
    return {"dir": str(w), "G": str(w / "good.json"), "M": str(w / "missing.json"),
            "paths": [str(w / n) for n in ("fifo", "dir", "loop", "file/under", "missing")]
            + ["/dev/zero", os.fsdecode(raw), "", "-", "/"]}


@contextlib.contextmanager
def _environment(changes: dict[str, str]):
    saved = dict(os.environ)
    os.environ.pop("PROV_DEBUG", None)  # it turns an internal error into a traceback
    os.environ.update(changes)
    try:
        yield
    finally:
        os.environ.clear()
        os.environ.update(saved)


def hostile(paths: list[str]) -> st.SearchStrategy[str]:
    return st.one_of(
        st.binary(min_size=1, max_size=24).map(lambda b: os.fsdecode(b.replace(b"\0", b"0"))),
        st.integers(min_value=4301, max_value=6000).map(lambda n: "9" * n),
        st.sampled_from(["-" + "9" * 5000, str(2**64), "-1", "0", "1e999", "nan"]),
        st.sampled_from(["a" * 100_000, "f" * 100_000, "sha256:" + "0" * 100_000,
                         "x\ny", "--", "-x"]),
        st.sampled_from(paths),
    )


def _argv(command: str, cmd, param, value: str, odd: dict) -> list[str]:
    base = [odd.get(a, a) for a in BASE.get(command, [])]
    if param.opts[0] in base:  # a required option of the base: the fuzzed value replaces it
        i = base.index(param.opts[0])
        base[i + 1:i + 2] = [value]
        words = base
    elif _is_argument(param):
        positional = [i for i, a in enumerate(base) if not a.startswith("-")
                      and (i == 0 or not base[i - 1].startswith("-"))]
        words = list(base)
        if positional:
            words[positional[0]] = value
        else:
            words.append(value)
    else:
        words = [*base, param.opts[0], value]
    if command == "exec":  # options before `--`, the command after it
        words = ["--", value] if _is_argument(param) else [*words, "--", "true"]
    return [*command.split(), *words]


def _judge(code: int, out: str, err: str, argv: list[str], allowed=frozenset(range(6))):
    shown = [a[:40] for a in argv]
    assert code in allowed, (shown, code, err[-600:])
    assert "Traceback" not in err and "internal error" not in err, (shown, err[-600:])
    if code == 2 and argv[0] != "exec":
        last = (err.strip().splitlines() or [""])[-1]
        assert last.startswith("prov: error: "), (shown, err[-600:])
        assert len(last) < 1200, shown  # a 100,000-character value is not echoed whole


def _run(argv: list[str], capfd) -> tuple[int, str, str]:
    from provenance.cli import run

    capfd.readouterr()
    try:
        code = run(argv)
    except SystemExit as exc:  # typer's own --help / completion paths
        code = exc.code if isinstance(exc.code, int) else 0
    out, err = capfd.readouterr()
    return code, out, err


@pytest.mark.timeout(600)
@pytest.mark.parametrize("command,cmd,param", TARGETS,
                         ids=[f"{c} {p.opts[0]}" for c, _, p in TARGETS])
def test_any_value_of_any_option(odd, capfd, monkeypatch, tmp_path, command, cmd, param):
    monkeypatch.chdir(tmp_path)  # what a command writes lands here, not where the next looks
    env = {"PROV_STORE": str(Path(odd["dir"]) / "store"), "PROV_NO_PYPROJECT": "1",
           "NO_COLOR": "1"}

    @BUDGET
    @given(value=hostile(odd["paths"]))
    @example(value=ALWAYS[0])
    @example(value=ALWAYS[1])
    def check(value: str) -> None:
        argv = _argv(command, cmd, param, value, odd)
        with _environment(env):
            code, out, err = _run(argv, capfd)
        allowed = frozenset(range(6)) | ({126, 127} if command == "exec" and
                                         _is_argument(param) else frozenset())
        _judge(code, out, err, argv, allowed)

    check()


@pytest.mark.timeout(600)
@pytest.mark.parametrize("variable", PROV_VARIABLES)
def test_any_value_of_any_prov_variable(odd, capfd, monkeypatch, tmp_path, variable):
    monkeypatch.chdir(tmp_path)

    @BUDGET
    @given(value=hostile(odd["paths"]), argv=st.sampled_from(ENV_COMMANDS))
    def check(value: str, argv: list[str]) -> None:
        env = {"PROV_STORE": str(Path(odd["dir"]) / "store"), "PROV_NO_PYPROJECT": "1",
               "NO_COLOR": "1", variable: value}
        argv = [odd.get(a, a) for a in argv]
        with _environment(env):
            code, out, err = _run(argv, capfd)
        _judge(code, out, err, argv)
        if argv[0] == "exec":  # `true` runs whatever the store and the cache are
            assert code == 0, (variable, value[:40], err[-600:])

    check()
