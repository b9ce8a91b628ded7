"""Options are validated at the edge: one line, exit 2, before any work starts."""

from __future__ import annotations

import pytest

from tests.helpers import assert_one_line_error, run_prov


@pytest.mark.parametrize("args,needle", [
    (["runs", "--limit", str(10**30)], "--limit"),
    (["runs", "--limit", "-5"], "--limit"),
    (["demo", "--steps", "-1"], "--steps"),
    (["demo", "--steps", "0"], "--steps"),
    (["pin", "docker-archive:/nonexistent.tar", "--platform", "x/y/z/w"], "--platform"),
    (["pin", "docker-archive:/nonexistent.tar", "--platform", "linux"], "--platform"),
])
def test_bad_option_values_are_one_line_exit_2(tmp_path, args, needle):
    p = run_prov(*args, env={"PROV_STORE": str(tmp_path / "s")}, cwd=tmp_path, timeout=60)
    assert needle in assert_one_line_error(p, 2)


def test_keygen_prefix_that_is_a_directory_is_refused(tmp_path):
    p = run_prov("keygen", "-o", f"{tmp_path}/", cwd=tmp_path)
    assert "is a directory" in assert_one_line_error(p, 2)
    assert list(tmp_path.iterdir()) == []
