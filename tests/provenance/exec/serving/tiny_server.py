"""A tiny OpenAI-shaped FastAPI server (run by the vllm venv's python under `prov exec`):
/v1/completions answers one fixed completion with logprobs, streamed when asked; its
tokens are its argument, so two servers can be made to differ. Argv: --port PORT [TOKENS]
(the port an option, as servers take it: where a server listens is context)."""

import json
import sys

import uvicorn
from fastapi import FastAPI, Request
from fastapi.responses import JSONResponse, StreamingResponse

app = FastAPI()
TOKENS = (sys.argv[3] if len(sys.argv) > 3 else "the,cat,sat").split(",")


def _logprobs(tokens):
    return {"tokens": tokens, "token_logprobs": [-0.5] * len(tokens),
            "top_logprobs": [{t: -0.5, "x": -2.0} for t in tokens], "text_offset": []}


@app.post("/v1/completions")
async def completions(request: Request):
    body = await request.json()
    if body.get("stream"):
        def events():
            for i, t in enumerate(TOKENS):
                chunk = {"id": "cmpl-1", "choices": [{"index": 0, "text": t,
                         "logprobs": _logprobs([t]), "token_ids": [i],
                         "finish_reason": "length" if i == len(TOKENS) - 1 else None}]}
                yield "data: " + json.dumps(chunk) + "\n\n"
            yield "data: [DONE]\n\n"
        return StreamingResponse(events(), media_type="text/event-stream")
    return JSONResponse({"id": "cmpl-1", "object": "text_completion", "choices": [
        {"index": 0, "text": "".join(TOKENS), "logprobs": _logprobs(TOKENS),
         "token_ids": list(range(len(TOKENS))), "finish_reason": "length"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": len(TOKENS), "total_tokens": 6}})


@app.get("/health")
async def health():
    return {"ok": True}


if __name__ == "__main__":
    assert sys.argv[1] == "--port"
    uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[2]), log_level="warning")
