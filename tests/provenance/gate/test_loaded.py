"""Packages no process loaded, or one run's processes only (gate/loaded.py): listed, never
refused, where the environments hold the same version; a version or an edit still refuses."""

from __future__ import annotations

from provenance.gate import gate
from provenance.model import Manifest


def run(modules: dict, einops: str = "0.8.2") -> Manifest:
    return Manifest({
        "python": {"packages": {"einops": {"version": einops}, "torch": {"version": "2.13"}}},
        "code": {"modules": {"torch": {"version": "2.13", "files_checked": 9}, **modules}},
        "probe": {"complete": True},
    })


HELPER = {"einops": {"version": "0.8.2", "files_checked": 5}}  # a cold-cache helper's import


def test_a_distribution_one_run_imported_in_the_version_both_hold_is_listed_not_refused():
    result = gate(run(HELPER), run({}), [])
    assert result.ok and [c.key for c in result.one_run] == ["code.modules.einops.version"]
    assert result.to_json()["imported_by_one_run"]["code.modules.einops.version"]["a"] == "0.8.2"
    assert gate(run({}), run(HELPER), []).ok


def test_another_installed_version_or_a_seen_edit_still_refuses():
    other = gate(run(HELPER), run({}, einops="0.9.0"), [])
    assert {c.key for c in other.refused} == {"python.packages.einops.version",
                                              "code.modules.einops.version"}
    edited = {"einops": {**HELPER["einops"], "edited": {"einops/einops.py": "sha256:00"}}}
    result = gate(run(edited), run({}), [])
    assert {c.key for c in result.refused} == {"code.modules.einops.version",
                                               'code.modules.einops.edited."einops/einops.py"'}
    both = gate(run(HELPER), run({"einops": {"version": "0.9.0", "files_checked": 5}}), [])
    assert [c.key for c in both.refused] == ["code.modules.einops.version"]


def test_a_module_one_server_imported_in_the_version_both_hold_is_listed_not_refused():
    def client(modules: dict, tabulate: str = "0.9.0") -> Manifest:
        return Manifest({"server": {
            "python": {"packages": {"tabulate": {"version": tabulate}}},
            "code": {"modules": modules}}})

    seen = {"tabulate": {"version": "0.9.0"}}  # the server's identity keys only
    result = gate(client(seen), client({}), [])
    assert result.ok
    assert [c.key for c in result.one_run] == ["server.code.modules.tabulate.version"]
    other = gate(client(seen), client({}, tabulate="0.8.0"), [])
    assert "server.code.modules.tabulate.version" in {c.key for c in other.refused}
