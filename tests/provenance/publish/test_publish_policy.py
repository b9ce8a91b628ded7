"""A result judged by a policy travels with its verdict: the `policy` block is published
inside results/<name> byte for byte (a subject of the signed statement), and a verdict
edited in the bundle fails `prov verify` at the subjects' digests."""

from __future__ import annotations

import json

import numpy as np

from provenance.model import disclosure
from provenance.model.policy import parse_policy
from provenance.publish.bundle import publish
from provenance.publish.verify import verify_bundle
from tests.provenance.model.test_disclosure import STRICT
from tests.provenance.sbom.helpers_sbom import sample_subject

POLICY = b"[[check]]\nstatistic = 'top1_agreement'\nmin = 0.99\n"


def _judged(tmp_path):
    from runners.results import write_result

    meta = {"engines": [], "model_digest": "m", "tokenizer_digest": "t", "text_digest": "x",
            "positions": {"n_tokens": 3}, "summary": {"top1_agreement": 0.5}}
    path = write_result(tmp_path / "res", "diverge", meta, {"a": np.zeros(2)},
                        disclosure.DisclosureCard.from_dict(STRICT),
                        parse_policy(POLICY, "accept.toml"))
    return path / "result.json"


def test_the_policy_verdict_is_published_and_covered_by_the_statement(tmp_path):
    res = _judged(tmp_path)
    assert json.loads(res.read_text())["policy"]["verdict"] == "FAIL"
    out = tmp_path / "b"
    publish([res], sample_subject(), out, allow_unrecorded=True)
    published = out / "results" / "result.json"
    assert published.read_bytes() == res.read_bytes()
    assert verify_bundle(str(out), no_signature=True).failed is None

    doc = json.loads(published.read_text())
    doc["policy"]["verdict"] = "PASS"
    published.write_text(json.dumps(doc))
    failed = verify_bundle(str(out), no_signature=True).failed
    assert failed is not None and any("results/result.json" in d for d in failed.details)
