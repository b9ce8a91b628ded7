"""Text segments (runners/demo/segments.py writes them, runners/analysis/segments.py reads
them): every position maps to the segment holding the token it predicts, and the per-type
summary adds up."""

from __future__ import annotations

import json

import numpy as np

from runners.analysis.segments import annotate_clusters, by_type, load_segments, position_segments
from runners.demo.segments import SEGMENT_TYPES, generate_segmented, write_segmented


def test_generated_text_covers_every_type_and_is_deterministic():
    text, segs = generate_segmented(5000, seed=3)
    assert (text, segs) == generate_segmented(5000, seed=3)
    assert {s["type"] for s in segs} == set(SEGMENT_TYPES)
    for s in segs:
        piece = text[s["start"]:s["end"]]
        if s["type"] == "tool-json":
            json.loads(piece)  # real JSON
        elif s["type"] == "code":
            assert piece.startswith("```python\ndef ") and piece.endswith("```")
        assert text[s["end"]:s["end"] + 2] == "\n\n"


def test_positions_map_to_the_segment_of_the_predicted_token(tmp_path):
    text, segs = generate_segmented(3000, seed=1)
    write_segmented(tmp_path / "t.txt", text, segs)
    loaded = load_segments(tmp_path / "t.txt")
    assert loaded == segs
    # one "token" per 3 characters: row j predicts token j + 1
    offsets = [(i, min(i + 3, len(text))) for i in range(0, len(text), 3)]
    seg = position_segments(offsets, loaded)
    assert len(seg) == len(offsets) - 1
    for j, i in enumerate(seg):
        c = offsets[j + 1][0]
        if i >= 0:
            assert loaded[i]["start"] <= c < loaded[i]["end"]
        else:  # between segments: the blank lines
            assert not any(s["start"] <= c < s["end"] for s in loaded)
    agree = np.ones(len(seg), bool)
    agree[[5, 6, 200]] = False
    kl = np.linspace(0, 1, len(seg))
    clusters = [{"start": 5, "end": 6}, {"start": 200, "end": 200}]
    summary = by_type(loaded, seg, agree, kl, clusters)
    assert sum(v["positions"] for v in summary.values()) == len(seg)
    assert sum(v["disagreements"] for v in summary.values()) == 3
    assert sum(v["clusters"] for v in summary.values()) == 2
    annotate_clusters(clusters, loaded, seg)
    for c in clusters:
        i = seg[c["start"]]
        assert c["segment"] == i
        assert c["segment_type"] == (loaded[i]["type"] if i >= 0 else "(between segments)")


def test_a_missing_or_malformed_sidecar_gives_no_segments(tmp_path):
    (tmp_path / "t.txt").write_text("x")
    assert load_segments(tmp_path / "t.txt") is None
    (tmp_path / "t.txt.segments.json").write_text('{"format": "other"}')
    assert load_segments(tmp_path / "t.txt") is None
    (tmp_path / "t.txt.segments.json").write_text(
        '{"format": "prov-segments/1", "segments": [{"start": "0"}]}')
    assert load_segments(tmp_path / "t.txt") is None


def test_a_divergence_summary_is_split_by_segment_type(demo_model, tmp_path):
    from runners.diverge import add_segments, summarise
    from runners.prepare import prepare

    text, segs = generate_segmented(2500, seed=5)
    write_segmented(tmp_path / "eval.txt", text, segs)
    prep = prepare(demo_model, tmp_path / "eval.txt", 10_000)
    assert prep.segments == segs
    n = len(prep.ids) - 1
    rng = np.random.default_rng(0)
    top = rng.integers(0, 50, n)
    cand = top.copy()
    code = [j for j in range(n) if segs[max(position_segments(prep.offsets, segs)[j], 0)]
            ["type"] == "code"][:5]
    cand[code] += 1  # disagreements only inside code
    per = {"ref_top1": top, "cand_top1": cand, "margin": np.full(n, 0.5),
           "kl_ref_cand": np.full(n, 1e-3), "kl_cand_ref": np.full(n, 1e-3),
           "delta_p": np.zeros(n)}
    floor = {"storage_dtype": "synthetic", "ref": {"max": 0.0}, "cand": {"max": 0.0}}
    summary, arrays = summarise(per, prep.ids, floor, prep.decode)
    add_segments(summary, arrays, prep)
    bt = summary["segments"]["by_type"]
    assert bt["code"]["disagreements"] == 5 and bt["prose"]["disagreements"] == 0
    assert all(c["segment_type"] == "code" for c in summary["clusters"])
    assert arrays["segment"].shape == (n,) and summary["segments"]["count"] == len(segs)
