"""One HTTP exchange as the server-side probe records it: pure functions, no I/O.

A line of `exchanges/<pid>.jsonl` (FORMAT) holds the request's method, path (never its
query string nor any header but the content type), status, times, the sha256 and size of
both bodies, the request's sampling fields, and what the response says about its tokens:
per choice the token ids, tokens, logprobs and top logprobs where the server returned them
(OpenAI completions `logprobs.tokens/token_logprobs/top_logprobs`, chat
`logprobs.content[]`, vLLM's `token_ids`, `prompt_token_ids`, `prompt_logprobs`), for a
server-sent-event stream the same, gathered over its events.

`json` is the server's own (Starlette imports it): this module is imported only inside a
Starlette application's process.
"""

import json

FORMAT = "prov-exchange/1"
KEEP_LIMIT = 8 * 1024 * 1024  # bytes of a body kept for parsing; every byte is digested
REQUEST_FIELDS = ("model", "stream", "max_tokens", "max_completion_tokens", "temperature",
                  "top_p", "top_k", "seed", "n", "logprobs", "top_logprobs", "echo",
                  "prompt_logprobs", "return_token_ids")


def _scalar(v):
    return v if v is None or isinstance(v, (bool, int, float, str)) else None


def request_fields(body, content_type):
    """The request's sampling fields, from a JSON body (others: {})."""
    if not body or "json" not in (content_type or "json"):
        return {}
    try:
        doc = json.loads(body)
    except ValueError:
        return {}
    if not isinstance(doc, dict):
        return {}
    out = {k: _scalar(doc[k]) for k in REQUEST_FIELDS if k in doc}
    return {k: v for k, v in out.items() if not (isinstance(v, str) and len(v) > 200)}


def sse_payloads(raw):
    """The `data:` payloads of a server-sent-event stream, one per event, in order."""
    text = raw.decode("utf-8", "replace").replace("\r\n", "\n")
    out = []
    for block in text.split("\n\n"):
        data = [line[5:].lstrip(" ") if line.startswith("data:") else None
                for line in block.split("\n")]
        data = [d for d in data if d is not None]
        if data:
            out.append("\n".join(data))
    return out


def _new_choice():
    return {"tokens": [], "logprobs": [], "top_logprobs": [], "token_ids": [],
            "text_parts": [], "finish_reason": None}


def _top(entry):
    """{token: logprob} of one position's top logprobs, whatever shape the API gave."""
    if isinstance(entry, dict):
        return {str(k): v for k, v in entry.items() if isinstance(v, (int, float))}
    if isinstance(entry, list):
        return {str(e.get("token")): e.get("logprob") for e in entry
                if isinstance(e, dict) and isinstance(e.get("logprob"), (int, float))}
    return {}


def _add_logprobs(acc, lp):
    if not isinstance(lp, dict):
        return
    content = lp.get("content")
    if isinstance(content, list):  # chat: one entry per token
        for e in content:
            if isinstance(e, dict):
                acc["tokens"].append(e.get("token"))
                acc["logprobs"].append(e.get("logprob"))
                acc["top_logprobs"].append(_top(e.get("top_logprobs")))
        return
    tokens = lp.get("tokens")  # completions: parallel lists
    if isinstance(tokens, list):
        acc["tokens"].extend(tokens)
        acc["logprobs"].extend(lp.get("token_logprobs") or [None] * len(tokens))
        tops = lp.get("top_logprobs") or [None] * len(tokens)
        acc["top_logprobs"].extend(_top(t) for t in tops)


def _add_choice(acc, c):
    _add_logprobs(acc, c.get("logprobs"))
    ids = c.get("token_ids")
    if isinstance(ids, list):
        acc["token_ids"].extend(i for i in ids if isinstance(i, int))
    text = c.get("text")
    if text is None:
        msg = c.get("delta") if isinstance(c.get("delta"), dict) else c.get("message")
        text = msg.get("content") if isinstance(msg, dict) else None
    if isinstance(text, str):
        acc["text_parts"].append(text)
    if c.get("finish_reason") is not None:
        acc["finish_reason"] = c.get("finish_reason")


def _add_doc(choices, extra, doc):
    if not isinstance(doc, dict):
        return
    for c in doc.get("choices") or []:
        if isinstance(c, dict):
            i = c.get("index", 0) if isinstance(c.get("index", 0), int) else 0
            acc = choices.setdefault(i, _new_choice())
            _add_choice(acc, c)
            for k in ("prompt_token_ids", "prompt_logprobs"):  # vLLM puts them per choice
                if c.get(k) is not None and k not in extra:
                    extra[k] = c[k]
    for k in ("prompt_token_ids", "prompt_logprobs", "usage", "model", "id"):
        if doc.get(k) is not None and k not in extra:
            extra[k] = doc[k]


def _finish(choices, sha256):
    out = []
    for i in sorted(choices):
        acc = choices[i]
        text = "".join(acc.pop("text_parts"))
        acc["text_sha256"] = sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
        acc["text_chars"] = len(text)
        acc = {k: v for k, v in acc.items() if v not in ([], None)}
        acc["index"] = i
        out.append(acc)
    return out


def response_facts(body, content_type, sha256):
    """Events, choices (tokens, logprobs, token ids, text digest) and usage of a response;
    `sha256` is hashlib's constructor (passed in: the caller's, nothing imported here)."""
    ctype = content_type or ""
    if not body:
        return {}
    docs, out = [], {}
    if "event-stream" in ctype:
        payloads = sse_payloads(body)
        out["events"] = len(payloads)
        for p in payloads:
            if p.strip() == "[DONE]":
                out["done"] = True
                continue
            try:
                docs.append(json.loads(p))
            except ValueError:
                out["unparsed_events"] = out.get("unparsed_events", 0) + 1
    elif "json" in ctype:
        try:
            docs.append(json.loads(body))
        except ValueError:
            return {"unparsed": True}
    else:
        return {}
    choices, extra = {}, {}
    for doc in docs:
        _add_doc(choices, extra, doc)
    if choices:
        out["choices"] = _finish(choices, sha256)
    usage = extra.get("usage")
    if isinstance(usage, dict):
        out["usage"] = {k: v for k, v in usage.items() if isinstance(v, int)}
    for k in ("prompt_token_ids", "prompt_logprobs", "model", "id"):
        if k in extra:
            out[k] = extra[k]
    return out


def line(server, client, exchange, request, response, receipt_time):
    """The exchange line: who served, who asked, what went each way, and its receipt."""
    receipt = {"request_sha256": request["sha256"], "response_sha256": response["sha256"],
               "server_run_id": server.get("run_id"),
               "server_manifest_digest": server.get("manifest_digest"),
               "time": receipt_time}
    return {"format": FORMAT, "server_run_id": server.get("run_id"),
            "server_store": server.get("store"), "server_pid": server.get("pid"),
            "client": client, **exchange, "request": request, "response": response,
            "receipt": receipt}
