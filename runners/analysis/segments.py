"""Text segments (tool-call JSON, code, prose...) and which of them each disagreement cluster
falls in, summarised per segment type.

Segments come from TEXT.segments.json beside the evaluation text (runners/demo/segments.py
writes one): {"format": "prov-segments/1", "segments": [{"start", "end", "type"}...]} with
character spans. Row j of a divergence predicts token j+1, so a position's segment is the
one holding token j+1's first character.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np

SEGMENTS_FORMAT = "prov-segments/1"


def load_segments(text_path: Path) -> list[dict] | None:
    """The segments beside a text, or None when there is no (valid) sidecar."""
    side = Path(text_path).with_name(Path(text_path).name + ".segments.json")
    try:
        doc = json.loads(side.read_text())
    except (OSError, ValueError):
        return None
    if not isinstance(doc, dict) or doc.get("format") != SEGMENTS_FORMAT:
        return None
    segs = doc.get("segments")
    if not isinstance(segs, list) or not all(
            isinstance(s, dict) and isinstance(s.get("start"), int)
            and isinstance(s.get("end"), int) and isinstance(s.get("type"), str)
            for s in segs):
        return None
    return sorted(segs, key=lambda s: s["start"])


def position_segments(offsets: list[tuple[int, int]], segments: list[dict]) -> np.ndarray:
    """Segment index of each row j (the token j+1 it predicts); -1 between segments."""
    starts = np.array([s["start"] for s in segments], dtype=np.int64)
    ends = np.array([s["end"] for s in segments], dtype=np.int64)
    chars = np.array([o[0] for o in offsets[1:]], dtype=np.int64)
    idx = np.searchsorted(starts, chars, side="right") - 1
    inside = (idx >= 0) & (chars < ends[np.clip(idx, 0, None)])
    return np.where(inside, idx, -1)


def by_type(segments: list[dict], seg_of_row: np.ndarray, agree: np.ndarray,
            kl: np.ndarray, clusters: list[dict]) -> dict[str, Any]:
    """Per segment type: positions, disagreements, mean KL, clusters that start there."""
    types = np.array([s["type"] for s in segments] + ["(between segments)"])
    kinds = types[seg_of_row]  # -1 picks the last entry: between segments
    out: dict[str, Any] = {}
    for t in dict.fromkeys(types.tolist()):
        m = kinds == t
        if not m.any():
            continue
        out[t] = {"positions": int(m.sum()), "disagreements": int((~agree[m]).sum()),
                  "disagreement_rate": float((~agree[m]).mean()),
                  "mean_kl_ref_cand": float(kl[m].mean()),
                  "clusters": sum(1 for c in clusters if kinds[c["start"]] == t)}
    return out


def annotate_clusters(clusters: list[dict], segments: list[dict],
                      seg_of_row: np.ndarray) -> None:
    """Add each cluster's segment (index and type of its first position) in place."""
    for c in clusters:
        i = int(seg_of_row[c["start"]])
        c["segment"] = i
        c["segment_type"] = segments[i]["type"] if i >= 0 else "(between segments)"
