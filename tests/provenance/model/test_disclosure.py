"""The disclosure card, defined once: round trips, each item's type and enumeration refused with
its own message, explicit not_applicable/none with a reason, cards built in code checked the
same way, legacy (pre-strict) cards read but never publishable."""

from __future__ import annotations

import copy
import json
from pathlib import Path

import pytest

from provenance.model import disclosure as d
from provenance.model.disclosure import ITEMS, DisclosureCard, DisclosureError
from provenance.model.errors import ProvError

D1, D2, D3 = ("sha256:" + c * 64 for c in "abc")
ROOT = Path(__file__).resolve().parents[3]
LEGACY = ROOT / "bench/results/2026-12-01-h200/diverge-131072-trained.result.json"

STRICT = {
    "reference_checkpoint": {"digest": D1, "name": "bf16", "tokenizer_digest": D2,
                             "reference_engine": "transformers:attn=sdpa"},
    "runtime_environment": {"manifest_digest": D3, "run_ids": ["r-1", "r-2"],
                            "runtime": {"reference": {"torch": {"num_threads": 2}}}},
    "evaluation_text": {"digest": D2, "source": "agentic trace v3", "tokens_total": 4096},
    "calibration_data": {"none": "no quantized weights or KV cache were calibrated"},
    "context_lengths": [4096, 32768],
    "sampled_positions": {"count": 4095, "rule": "every next-token position"},
    "kl_direction": "both",
    "vocabulary_truncation": {"mode": "top_k", "k": 20, "residual_bucket": True,
                              "note": "served logprobs"},
    "aggregation": {"method": "mean and percentiles",
                    "bootstrap": {"level": 0.95, "block": 32, "resamples": 1000, "seed": 0}},
}


def with_item(item: str, value) -> dict:
    card = copy.deepcopy(STRICT)
    card[item] = value
    return card


def test_nine_items_in_one_place():
    assert len(ITEMS) == 9 and tuple(f.name for f in d.FIELDS) == ITEMS
    assert issubclass(DisclosureError, ProvError)


def test_a_strict_card_round_trips():
    card = DisclosureCard.from_dict(STRICT)
    assert card.to_json() == STRICT
    assert DisclosureCard.from_dict(json.loads(json.dumps(card.to_json()))) == card
    assert card.kl_direction is d.Direction.BOTH
    assert card.vocabulary_truncation.mode is d.Vocabulary.TOP_K
    assert card.context_lengths == (4096, 32768)
    assert card.aggregation.bootstrap == d.Bootstrap(0.95, 32, 1000, 0)
    assert not card.legacy and d.problems(STRICT) == []


def test_the_other_typed_alternatives_round_trip():
    card = with_item("calibration_data", {"digest": D3, "source": "512 wikitext rows"})
    card["kl_direction"] = "KL(cand||ref)"
    card["vocabulary_truncation"] = {"mode": "full", "size": 151936}
    card["runtime_environment"] = {"run_ids": ["standalone"]}
    card["sampled_positions"] = {"rule": "every generated token"}
    assert DisclosureCard.from_dict(card).to_json() == card


@pytest.mark.parametrize("item,value,message", [
    # reference_checkpoint
    ("reference_checkpoint", "bf16 weights", "reference_checkpoint (must be an object, got a "
                                             "string)"),
    ("reference_checkpoint", {"name": "bf16"}, "reference_checkpoint (needs digest; missing"),
    ("reference_checkpoint", {"digest": "abc"},
     "reference_checkpoint.digest (must be \"sha256:<64 lowercase hex>\", got 'abc')"),
    ("reference_checkpoint", {"digest": D1, "tokenizer_digest": 7},
     "reference_checkpoint.tokenizer_digest (must be \"sha256:<64 lowercase hex>\", got an "
     "integer)"),
    ("reference_checkpoint", {"digest": D1, "model_digest": D1},
     "reference_checkpoint (unknown key(s) model_digest"),
    # runtime_environment
    ("runtime_environment", {"runtime": {}}, "runtime_environment (needs manifest_digest or "
                                             "run_ids)"),
    ("runtime_environment", {"run_ids": "r-1"},
     "runtime_environment.run_ids (must be a non-empty list of run ids, got a string)"),
    ("runtime_environment", {"run_ids": [""]},
     "runtime_environment.run_ids (must be a non-empty string"),
    ("runtime_environment", {"manifest_digest": "sha256:xyz"},
     "runtime_environment.manifest_digest (must be \"sha256:<64 lowercase hex>\""),
    ("runtime_environment", {"run_ids": ["r"], "runtime": {"ref": "sdpa"}},
     "runtime_environment.runtime (must be an object of side -> runtime facts"),
    # evaluation_text
    ("evaluation_text", {"digest": D1}, "evaluation_text (needs digest, source; missing "
                                        "source)"),
    ("evaluation_text", {"digest": D1, "source": "t", "tokens_total": "4096"},
     "evaluation_text.tokens_total (must be an integer >= 1, got a string)"),
    ("evaluation_text", {"digest": D1, "source": "t", "tokens_total": 0},
     "evaluation_text.tokens_total (must be an integer >= 1, got 0)"),
    ("evaluation_text", {"digest": D1, "source": "   "},
     "evaluation_text.source (must be a non-empty string"),
    # calibration_data: "none" is a typed value with a reason, not a prefix
    ("calibration_data", "none: no quantized weights", "calibration_data (must be an object, "
                                                       "got a string)"),
    ("calibration_data", "none", "calibration_data (must be an object, got a string)"),
    ("calibration_data", {"none": ""}, "calibration_data.none (must be a non-empty string"),
    ("calibration_data", {"digest": D1}, "calibration_data (needs digest, source; missing "
                                         "source)"),
    # context_lengths: numbers as numbers
    ("context_lengths", "one sequence of 4096 tokens",
     "context_lengths (must be a non-empty list of positive token counts, got a string)"),
    ("context_lengths", [], "context_lengths (must be a non-empty list"),
    ("context_lengths", [4096, 0], "context_lengths[1] (must be an integer >= 1, got 0)"),
    ("context_lengths", [4096.0], "context_lengths[0] (must be an integer >= 1, got 4096.0)"),
    ("context_lengths", [True], "context_lengths[0] (must be an integer >= 1, got True)"),
    # sampled_positions
    ("sampled_positions", "all 4095 positions", "sampled_positions (must be an object, got a "
                                                "string)"),
    ("sampled_positions", {"count": 4095}, "sampled_positions (needs rule; missing rule)"),
    ("sampled_positions", {"rule": "all", "count": "4095"},
     "sampled_positions.count (must be an integer >= 1, got a string)"),
    # kl_direction: an enumeration
    ("kl_direction", "both: kl_ref_cand and kl_cand_ref",
     "kl_direction (must be one of 'KL(ref||cand)', 'KL(cand||ref)', 'both', got 'both: "),
    ("kl_direction", "KL(P||Q)", "kl_direction (must be one of"),
    ("kl_direction", {"direction": "both"}, "kl_direction (must be one of"),
    ("kl_direction", {"not_applicable": " "}, "kl_direction.not_applicable (must be a "
                                              "non-empty string"),
    # vocabulary_truncation: an enumeration with typed details
    ("vocabulary_truncation", "none: full vocabulary",
     "vocabulary_truncation (must be an object, got a string)"),
    ("vocabulary_truncation", {"mode": "top-k", "residual_bucket": True},
     "vocabulary_truncation.mode (must be one of 'full', 'top_k', got 'top-k')"),
    ("vocabulary_truncation", {"mode": "top_k"},
     "vocabulary_truncation.residual_bucket (\"top_k\" needs true or false, got null)"),
    ("vocabulary_truncation", {"mode": "top_k", "residual_bucket": "yes"},
     "vocabulary_truncation.residual_bucket (\"top_k\" needs true or false, got a string)"),
    ("vocabulary_truncation", {"mode": "full", "k": 20},
     "vocabulary_truncation.mode (\"full\" takes no k or residual_bucket)"),
    ("vocabulary_truncation", {"mode": "top_k", "residual_bucket": False, "k": -1},
     "vocabulary_truncation.k (must be an integer >= 1, got -1)"),
    # aggregation
    ("aggregation", "mean over positions", "aggregation (must be an object, got a string)"),
    ("aggregation", {"method": "mean", "bootstrap": {"level": 95, "block": 32,
                                                     "resamples": 1000, "seed": 0}},
     "aggregation.bootstrap.level (must be a number in (0, 1), got 95)"),
    ("aggregation", {"method": "mean", "bootstrap": {"level": 0.95}},
     "aggregation.bootstrap (needs level, block, resamples, seed; missing block"),
    ("aggregation", {"method": "mean", "runs": 1.5},
     "aggregation.runs (must be an integer >= 1, got 1.5)"),
])
def test_each_malformed_item_is_refused_with_its_own_message(item, value, message):
    bad = with_item(item, value)
    found = d.problems(bad)
    assert len(found) == 1 and found[0].startswith(message), found
    with pytest.raises(DisclosureError) as err:
        DisclosureCard.from_dict(bad)
    assert str(err.value) == f"disclosure card: {found[0]}" and "\n" not in str(err.value)


@pytest.mark.parametrize("item", ITEMS)
def test_every_item_must_be_present_and_may_be_not_applicable_with_a_reason(item):
    missing = {k: v for k, v in STRICT.items() if k != item}
    assert d.problems(missing) == [f"{item} (missing)"]
    card = DisclosureCard.from_dict(with_item(item, {"not_applicable": "synthetic result"}))
    assert getattr(card, item) == d.NotApplicable("synthetic result")
    for blank in (None, "", {}, []):
        assert d.problems(with_item(item, blank))[0].startswith(f"{item} ")


def test_unknown_items_and_non_objects_are_refused():
    assert d.problems({**STRICT, "kl_units": "nats"}) == ["kl_units (not one of the nine items)"]
    assert d.problems("card") == [f"{i} (missing: no disclosure card)" for i in ITEMS]


def test_a_card_built_in_code_is_checked_the_same_way():
    card = DisclosureCard.from_dict(STRICT)
    fields = {k: getattr(card, k) for k in ITEMS}
    with pytest.raises(DisclosureError, match=r"context_lengths \(must be tuple or "
                                              r"NotApplicable, got str\)"):
        DisclosureCard(**{**fields, "context_lengths": "one sequence of 4096 tokens"})
    with pytest.raises(DisclosureError, match=r"kl_direction \(must be Direction"):
        DisclosureCard(**{**fields, "kl_direction": "both: KL(P||Q)"})
    with pytest.raises(DisclosureError, match=r"context_lengths\[0\] \(must be an integer"):
        DisclosureCard(**{**fields, "context_lengths": (0,)})
    with pytest.raises(DisclosureError, match="vocabulary_truncation.mode"):
        DisclosureCard(**{**fields, "vocabulary_truncation": d.Truncation(
            d.Vocabulary.FULL, k=5)})
    with pytest.raises(DisclosureError, match=r"vocabulary_truncation.mode \(must be one of"):
        DisclosureCard(**{**fields, "vocabulary_truncation": d.Truncation("top-k")})
    with pytest.raises(DisclosureError, match=r"calibration_data.none \(must be a non-empty"):
        DisclosureCard(**{**fields, "calibration_data": d.NoCalibration("")})
    assert DisclosureCard(**{**fields, "context_lengths": [7]}).context_lengths == (7,)
    na = DisclosureCard.not_applicable("synthetic: nothing ran")
    assert all(v == {"not_applicable": "synthetic: nothing ran"}
               for v in na.to_json().values())


def test_a_pre_strict_card_reads_as_legacy_and_is_never_publishable():
    old = json.loads(LEGACY.read_text())["disclosure"]
    assert d.problems(old)  # free text: not strict
    with pytest.raises(DisclosureError, match="context_lengths"):
        DisclosureCard.from_dict(old)
    card = d.read_card(old)
    assert isinstance(card, d.LegacyCard) and card.legacy and card.to_json() == old
    named = " ".join(card.problems)
    for item in ("calibration_data (must be an object, got a string)",
                 "context_lengths (must be a non-empty list", "kl_direction (must be one of",
                 "aggregation (must be an object"):
        assert item in named
    assert d.publish_problems(old, kl=False) == list(card.problems)
    lost = {k: v for k, v in old.items() if k != "kl_direction"}
    with pytest.raises(DisclosureError, match=r"kl_direction \(missing\)"):
        d.read_card(lost)
    assert isinstance(d.read_card(STRICT), DisclosureCard)


def test_publish_problems_for_a_kl_figure():
    assert d.publish_problems(STRICT, D3) == []
    assert d.publish_problems(STRICT, D1) == [
        f"runtime_environment (manifest_digest {D3} is not the published run's manifest {D1})"]
    runs_only = with_item("runtime_environment", {"run_ids": ["r-1"]})
    assert d.publish_problems(runs_only, D3) == [
        f"runtime_environment (needs manifest_digest: the published run's manifest {D3})"]
    assert d.publish_problems(runs_only) == []
    na = with_item("kl_direction", {"not_applicable": "raw bytes"})
    assert d.publish_problems(na, D3) == [
        "kl_direction (a KL figure needs it: not_applicable is not allowed)"]
    assert d.publish_problems(na, kl=False) == []
