"""What a server says of itself, read by the recording front before it serves.

Each endpoint a known server answers (vLLM, SGLang, llama.cpp's server, any OpenAI-compatible
one) is asked once; what answers becomes `upstream.<name>` of the front's run (identity:
another model, dtype or KV-cache setting behind the front is another server), and which
endpoints answered becomes `upstream.endpoints.<name>` (the HTTP status, or `unreachable`).
These are the server's own words, recorded as observed, never checked against its engine:
a server prov can run under `prov exec` is probed from inside instead. Secret-named fields
(SGLang's `api_key`) are hidden by the run's redaction like every probe fact.

The facts go into the in-process probe's record of this process (`upstream`), so they are in
the front's live facts while it serves (exec/live.py) and in its final record.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.request
from typing import Any
from urllib.parse import urlsplit

# name in the record: (path, why it is asked)
ENDPOINTS: dict[str, str] = {
    "version": "/version",  # vLLM
    "models": "/v1/models",  # every OpenAI-compatible server
    "config": "/inference/v1/config",  # vLLM's resolved configuration, where served
    "server_info": "/server_info?config_format=json",  # vLLM with VLLM_SERVER_DEV_MODE=1
    "get_server_info": "/get_server_info",  # SGLang
    "props": "/props",  # llama.cpp's server
}
BODY_LIMIT = 4 * 1024 * 1024
WAIT_S = 120.0  # for an upstream started together with the front


def _opener(url: str) -> urllib.request.OpenerDirector:
    host = urlsplit(url).hostname or ""
    local = host in ("localhost", "::1") or host.startswith("127.")
    # a loopback upstream is never reached through a proxy the environment names
    return urllib.request.build_opener(urllib.request.ProxyHandler({})) if local \
        else urllib.request.build_opener()


def ask(base: str, path: str, timeout: float = 5.0) -> tuple[Any, Any]:
    """(status or 'unreachable', parsed JSON or None) of GET base+path."""
    try:
        with _opener(base).open(base.rstrip("/") + path, timeout=timeout) as r:
            status, raw = r.status, r.read(BODY_LIMIT)
    except urllib.error.HTTPError as exc:
        return exc.code, None
    except (OSError, ValueError):
        return "unreachable", None
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, None


def _models(doc: Any) -> Any:
    """/v1/models by model id (its order and creation times are not the server's identity)."""
    data = doc.get("data") if isinstance(doc, dict) else None
    if not isinstance(data, list):
        return doc
    out = {}
    for m in data:
        if isinstance(m, dict) and isinstance(m.get("id"), str):
            # not the server's identity: creation times, vLLM's per-start permission ids
            out[m["id"]] = {k: v for k, v in m.items()
                            if k not in ("id", "created", "permission")}
    return out


def describe(base: str, wait_s: float = WAIT_S) -> dict[str, Any]:
    """The upstream's self-description; waits up to `wait_s` for it to answer at all."""
    deadline = time.monotonic() + wait_s
    while True:
        answers = {name: ask(base, path) for name, path in ENDPOINTS.items()}
        if any(s != "unreachable" for s, _ in answers.values()) or time.monotonic() > deadline:
            break
        time.sleep(1)
    out: dict[str, Any] = {"endpoints": {name: s for name, (s, _) in answers.items()}}
    for name, (status, doc) in answers.items():
        if status == 200 and doc is not None:
            out[name] = _models(doc) if name == "models" else doc
    return out


def note_upstream(base: str) -> None:
    """Describe the upstream into the probe's record of this process, and save it."""
    import _prov_probe  # the probe of this process (prov exec's sitecustomize)

    probe = _prov_probe._probe
    if probe is None:
        return
    probe.record.facts["upstream"] = describe(base)
    probe.save("upstream")
