import numpy as np
import pytest

from provenance.model.disclosure import ITEMS, DisclosureCard, DisclosureError
from runners.results import ResultError, read_result, write_result

FULL = {k: f"value of {k}" for k in ITEMS}
META = {"engines": [], "model_digest": "m", "tokenizer_digest": "t", "text_digest": "x",
        "positions": {"n_tokens": 3}}


def test_nine_items():
    assert len(ITEMS) == 9
    assert DisclosureCard.from_dict(FULL).to_json() == FULL


@pytest.mark.parametrize("item", ITEMS)
@pytest.mark.parametrize("bad", [None, "", "  ", {}])
def test_card_missing_item_cannot_be_built(item, bad):
    data = dict(FULL)
    if bad is None:
        del data[item]
    else:
        data[item] = bad
    with pytest.raises(DisclosureError, match=item):
        DisclosureCard.from_dict(data)
    with pytest.raises(DisclosureError, match=item):
        DisclosureCard(**{**FULL, item: bad if bad is not None else ""})


def test_result_without_card_is_not_written(tmp_path):
    with pytest.raises(DisclosureError):
        write_result(tmp_path / "r", "diverge", META, {"a": np.zeros(3)}, dict(FULL))
    assert list(tmp_path.iterdir()) == []


def test_result_round_trip_and_tamper(tmp_path):
    path = write_result(tmp_path / "r", "diverge", META, {"a": np.arange(4.0)},
                        DisclosureCard.from_dict(FULL))
    doc, arrays = read_result(path)
    assert doc["disclosure"] == FULL and doc["kind"] == "diverge"
    assert np.array_equal(arrays["a"], np.arange(4.0))
    # a stored result whose card lost an item is refused on read
    import json

    doc_path = path / "result.json"
    bad = json.loads(doc_path.read_text())
    del bad["disclosure"]["kl_direction"]
    doc_path.write_text(json.dumps(bad))
    with pytest.raises(DisclosureError, match="kl_direction"):
        read_result(path)
    (path / "arrays.npz").write_bytes(b"not the arrays")
    with pytest.raises(ResultError, match="arrays_sha256"):
        read_result(path)


def test_result_missing_metadata_refused(tmp_path):
    with pytest.raises(ResultError, match="text_digest"):
        write_result(tmp_path / "r", "repeat", {k: v for k, v in META.items()
                                                if k != "text_digest"},
                     {}, DisclosureCard.from_dict(FULL))
    assert list(tmp_path.iterdir()) == []
