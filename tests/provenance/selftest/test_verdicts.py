"""The verdict table and the collector/classification fixes the matrix led to."""

from __future__ import annotations

import pytest

from provenance.collectors import env
from provenance.model import LeafKind, classify
from provenance.selftest.identity import verdict


@pytest.mark.parametrize(
    ("expect", "outputs", "identity", "want"),
    [
        ("cause", True, True, "sound"),
        ("cause", True, False, "missed cause"),
        ("cause", False, True, "sound"),
        ("cause", False, False, "sound"),
        ("context", False, False, "sound"),
        ("context", False, True, "noise"),
        ("context", True, False, "missed cause"),
    ],
)
def test_verdict(expect, outputs, identity, want):
    assert verdict(expect, outputs, identity)[0] == want


def test_no_effect_rows_say_so():
    assert "no output change" in verdict("cause", False, True)[1]
    assert "no output change" in verdict("cause", False, False)[1]


def test_aten_cpu_capability_is_collected():
    # found by the matrix: ATEN_CPU_CAPABILITY changes every CPU kernel and was not recorded
    got = env.collect([], {"ATEN_CPU_CAPABILITY": "default", "HOME": "/root"})
    assert got == {"ATEN_CPU_CAPABILITY": "default"}
    assert classify("env.ATEN_CPU_CAPABILITY") is LeafKind.IDENTITY


def test_time_zone_is_context():
    # found by the matrix: TZ moved the identity and never the outputs
    assert classify("env.TZ") is LeafKind.CONTEXT
    assert classify("env.LC_ALL") is LeafKind.IDENTITY


def test_env_extra_reaches_the_identity(tmp_path, monkeypatch):
    # found by the matrix: run_supervised(env_extra=...) reached the command, not its identity
    from provenance.exec import run_supervised
    from provenance.store import open_store

    monkeypatch.chdir(tmp_path)
    store = open_store(tmp_path / "store")
    secret = "hf_" + "x1y2z3" * 6
    a = run_supervised(["sh", "-c", 'test "$OPENBLAS_CORETYPE" = Prescott'], store=store,
                       env_extra={"OPENBLAS_CORETYPE": "Prescott", "HF_TOKEN": secret,
                                  "UNRELATED_VAR": "1"}, stream=False)
    b = run_supervised(["true"], store=store, stream=False)
    assert a.exit_status == 0
    ra, rb = store.get_run(a.run_id).record, store.get_run(b.run_id).record
    env = store.run_manifest(ra).facts["env"]
    assert env["OPENBLAS_CORETYPE"] == "Prescott"
    assert env["HF_TOKEN"] == "<redacted>" and "UNRELATED_VAR" not in env
    assert secret not in store.get_bytes(ra.manifest).decode()
    assert ra.manifest_digest != rb.manifest_digest
    assert ra.manifest_digest == store.run_manifest(ra).digest()
    assert ra.drift == {"checked": True, "detected": False}
