"""The acceptance policy: each malformed item refused by name; the verdict rules."""

from __future__ import annotations

import hashlib

import pytest

from provenance.model.errors import EXIT_USAGE
from provenance.model.policy import (
    FAIL,
    NOT_COMPARABLE,
    NOT_EVALUATED,
    PASS,
    VERDICT_EXIT,
    PolicyError,
    load_policy,
    overall,
    parse_policy,
    resolve,
)

SUMMARY = {"top1_agreement": 0.995, "kl_ref_cand": {"mean": 1e-4, "p99": 3e-3},
           "first_disagreement": None, "verdict": "invariant", "all_ok": True,
           "same_top_p": {"not_computable": "top-k truncated side"},
           "configs": [{"config": "a"}, {"config": "b:x=1.5", "closed_loop": {"reproduced": 2,
                                                                            "of": 3}}],
           "by": {"b:x=1.5": {"n": 4}}}


def _policy(text: str):
    return parse_policy(text.encode(), "p.toml")


@pytest.mark.parametrize("text, item", [
    ("", "an empty policy"),
    ("name = 'x'\n", "an empty policy"),
    ("check = []\n", "an empty policy"),
    ("checks = 1\n", "unknown key 'checks'"),
    ("check = 1\n", "check: must be [[check]] tables"),
    ("[[check]]\nmin = 1\n", "check 1: statistic"),
    ("[[check]]\nstatistic = ''\nmin = 1\n", "check 1: statistic"),
    ("[[check]]\nstatistic = 'a..b'\nmin = 1\n", "check 1: statistic"),
    ("[[check]]\nstatistic = 'a'\n", "check 1 (a): no condition"),
    ("[[check]]\nstatistic = 'a'\nmni = 1\n", "check 1 (a): unknown key 'mni'"),
    ("[[check]]\nstatistic = 'a'\nmin = '0.9'\n", "check 1 (a): min: must be a number"),
    ("[[check]]\nstatistic = 'a'\nmax = true\n", "check 1 (a): max: must be a number"),
    ("[[check]]\nstatistic = 'a'\nmax = nan\n", "check 1 (a): max: must be a finite number"),
    ("[[check]]\nstatistic = 'a'\nmin = 2\nmax = 1\n", "check 1 (a): min 2 is above max 1"),
    ("[[check]]\nstatistic = 'a'\nmin = 1\nequals = 1\n", "check 1 (a): min and equals"),
    ("[[check]]\nstatistic = 'a'\nequals = [1]\n", "check 1 (a): equals: must be"),
    ("[[check]]\nstatistic = 'a'\none_of = []\n", "check 1 (a): one_of: must be a non-empty"),
    ("[[check]]\nstatistic = 'a'\none_of = [{x = 1}]\n", "check 1 (a): one_of: must be"),
    ("[[check]]\nstatistic = 'a'\nmin = 1\nnote = 3\n", "check 1 (a): note: must be a string"),
    ("[[check]]\nstatistic = 'a'\nmin = 1\n[[check]]\nstatistic = 'b'\n",
     "check 2 (b): no condition"),
    ("[[check]\n", "not a TOML policy"),
    ("name = 3\n[[check]]\nstatistic = 'a'\nmin = 1\n", "name: must be a non-empty string"),
])
def test_each_malformed_item_is_refused_naming_file_and_item(text, item):
    with pytest.raises(PolicyError) as e:
        _policy(text)
    msg = str(e.value)
    assert msg.startswith("p.toml: ") and item in msg, msg
    assert "\n" not in msg and e.value.exit_code == EXIT_USAGE


def test_unreadable_file_is_bad_input(tmp_path):
    with pytest.raises(PolicyError) as e:
        load_policy(tmp_path / "missing.toml")
    assert str(e.value).startswith(f"{tmp_path / 'missing.toml'}: cannot read")
    (tmp_path / "bin.toml").write_bytes(b"\xff\xfe")
    with pytest.raises(PolicyError, match="not a TOML policy"):
        load_policy(tmp_path / "bin.toml")


def test_digest_is_of_the_file_bytes(tmp_path):
    data = b"name = 'gate'\n[[check]]\nstatistic = 'top1_agreement'\nmin = 0.99\n"
    (tmp_path / "p.toml").write_bytes(data)
    p = load_policy(tmp_path / "p.toml")
    assert p.sha256 == hashlib.sha256(data).hexdigest()
    block = p.evaluate(SUMMARY)
    assert block == {"path": str(tmp_path / "p.toml"), "sha256": p.sha256, "name": "gate",
                     "verdict": PASS,
                     "checks": [{"statistic": "top1_agreement", "min": 0.99,
                                 "observed": 0.995, "outcome": "pass"}]}


def test_resolve_paths():
    assert resolve(SUMMARY, "kl_ref_cand.p99") == 3e-3
    assert resolve(SUMMARY, "configs.1.closed_loop.reproduced") == 2
    assert resolve(SUMMARY, "by.b:x=1.5.n") == 4  # a key holding a dot
    assert resolve(SUMMARY, "same_top_p.p90") == {"not_computable": "top-k truncated side"}
    from provenance.model.policy import _MISSING

    for path in ("nope", "configs.7.x", "configs.x", "top1_agreement.mean"):
        assert resolve(SUMMARY, path) is _MISSING


def _outcomes(text: str) -> tuple[str, list[tuple[str, str | None]]]:
    block = _policy(text).evaluate(SUMMARY)
    return block["verdict"], [(c["outcome"], c.get("reason")) for c in block["checks"]]


def test_each_condition_passes_and_fails():
    cases = [
        ("statistic = 'top1_agreement'\nmin = 0.99", "pass"),
        ("statistic = 'top1_agreement'\nmin = 0.999", "fail"),
        ("statistic = 'kl_ref_cand.p99'\nmax = 0.01", "pass"),
        ("statistic = 'kl_ref_cand.p99'\nmin = 0\nmax = 0.001", "fail"),
        ("statistic = 'verdict'\nequals = 'invariant'", "pass"),
        ("statistic = 'verdict'\nequals = 'not invariant'", "fail"),
        ("statistic = 'verdict'\none_of = ['unproven', 'invariant']", "pass"),
        ("statistic = 'all_ok'\nequals = true", "pass"),
        ("statistic = 'all_ok'\nequals = 1", "fail"),  # true is not 1
        ("statistic = 'configs.1.closed_loop.reproduced'\nequals = 2.0", "pass"),
        ("statistic = 'configs.1.closed_loop.reproduced'\nmin = 3", "fail"),
    ]
    for body, want in cases:
        verdict, checks = _outcomes(f"[[check]]\n{body}\n")
        assert checks[0][0] == want, body
        assert verdict == {"pass": PASS, "fail": FAIL}[want]


def test_missing_and_not_computable_are_not_evaluated():
    verdict, checks = _outcomes("[[check]]\nstatistic = 'nope'\nmin = 1\n"
                                "[[check]]\nstatistic = 'same_top_p.p90'\nmax = 1\n"
                                "[[check]]\nstatistic = 'first_disagreement'\nmin = 10\n"
                                "[[check]]\nstatistic = 'kl_ref_cand'\nmax = 1\n"
                                "[[check]]\nstatistic = 'top1_agreement'\nmin = 0.9\n")
    assert verdict == NOT_EVALUATED
    assert checks == [("not_evaluated", "missing from the result"),
                      ("not_evaluated", "not computable: top-k truncated side"),
                      ("not_evaluated", "not a finite number: null"),
                      ("not_evaluated", "not a finite number: a table"),
                      ("pass", None)]


def test_a_failure_wins_over_missing_evidence():
    verdict, checks = _outcomes("[[check]]\nstatistic = 'nope'\nmin = 1\n"
                                "[[check]]\nstatistic = 'top1_agreement'\nmin = 0.999\n")
    assert verdict == FAIL and [o for o, _ in checks] == ["not_evaluated", "fail"]


def test_not_comparable_evaluates_nothing():
    p = _policy("[[check]]\nstatistic = 'top1_agreement'\nmin = 0.5\nnote = 'why'\n")
    block = p.not_comparable("the gate refused")
    assert block["verdict"] == NOT_COMPARABLE
    assert block["checks"] == [{"statistic": "top1_agreement", "min": 0.5, "observed": None,
                                "outcome": "not_evaluated",
                                "reason": "not comparable: the gate refused", "note": "why"}]


def test_verdicts_exit_codes_and_precedence():
    assert VERDICT_EXIT == {PASS: 0, FAIL: 1, NOT_COMPARABLE: 3, NOT_EVALUATED: 5}
    assert overall([PASS, PASS]) == PASS
    assert overall([PASS, NOT_EVALUATED]) == NOT_EVALUATED
    assert overall([NOT_EVALUATED, NOT_COMPARABLE, PASS]) == NOT_COMPARABLE
    assert overall([NOT_COMPARABLE, FAIL]) == FAIL
    assert overall([]) == NOT_EVALUATED  # nothing judged is no evidence
