"""A 100,000-character run id or digest (issue #30): SQLite refused the LIKE pattern prefix
lookups built from it ("LIKE or GLOB pattern too complex", exit 70). Lookups are key ranges
now: a long id finds nothing, in one line, and a short prefix still finds its run."""

from __future__ import annotations

import pytest

from tests.exec_support import prov, runs_json
from tests.hostile.faults import one_error_line

LONG_HEX = "a" * 100_000


@pytest.fixture
def one_run(penv):
    p = prov("exec", "--", "true", env=penv)
    assert p.returncode == 0, p.stderr
    return runs_json(penv)[0]["run_id"]


@pytest.mark.timeout(120)
@pytest.mark.parametrize("args", [
    ("show", LONG_HEX), ("show", "sha256:" + LONG_HEX), ("diff", LONG_HEX, "RUN"),
    ("compare", "RUN", LONG_HEX), ("sbom", "--run", LONG_HEX), ("audit", "--run", LONG_HEX),
    ("publish", "RUN", "--run", LONG_HEX, "--out", "OUT"),
], ids=lambda a: " ".join(x[:12] for x in a))
def test_a_100k_character_id_is_one_line(penv, one_run, tmp_path, args):
    argv = [one_run if a == "RUN" else str(tmp_path / "b") if a == "OUT" else a for a in args]
    p = prov(*argv, env=penv)
    assert p.returncode == 2, (p.stdout, p.stderr[-500:])
    line = one_error_line(p.stderr)
    assert len(line) < 1100  # the id is not echoed whole (cut by the command or by main)


def test_prefixes_still_resolve(penv, one_run):
    for prefix in (one_run[:4], one_run, one_run.upper()[:6]):
        p = prov("show", prefix, "--json", env=penv)
        assert p.returncode == 0, (prefix, p.stderr)
    p = prov("show", one_run + "0", env=penv)  # one digit longer than any run id
    assert "no such run" in one_error_line(p.stderr)
