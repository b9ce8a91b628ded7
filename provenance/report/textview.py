"""Decoded text with the disagreement clusters highlighted (templates/text.html).

Row j of a divergence is the distribution over token j+1, so the token a row predicts is
the one highlighted. Only positions inside clusters get a span (the page stays small for
100k tokens); each carries data-p, and the page's tooltip reads that position's reference
margin, KL and both top-1 tokens from the embedded data.
"""

from __future__ import annotations

import shlex
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

MAX_CLUSTERS = 400  # clusters highlighted (and positions described for the tooltip)
FULL_TEXT_TOKENS = 200_000  # above this only windows around clusters are shown
WINDOW = 12  # tokens of context either side of a cluster when the text is windowed


def model_from_records(records: dict[str, dict]) -> Path | None:
    """The model directory a worker run was given (its recorded argv)."""
    for rec in records.values():
        cmd = rec.get("command") or []
        if isinstance(cmd, str):
            cmd = shlex.split(cmd)
        for i, arg in enumerate(cmd[:-1]):
            if arg == "--model" and (Path(cmd[i + 1]) / "tokenizer.json").is_file():
                return Path(cmd[i + 1])
    return None


def token_pieces(model: Path | None, ids: np.ndarray) -> list[str] | None:
    """Each token's text via the model's tokenizer, or None when there is none to use."""
    if model is None or not (Path(model) / "tokenizer.json").is_file():
        return None
    try:
        from tokenizers import Tokenizer
    except ImportError:
        return None
    tok = Tokenizer.from_file(str(Path(model) / "tokenizer.json"))
    return tok.decode_batch([[int(i)] for i in ids], skip_special_tokens=False)


def cluster_positions(clusters: list[dict]) -> list[tuple[int, int]]:
    return [(int(c["start"]), int(c["end"])) for c in clusters[:MAX_CLUSTERS]]


def tooltips(arrays: dict[str, np.ndarray], spans: list[tuple[int, int]],
             pieces: list[str] | None) -> dict[str, list[Any]]:
    """position -> [agree, margin, KL(ref||cand), ref top-1, cand top-1, actual next]."""
    def tok(i: int) -> str:
        if pieces is not None and 0 <= i < len(pieces):
            return pieces[i]
        return f"#{i}"

    out: dict[str, list[Any]] = {}
    ids = arrays["ids"]
    for s, e in spans:
        for j in range(s, e + 1):
            out[str(j)] = [bool(arrays["agree"][j]), float(f"{arrays['margin'][j]:.4g}"),
                           float(f"{arrays['kl_ref_cand'][j]:.4g}"),
                           tok(int(arrays["ref_top1"][j])), tok(int(arrays["cand_top1"][j])),
                           tok(int(ids[j + 1])) if j + 1 < len(ids) else ""]
    return out


class Span(NamedTuple):
    """A token inside a cluster: its text, the position that predicts it, agreement there."""

    piece: str
    p: int
    agree: bool


def _spans(pieces: list[str], agree: np.ndarray, s: int, b: int) -> list[Span]:
    return [Span(pieces[j + 1], j, bool(agree[j])) for j in range(s, b - 1)]


def highlighted_html(pieces: list[str], agree: np.ndarray,
                     spans: list[tuple[int, int]]) -> str:
    """The whole text, cluster tokens wrapped; plain stretches in one piece each."""
    from provenance.report.render import html

    n = len(pieces)
    if n > FULL_TEXT_TOKENS:
        return windows_html(pieces, agree, spans)
    parts: list[str | Span] = []
    cursor = 0
    for s, e in spans:
        a, b = s + 1, min(e + 2, n)
        if a > cursor:
            parts.append("".join(pieces[cursor:a]))
        parts.extend(_spans(pieces, agree, s, b))
        cursor = max(cursor, b)
    parts.append("".join(pieces[cursor:]))
    return html("text.html", parts=parts, windows=None)


def windows_html(pieces: list[str], agree: np.ndarray, spans: list[tuple[int, int]]) -> str:
    """A few tokens either side of each cluster, one block per cluster."""
    from provenance.report.render import html

    n = len(pieces)
    windows = []
    for s, e in spans:
        a, b = s + 1, min(e + 2, n)
        lo, hi = max(a - WINDOW, 0), min(b + WINDOW, n)
        windows.append({"start": s, "end": e, "parts": [
            "".join(pieces[lo:a]), *_spans(pieces, agree, s, b), "".join(pieces[b:hi])]})
    return html("text.html", windows=windows)
