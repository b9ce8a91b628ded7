"""Two client runs' exchanges with their servers, side by side (information, never a verdict).

A client run bound to a server run holds its exchanges in `server/exchanges.json`, one of
its stored run files (exec/serving/bind.py). Exchanges are matched by request: the k-th
request with a given body digest in A (in the order the requests started) with the k-th
such request in B. A matched pair is *identical* when every choice has the same text and
the same tokens (token ids where both have them); the response bytes carry an id and a
time of their own, so their digest is not the test. For a pair that differs: the first
differing token (choice, position, both tokens). Where both sides returned top logprobs:
how many positions agree on the top-1 token; where both returned logprobs: whether they
are bit for bit the same (a repeat on one server is; another dtype's is not).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from provenance.model.errors import ProvError

EXCHANGES_FILE = "server/exchanges.json"  # exec/serving/bind.py's
SHOWN_DIFFERENCES = 20


@dataclass
class Pair:
    a: dict[str, Any]
    b: dict[str, Any]
    identical: bool
    first_difference: dict[str, Any] | None = None
    top1_positions: int = 0
    top1_agree: int = 0
    prompt_top1_positions: int = 0
    prompt_top1_agree: int = 0
    logprobs_equal: bool | None = None  # None: no logprobs came back on both sides


@dataclass
class ExchangeComparison:
    a_count: int
    b_count: int
    pairs: list[Pair] = field(default_factory=list)
    unmatched_a: int = 0
    unmatched_b: int = 0

    @property
    def identical(self) -> int:
        return sum(p.identical for p in self.pairs)

    @property
    def logprobs_identical(self) -> int:
        """Pairs whose logprobs came back on both sides, bit for bit the same."""
        return sum(p.logprobs_equal is True for p in self.pairs)

    @property
    def logprobs_compared(self) -> int:
        return sum(p.logprobs_equal is not None for p in self.pairs)

    @property
    def top1(self) -> tuple[int, int]:
        return (sum(p.top1_agree for p in self.pairs), sum(p.top1_positions for p in self.pairs))

    @property
    def prompt_top1(self) -> tuple[int, int]:
        return (sum(p.prompt_top1_agree for p in self.pairs),
                sum(p.prompt_top1_positions for p in self.pairs))

    def to_json(self) -> dict[str, Any]:
        agree, positions = self.top1
        p_agree, p_positions = self.prompt_top1
        differing = [p for p in self.pairs if not p.identical]
        return {
            "a": self.a_count, "b": self.b_count, "matched": len(self.pairs),
            "identical": self.identical, "differing": len(differing),
            "unmatched_a": self.unmatched_a, "unmatched_b": self.unmatched_b,
            "logprobs": {"compared": self.logprobs_compared,
                         "identical": self.logprobs_identical},
            "top1": {"positions": positions, "agree": agree,
                     "ratio": round(agree / positions, 6) if positions else None},
            "prompt_top1": {"positions": p_positions, "agree": p_agree,
                            "ratio": round(p_agree / p_positions, 6) if p_positions else None},
            "differences": [
                {"path": p.a.get("path"), "request_sha256": p.a["request"].get("sha256"),
                 "a_seq": p.a.get("seq"), "b_seq": p.b.get("seq"),
                 "first_difference": p.first_difference,
                 "top1": {"positions": p.top1_positions, "agree": p.top1_agree},
                 "prompt_top1": {"positions": p.prompt_top1_positions,
                                 "agree": p.prompt_top1_agree}}
                for p in differing[:SHOWN_DIFFERENCES]],
        }


def exchanges_of(store, record) -> list[dict[str, Any]] | None:
    """A run's exchanges (None when it is bound to no server run)."""
    entry = (record.run_dir or {}).get(EXCHANGES_FILE)
    if not isinstance(entry, dict) or not entry.get("digest"):
        return None
    try:
        doc = store.get_json(entry["digest"])
    except (ProvError, OSError, ValueError):
        return None
    found = doc.get("exchanges") if isinstance(doc, dict) else None
    return [e for e in found if _usable(e)] if isinstance(found, list) else None


def _usable(e: Any) -> bool:
    return isinstance(e, dict) and isinstance(e.get("request"), dict) \
        and isinstance(e.get("response"), dict)


def _choices(e: dict[str, Any]) -> list[dict[str, Any]]:
    found = e["response"].get("choices")
    return [c for c in found if isinstance(c, dict)] if isinstance(found, list) else []


def _sequence(c: dict[str, Any], other: dict[str, Any]) -> list[tuple[Any, ...]]:
    """Per position (token id, token), of what both sides returned."""
    parts = [k for k in ("token_ids", "tokens") if c.get(k) and other.get(k)]
    if not parts:
        return []
    n = max(len(c[k]) for k in parts)
    return [tuple(c[k][i] if i < len(c[k]) else None for k in parts) for i in range(n)]


def _shown(position: tuple[Any, ...]) -> Any:
    """A position as shown: the token (its id beside it when both were returned)."""
    return position[-1] if len(position) == 1 else f"{position[1]} (id {position[0]})"


def _top1(entry: Any) -> Any:
    if not isinstance(entry, dict) or not entry:
        return None
    return max(entry.items(), key=lambda kv: (kv[1] if isinstance(kv[1], (int, float))
                                               else float("-inf")))[0]


def _compare_choice(ca: dict[str, Any], cb: dict[str, Any], pair: Pair) -> None:
    sa, sb = _sequence(ca, cb), _sequence(cb, ca)
    if pair.first_difference is None:
        at = next((i for i, (x, y) in enumerate(zip(sa, sb, strict=False)) if x != y), None)
        if at is None and len(sa) != len(sb):
            at = min(len(sa), len(sb))
        if at is None and ca.get("text_sha256") != cb.get("text_sha256"):
            at = -1  # same tokens seen (or none returned), other text
        if at is not None:
            pair.first_difference = {
                "choice": ca.get("index", 0), "position": at,
                "a": _shown(sa[at]) if 0 <= at < len(sa) else None,
                "b": _shown(sb[at]) if 0 <= at < len(sb) else None}
    la, lb = ca.get("logprobs"), cb.get("logprobs")
    if la and lb:
        pair.logprobs_equal = (pair.logprobs_equal is not False) and la == lb
    ta, tb = ca.get("top_logprobs") or [], cb.get("top_logprobs") or []
    for x, y in zip(ta, tb, strict=False):
        xa, yb = _top1(x), _top1(y)
        if xa is not None and yb is not None:
            pair.top1_positions += 1
            pair.top1_agree += xa == yb


def _rank1(entry: Any) -> Any:
    """The rank-1 token id of one prompt position ({id: {logprob, rank, ...}}), else None."""
    if not isinstance(entry, dict):
        return None
    ranked = [(v.get("rank"), k) for k, v in entry.items() if isinstance(v, dict)]
    return next((k for rank, k in ranked if rank == 1), None)


def _compare_prompts(a: dict[str, Any], b: dict[str, Any], pair: Pair) -> None:
    pa, pb = a["response"].get("prompt_logprobs"), b["response"].get("prompt_logprobs")
    if not (isinstance(pa, list) and isinstance(pb, list)):
        return
    if pair.logprobs_equal is not False:
        pair.logprobs_equal = pa == pb
    for x, y in zip(pa, pb, strict=False):
        ra, rb = _rank1(x), _rank1(y)
        if ra is not None and rb is not None:
            pair.prompt_top1_positions += 1
            pair.prompt_top1_agree += ra == rb


def compare_pair(a: dict[str, Any], b: dict[str, Any]) -> Pair:
    pair = Pair(a, b, identical=False)
    ca, cb = _choices(a), _choices(b)
    for x, y in zip(ca, cb, strict=False):
        _compare_choice(x, y, pair)
    _compare_prompts(a, b, pair)
    if pair.first_difference is None and len(ca) != len(cb):
        pair.first_difference = {"choices": [len(ca), len(cb)]}
    if pair.first_difference is None and a.get("status") != b.get("status"):
        pair.first_difference = {"status": [a.get("status"), b.get("status")]}
    if not ca and not cb and a["response"].get("sha256") != b["response"].get("sha256"):
        pair.first_difference = {"response_sha256": [a["response"].get("sha256"),
                                                     b["response"].get("sha256")]}
    pair.identical = pair.first_difference is None
    return pair


def compare_exchanges(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> ExchangeComparison:
    """Match by request digest and order; compare each pair (see the module doc)."""
    queues: dict[str, list[dict[str, Any]]] = {}
    for e in b:
        queues.setdefault(str(e["request"].get("sha256")), []).append(e)
    out = ExchangeComparison(len(a), len(b))
    for e in a:
        queue = queues.get(str(e["request"].get("sha256")))
        if not queue:
            out.unmatched_a += 1
            continue
        out.pairs.append(compare_pair(e, queue.pop(0)))
    out.unmatched_b = sum(len(q) for q in queues.values())
    return out
