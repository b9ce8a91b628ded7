"""Disagreement clusters: runs of disagreeing positions merged across small gaps, mapped back
to the tokens and text they fall in, so a person sees which content they sit in."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import asdict, dataclass

import numpy as np


@dataclass(frozen=True)
class Cluster:
    start: int  # first disagreeing position (row index)
    end: int  # last disagreeing position, inclusive
    disagreements: int
    mean_kl: float
    text: str = ""  # decoded text of the predicted tokens start+1 .. end+1
    context: str = ""  # the same with `context` tokens either side

    def to_json(self) -> dict:
        return asdict(self)


def find_clusters(agree: np.ndarray, kl: np.ndarray, gap: int = 8,
                  decode: Callable[[int, int], str] | None = None,
                  context: int = 8) -> list[Cluster]:
    """Merge disagreeing positions whose distance is <= gap; decode(a, b) gives the text of
    token ids a..b-1 (predicted tokens of rows start..end are ids start+1..end+1)."""
    bad = np.flatnonzero(~np.asarray(agree))
    if not len(bad):
        return []
    splits = np.flatnonzero(np.diff(bad) > gap) + 1
    out = []
    for run in np.split(bad, splits):
        s, e = int(run[0]), int(run[-1])
        text = decode(s + 1, e + 2) if decode else ""
        ctx = decode(max(s + 1 - context, 0), e + 2 + context) if decode else ""
        out.append(Cluster(s, e, int(len(run)), float(np.mean(kl[s : e + 1])), text, ctx))
    return out
