"""The report's disclosure section: the nine items in the model's order, "not applicable" and
"none" written out with their reasons, and a pre-strict card shown as legacy."""

from __future__ import annotations

import json

import numpy as np

from provenance.model.disclosure import ITEMS, DisclosureCard
from tests.provenance.model.test_disclosure import LEGACY, STRICT

META = {"engines": [{"engine": "synthetic"}, {"engine": "synthetic"}], "model_digest": "none",
        "tokenizer_digest": "none", "text_digest": "none",
        "positions": {"n_tokens": 3, "scored": 2}, "summary": {"verdict": "bit-identical"},
        "comparison": {"gate": "not run (synthetic)"}}


def _section(html: str) -> str:
    part = html[html.index('<section id="disclosure">'):]
    return part[:part.index("</section>")]


def _result(tmp_path, card: dict):
    from runners import api

    return api.write_result(tmp_path / "res", "repeat", META, {"ids": np.arange(3)},
                            DisclosureCard.from_dict(card))


def test_a_strict_card_is_shown_in_the_models_order(tmp_path):
    from provenance.report import build_report

    card = dict(STRICT, kl_direction={"not_applicable": "raw bytes, no KL"})
    sec = _section(build_report(str(_result(tmp_path, card))))
    assert "<h2>Disclosure card</h2>" in sec and "legacy" not in sec
    where = [sec.index(f"<td>{item.replace('_', ' ')}</td>") for item in ITEMS]
    assert where == sorted(where)
    assert "not applicable: raw bytes, no KL" in sec
    assert "none: no quantized weights or KV cache were calibrated" in sec


def test_a_legacy_card_is_shown_as_legacy_with_what_is_not_strict(tmp_path):
    from provenance.report import build_report

    path = _result(tmp_path, STRICT)
    doc = json.loads((path / "result.json").read_text())
    doc["disclosure"] = json.loads(LEGACY.read_text())["disclosure"]
    (path / "result.json").write_text(json.dumps(doc))
    sec = _section(build_report(str(path)))
    assert "<h2>Disclosure card (legacy: free text, not checked)</h2>" in sec
    assert "prov publish</code> refuses it" in sec and "context_lengths (must be" in sec
    assert "one sequence of 131072 tokens, teacher-forced" in sec  # shown as written
