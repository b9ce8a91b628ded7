"""prov publish checks disclosure cards with the model's strict check: a KL figure's card that
is not strict is refused in one line naming the item and why; a prov-result/1 result.json is
published only with a strict card of its own (a pre-strict, legacy card is refused); verify
step 7 checks them again."""

from __future__ import annotations

import json
import shutil

import numpy as np
import pytest

from provenance.model import disclosure
from provenance.model.errors import ProvError
from provenance.publish.bundle import publish
from provenance.publish.verify import PASS, verify_bundle
from tests.provenance.model.test_disclosure import LEGACY, STRICT
from tests.provenance.publish.test_publish import kl_card
from tests.provenance.sbom.helpers_sbom import prov, sample_manifest, sample_subject


def _kl_result(tmp_path, **items) -> object:
    res = tmp_path / "kl.json"
    card = kl_card(sample_manifest().digest()) | items
    res.write_text(json.dumps({"metric": "kl_divergence", "value": 0.01, "kl_disclosure": card}))
    return res


@pytest.mark.parametrize("item,value,why", [
    ("calibration_data", "none: nothing quantized", "calibration_data (must be an object, got a "
                                                    "string)"),
    ("context_lengths", "one sequence of 4096 tokens",
     "context_lengths (must be a non-empty list of positive token counts, got a string)"),
    ("context_lengths", [4096, "32768"], "context_lengths[1] (must be an integer >= 1, got a "
                                         "string)"),
    ("kl_direction", "both: KL(P||Q) and KL(Q||P)", "kl_direction (must be one of "
                                                    "'KL(ref||cand)', 'KL(cand||ref)', 'both'"),
    ("kl_direction", {"not_applicable": "no KL"},
     "kl_direction (a KL figure needs it: not_applicable is not allowed)"),
    ("vocabulary_truncation", {"mode": "top-20"}, "vocabulary_truncation.mode (must be one of "
                                                  "'full', 'top_k', got 'top-20')"),
    ("sampled_positions", "all of them", "sampled_positions (must be an object, got a string)"),
    ("aggregation", {"method": "mean", "runs": "3"}, "aggregation.runs (must be an integer >= 1"),
])
def test_a_kl_card_that_is_not_strict_is_refused_naming_the_item(tmp_path, item, value, why):
    res = _kl_result(tmp_path, **{item: value})
    with pytest.raises(ProvError) as err:
        publish([res], sample_subject(), tmp_path / "b", allow_unrecorded=True)
    msg = str(err.value)
    assert msg.startswith("refusing to publish: kl.json declares a KL-divergence figure")
    assert why in msg and "\n" not in msg and not (tmp_path / "b").exists()


def test_the_cli_refuses_a_bad_card_in_one_line(tmp_path):
    mpath = tmp_path / "m.json"
    sample_manifest().write(mpath, fmt="json")
    res = _kl_result(tmp_path, kl_direction="both: kl_ref_cand and kl_cand_ref")
    r = prov("publish", str(res), "--manifest", str(mpath), "--out", str(tmp_path / "b"))
    assert r.returncode != 0 and not (tmp_path / "b").exists()
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("prov: error: refusing to publish: kl.json")
    assert "kl_direction (must be one of" in lines[0] and "Traceback" not in r.stderr


def _runner_result(tmp_path, card: dict) -> object:
    from runners.results import write_result

    meta = {"engines": [], "model_digest": "m", "tokenizer_digest": "t", "text_digest": "x",
            "positions": {"n_tokens": 3}}
    path = write_result(tmp_path / "res", "diverge", meta, {"a": np.zeros(2)},
                        disclosure.DisclosureCard.from_dict(STRICT))
    doc = json.loads((path / "result.json").read_text())
    doc["disclosure"] = card
    out = tmp_path / "result.json"
    out.write_text(json.dumps(doc))
    return out


def test_a_runner_result_publishes_with_its_strict_card(tmp_path):
    res = _runner_result(tmp_path, STRICT)
    publish([res], sample_subject(), tmp_path / "b", allow_unrecorded=True)
    report = verify_bundle(str(tmp_path / "b"), no_signature=True)
    assert report.failed is None
    step7 = report.steps[6]
    assert step7.verdict == PASS
    assert "results/result.json: its disclosure card is strict" in step7.details


def test_a_legacy_result_card_is_refused_naming_each_item(tmp_path):
    old = json.loads(LEGACY.read_text())["disclosure"]
    res = _runner_result(tmp_path, old)
    with pytest.raises(ProvError) as err:
        publish([res], sample_subject(), tmp_path / "b", allow_unrecorded=True)
    msg = str(err.value)
    assert msg.startswith("refusing to publish: result.json: its disclosure card is not strict")
    for why in ("calibration_data (must be an object, got a string)",
                "context_lengths (must be a non-empty list of positive token counts, got a "
                "string)", "kl_direction (must be one of"):
        assert why in msg
    assert "\n" not in msg and not (tmp_path / "b").exists()
    # the H200 result itself, as it is stored under bench/results/, is refused the same way
    shutil.copy(LEGACY, tmp_path / LEGACY.name)
    with pytest.raises(ProvError, match=f"{LEGACY.name}: its disclosure card is not strict"):
        publish([tmp_path / LEGACY.name], sample_subject(), tmp_path / "c",
                allow_unrecorded=True)


def test_verify_step_7_refuses_a_result_card_made_legacy_and_resigned(tmp_path):
    import hashlib

    from provenance.publish.keys import generate
    from tests.hostile.publish.test_forgeries import failed_at, resign, statement_of

    key, pub, _ = generate(tmp_path / "signer")
    res = _runner_result(tmp_path, STRICT)
    out = tmp_path / "b"
    publish([res], sample_subject(), out, key_path=key, allow_unrecorded=True)
    assert failed_at(out, pub) is None
    doc = json.loads(res.read_text())
    doc["disclosure"] = json.loads(LEGACY.read_text())["disclosure"]
    data = json.dumps(doc).encode()
    (out / "results" / "result.json").write_bytes(data)
    st = statement_of(out)
    for subj in st["subject"]:
        if subj["name"] == "results/result.json":
            subj["digest"]["sha256"] = hashlib.sha256(data).hexdigest()
    resign(out, key, st)
    report = verify_bundle(str(out), pub)
    assert report.failed.number == 7
    assert any("its disclosure card is not strict" in d and "context_lengths" in d
               for d in report.failed.details)
