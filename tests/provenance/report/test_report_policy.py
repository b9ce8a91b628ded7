"""The report's policy section: the verdict in the title, the policy's path and digest, and
each check with its condition, the observed value, the outcome and the reason, as recorded
in result.json (the result is judged by the real `write_result` and a parsed policy)."""

from __future__ import annotations

import hashlib
import html
import json

from provenance.model.policy import parse_policy
from provenance.report import build_report
from tests.provenance.report.synthetic import synthetic_result

POLICY = b"""[[check]]
statistic = "top1_agreement"
min = 0.5
[[check]]
statistic = "kl_ref_cand.max"
max = 1e-9
[[check]]
statistic = "no_such_statistic"
min = 0
"""


def _section(page: str) -> str:
    part = page[page.index('<section id="policy">'):]
    return html.unescape(part[:part.index("</section>")])


def _judged(tmp_path):
    return synthetic_result(tmp_path / "res", positions=2_000, vocab=8,
                            policy=parse_policy(POLICY, "accept.toml"))


def test_the_section_shows_the_recorded_verdict_and_each_check(tmp_path):
    res = _judged(tmp_path)
    block = json.loads((res / "result.json").read_text())["policy"]
    assert block["verdict"] == "FAIL"  # the planted spike exceeds max 1e-9
    sec = _section(build_report(str(res)))
    assert "<h2>Acceptance policy: FAIL</h2>" in sec
    assert "accept.toml" in sec and hashlib.sha256(POLICY).hexdigest() in sec
    rows = sec[sec.index("<tr>", sec.index("</th>")):].split("<tr>")[1:]
    assert len(rows) == 3
    for row, check in zip(rows, block["checks"], strict=True):
        assert f"<td>{check['statistic']}</td>" in row
        assert f"<td>{check['outcome'].replace('_', ' ')}</td>" in row
        observed = "-" if check["observed"] is None else json.dumps(check["observed"])
        assert f"<td>{observed}</td>" in row
    assert "below min" not in rows[0] and "above max 1e-09" in rows[1]
    assert "missing from the result" in rows[2]


def test_a_result_without_a_policy_has_no_policy_section(tmp_path):
    res = synthetic_result(tmp_path / "res", positions=500, vocab=8)
    assert '<section id="policy">' not in build_report(str(res))


def test_a_sweep_shows_each_judged_cells_verdict(tmp_path):
    from runners.sweep.driver import judge_cells
    from tests.provenance.report.test_report import sweep_doc

    doc = sweep_doc()
    for c in doc["cells"]:  # the fields the driver's rows carry for the judge
        c.update(label=c["id"], reference=c["id"] == doc["reference"], declared=False,
                 gate={"gate": "flagged" if c["flagged"] else "passed"})
    pol = parse_policy(b"[[check]]\nstatistic = 'top1_agreement'\nmin = 0.985\n", "s.toml")
    doc["policy"] = judge_cells(doc["cells"], pol)
    (tmp_path / "sweep.json").write_text(json.dumps(doc))
    sec = _section(build_report(str(tmp_path / "sweep.json")))
    assert "<h2>Acceptance policy: FAIL</h2>" in sec  # c2 agrees 98%, below 0.985
    assert "<td>c1</td><td>PASS</td><td>-</td>" in sec
    assert "<td>c2</td><td>FAIL</td><td>top1_agreement fail</td>" in sec
    assert "<td>c3</td><td>NOT_COMPARABLE</td><td>top1_agreement not_evaluated</td>" in sec
    assert "<td>c0</td>" not in sec  # the reference is not judged
