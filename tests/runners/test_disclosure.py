"""The result format and the disclosure card: a result is written only with a built (strict)
card; read back, a strict card round-trips, a pre-strict (legacy) card is still read, and a
card that lost an item is refused. The card itself: tests/provenance/model/test_disclosure.py."""

import json

import numpy as np
import pytest

from provenance.model.disclosure import DisclosureCard, DisclosureError, LegacyCard, read_card
from runners.results import ResultError, read_result, write_result
from tests.provenance.model.test_disclosure import LEGACY, STRICT

META = {"engines": [], "model_digest": "m", "tokenizer_digest": "t", "text_digest": "x",
        "positions": {"n_tokens": 3}}


def test_result_without_card_is_not_written(tmp_path):
    with pytest.raises(DisclosureError):
        write_result(tmp_path / "r", "diverge", META, {"a": np.zeros(3)}, dict(STRICT))
    assert list(tmp_path.iterdir()) == []


def test_result_round_trip_and_tamper(tmp_path):
    path = write_result(tmp_path / "r", "diverge", META, {"a": np.arange(4.0)},
                        DisclosureCard.from_dict(STRICT))
    doc, arrays = read_result(path)
    assert doc["disclosure"] == STRICT and doc["kind"] == "diverge"
    assert isinstance(read_card(doc["disclosure"]), DisclosureCard)
    assert np.array_equal(arrays["a"], np.arange(4.0))
    # a stored result whose card lost an item is refused on read
    doc_path = path / "result.json"
    bad = json.loads(doc_path.read_text())
    del bad["disclosure"]["kl_direction"]
    doc_path.write_text(json.dumps(bad))
    with pytest.raises(DisclosureError, match=r"kl_direction \(missing\)"):
        read_result(path)
    (path / "arrays.npz").write_bytes(b"not the arrays")
    with pytest.raises(ResultError, match="arrays_sha256"):
        read_result(path)


def test_a_result_written_before_the_strict_card_is_still_read_as_legacy(tmp_path):
    path = write_result(tmp_path / "r", "diverge", META, {"a": np.arange(4.0)},
                        DisclosureCard.from_dict(STRICT))
    old = json.loads(LEGACY.read_text())["disclosure"]  # an H200 result's free-text card
    doc = json.loads((path / "result.json").read_text())
    doc["disclosure"] = old
    (path / "result.json").write_text(json.dumps(doc))
    got, _ = read_result(path)
    card = read_card(got["disclosure"])
    assert isinstance(card, LegacyCard) and card.to_json() == old


def test_result_missing_metadata_refused(tmp_path):
    with pytest.raises(ResultError, match="text_digest"):
        write_result(tmp_path / "r", "repeat", {k: v for k, v in META.items()
                                                if k != "text_digest"},
                     {}, DisclosureCard.from_dict(STRICT))
    assert list(tmp_path.iterdir()) == []
