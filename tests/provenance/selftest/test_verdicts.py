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
