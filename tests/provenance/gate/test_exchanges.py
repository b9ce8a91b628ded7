"""Two client runs' exchanges side by side (gate/exchanges.py); and the one rule by which
every pattern covers a client's `server.K` as it covers K (gate/patterns.py)."""

from __future__ import annotations

from provenance.gate import gate
from provenance.gate.exchanges import compare_exchanges
from provenance.gate.patterns import covers
from provenance.model import Manifest


def _ex(req: str, tokens: list[str], top: list[str] | None = None, seq: int = 1) -> dict:
    choice = {"index": 0, "tokens": tokens, "text_sha256": "".join(tokens),
              "logprobs": [-0.1] * len(tokens)}
    if top is not None:
        choice["top_logprobs"] = [{t: -0.1, "zz": -5.0} for t in top]
    return {"seq": seq, "path": "/v1/completions", "status": 200,
            "request": {"sha256": req}, "response": {"sha256": req + "".join(tokens),
                                                     "choices": [choice]}}


def test_exchanges_match_by_request_digest_in_order_and_name_the_first_difference():
    a = [_ex("r1", ["a", "b", "c"], ["a", "b", "c"]), _ex("r1", ["x"], seq=2),
         _ex("r2", ["q"], seq=3), _ex("only-a", ["z"], seq=4)]
    b = [_ex("r2", ["q"], seq=1), _ex("r1", ["a", "b", "d"], ["a", "b", "d"], seq=2),
         _ex("r1", ["x"], seq=3), _ex("only-b", ["z"], seq=4)]
    doc = compare_exchanges(a, b).to_json()
    assert (doc["matched"], doc["identical"], doc["differing"]) == (3, 2, 1)
    assert (doc["unmatched_a"], doc["unmatched_b"]) == (1, 1)
    [d] = doc["differences"]
    assert d["first_difference"] == {"choice": 0, "position": 2, "a": "c", "b": "d"}
    assert (d["a_seq"], d["b_seq"]) == (1, 2)
    assert doc["top1"] == {"positions": 3, "agree": 2, "ratio": 0.666667}
    assert doc["logprobs"] == {"compared": 3, "identical": 3}


def test_a_longer_answer_differs_where_the_shorter_ends():
    doc = compare_exchanges([_ex("r", ["a"])], [_ex("r", ["a", "b"])]).to_json()
    assert doc["differences"][0]["first_difference"]["position"] == 1


def test_every_pattern_covers_a_clients_server_key_as_it_covers_the_key():
    assert covers("code.args.dtype", "server.code.args.dtype")
    assert covers("runtime.*.dtype", "server.runtime.vllm.dtype")
    assert covers("server.code", "server.code.args.dtype")
    assert not covers("code.args.dtype", "server.code.args.model")
    a = Manifest({"server": {"code": {"args": {"dtype": "float32"}},
                             "runtime": {"vllm": {"dtype": "torch.float32"}}}})
    b = Manifest({"server": {"code": {"args": {"dtype": "bfloat16"}},
                             "runtime": {"vllm": {"dtype": "torch.bfloat16"}}}})
    refused = gate(a, b, [])
    assert sorted(c.key for c in refused.refused) == ["server.code.args.dtype",
                                                      "server.runtime.vllm.dtype"]
    assert gate(a, b, ["dtype"]).ok


def test_a_servers_max_num_seqs_is_covered_by_the_scheduler_preset():
    def client_of(seqs: int) -> Manifest:
        return Manifest({"server": {"code": {"args": {"max_num_seqs": str(seqs)}},
                                    "runtime": {"vllm": {"max_num_seqs": seqs}}}})

    a, b = client_of(256), client_of(4)
    assert sorted(c.key for c in gate(a, b, []).refused) == [
        "server.code.args.max_num_seqs", "server.runtime.vllm.max_num_seqs"]
    assert gate(a, b, ["scheduler"]).ok


def _prompt(ranked: list[str], lp: float = -0.2) -> list:
    """vLLM's prompt_logprobs: None at position 0, then {token id: {logprob, rank}} holding
    the prompt's token and the rank-1 prediction."""
    return [None] + [{"7": {"logprob": -3.0, "rank": 4}, t: {"logprob": lp, "rank": 1}}
                     for t in ranked]


def test_prompt_logprobs_give_the_rank_1_agreement_over_prompt_positions():
    a, b = _ex("r", ["x"]), _ex("r", ["x"])
    a["response"]["prompt_logprobs"] = _prompt(["11", "12", "13", "14"])
    b["response"]["prompt_logprobs"] = _prompt(["11", "99", "13", "14"], lp=-0.3)
    doc = compare_exchanges([a], [b]).to_json()
    assert doc["prompt_top1"] == {"positions": 4, "agree": 3, "ratio": 0.75}
    # the generated token is the same; the prompt's logprobs are not, and that is said
    assert doc["identical"] == 1 and doc["logprobs"] == {"compared": 1, "identical": 0}
