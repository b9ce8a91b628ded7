"""The invariance probes through a running OpenAI-compatible server (vLLM's `vllm serve`).

A call of N prompts is N concurrent clients: one thread and one HTTP connection each,
released together by a barrier, each sending `POST /v1/completions` with the prompt as
token ids, greedy, `logprobs=1` and vLLM's `prompt_logprobs=1`, and reading back the same
observations as the offline sessions (runners/engines/batched.py): the logprob of each
prompt token, the top-1 token and its logprob per prompt position, and the continuation's
tokens and logprobs. The values travel as JSON numbers printed from float32, so their bits
survive the trip.

The negative control cannot hook a server it does not own: the server must be started with
prov's control logits processor (runners/served_control.py) and the control calls ask for it
per request (`vllm_xargs`). A server without it ignores the request field, the control does
not differ, and the verdict is "unproven", as it must be.

Standard library and numpy only: the worker runs in prov's own interpreter.
"""

from __future__ import annotations

import http.client
import json
import threading
import urllib.parse
from typing import Any

import numpy as np

from runners.engines.base import EngineConfig, EngineError

TIMEOUT_S = 600.0  # one completion on a loaded CPU server; a dead server fails sooner
CONTROL_FIELD = "prov_control"  # the per-request switch of the control logits processor
CONTROL_PROCESSOR = "runners.served_control:BatchDependentControl"

Obs = dict[str, np.ndarray]


class ServerSession:
    """One server, reached at `server_url`; the model is the server's first, or
    `served_model`. Which cache probes apply is the plan's to decide, from what the spec
    declares (runners/invariance.py): the server's own record says what it ran."""

    prefix_cache = None
    chunked_prefill = None

    def __init__(self, config: EngineConfig) -> None:
        url = config.get("server_url") or ""
        parts = urllib.parse.urlsplit(url)
        if parts.scheme != "http" or not parts.hostname:
            raise EngineError(f"server_url={url!r}: give http://HOST:PORT of the server")
        self.host, self.port = parts.hostname, parts.port or 80
        self.base = parts.path.rstrip("/")
        self.model = config.get("served_model") or self._first_model()
        self.plant: str | None = None

    def _request(self, method: str, path: str, body: dict[str, Any] | None = None
                 ) -> tuple[int, bytes]:
        conn = http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)
        try:
            data = json.dumps(body).encode() if body is not None else None
            conn.request(method, self.base + path, body=data,
                         headers={"Content-Type": "application/json"} if data else {})
            resp = conn.getresponse()
            return resp.status, resp.read()
        except OSError as exc:
            raise EngineError(f"server {self.host}:{self.port}: {exc}") from exc
        finally:
            conn.close()

    def _first_model(self) -> str:
        status, raw = self._request("GET", "/v1/models")
        try:
            return str(json.loads(raw)["data"][0]["id"])
        except (ValueError, KeyError, IndexError, TypeError):
            raise EngineError(f"server {self.host}:{self.port}: GET /v1/models answered "
                              f"{status} with no model") from None

    def set_plant(self, kind: str | None) -> None:
        self.plant = kind if kind not in (None, "none") else None

    def reset_cache(self) -> None:
        status, _ = self._request("POST", "/reset_prefix_cache")
        if status != 200:
            raise EngineError(f"the server answered {status} to POST /reset_prefix_cache (vLLM "
                              "serves it with VLLM_SERVER_DEV_MODE=1); without it the "
                              "prefix-cache probe cannot start cold: leave prefix_caching out")

    def body(self, prompt: list[int], max_new: int, prompt_logprobs: bool) -> dict[str, Any]:
        body: dict[str, Any] = {"model": self.model, "prompt": list(prompt),
                                "max_tokens": max_new, "temperature": 0.0, "logprobs": 1,
                                "ignore_eos": True, "return_tokens_as_token_ids": True}
        if prompt_logprobs:
            body["prompt_logprobs"] = 1
        if self.plant:
            body["vllm_xargs"] = {CONTROL_FIELD: self.plant}
        return body

    def complete(self, prompt: list[int], max_new: int, prompt_logprobs: bool) -> Obs:
        status, raw = self._request("POST", "/v1/completions",
                                    self.body(prompt, max_new, prompt_logprobs))
        if status != 200:
            raise EngineError(f"server {self.host}:{self.port}: /v1/completions answered "
                              f"{status}: {raw[:300].decode('utf-8', 'replace')}")
        return observations(json.loads(raw), prompt, prompt_logprobs)

    def run(self, prompts: list[list[int]], max_new: int, prompt_logprobs: bool) -> list[Obs]:
        """Every prompt by its own client, all released at once."""
        out: list[Obs | None] = [None] * len(prompts)
        errors: list[BaseException] = []
        gate = threading.Barrier(len(prompts))

        def client(i: int) -> None:
            try:
                gate.wait()
                out[i] = self.complete(prompts[i], max_new, prompt_logprobs)
            except BaseException as exc:  # re-raised below, in the caller's thread
                errors.append(exc)

        threads = [threading.Thread(target=client, args=(i,)) for i in range(len(prompts))]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        if errors:
            raise errors[0]
        return [o for o in out if o is not None]


def _token_id(text: str) -> int:
    """`token_id:123`, as vLLM writes tokens with return_tokens_as_token_ids."""
    try:
        return int(text.rpartition(":")[2])
    except ValueError:
        raise EngineError(f"the server wrote a token as {text!r}, not token_id:N (is it "
                          "vLLM, with return_tokens_as_token_ids?)") from None


def observations(doc: dict[str, Any], prompt: list[int], prompt_logprobs: bool) -> Obs:
    """One completion's answer as the probes' observations (see the module doc)."""
    try:
        choice = doc["choices"][0]
        lps = choice["logprobs"]
        out: Obs = {"gen": np.asarray([_token_id(t) for t in lps["tokens"]], np.int64),
                    "genlp": np.asarray(lps["token_logprobs"], np.float32)}
        rows = (choice.get("prompt_logprobs") or [])[1:] if prompt_logprobs else []
    except (KeyError, IndexError, TypeError):
        raise EngineError("the server's completion has no logprobs (an OpenAI-compatible "
                          "server that honours logprobs=1 is needed)") from None
    if prompt_logprobs and len(rows) != len(prompt) - 1:
        raise EngineError(f"the server returned {len(rows)} prompt logprobs for a prompt of "
                          f"{len(prompt)} tokens (vLLM's prompt_logprobs is needed)")
    lp, top1, top1lp = [], [], []
    for row, tok in zip(rows, prompt[1:] if prompt_logprobs else [], strict=True):
        entries = {int(k): v for k, v in row.items()}
        lp.append(entries[tok]["logprob"])
        best = min(entries.items(), key=lambda kv: kv[1]["rank"])
        top1.append(best[0])
        top1lp.append(best[1]["logprob"])
    out.update({"lp": np.asarray(lp, np.float32), "top1": np.asarray(top1, np.int64),
                "top1lp": np.asarray(top1lp, np.float32)})
    return out
