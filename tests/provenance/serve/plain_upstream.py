"""A server prov does not run (plain Python, stdlib only), shaped like an OpenAI-compatible
one: /version, /v1/models, /props (llama.cpp's), /inference/v1/config (vLLM's), and
/v1/completions answering fixed tokens with logprobs, streamed as server-sent events in
chunked transfer encoding when asked. Argv: PORT DTYPE (the dtype its config reports)."""

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

PORT, DTYPE = int(sys.argv[1]), sys.argv[2]
TOKENS = ["the", " cat", " sat"] if DTYPE == "float32" else ["the", " dog", " ran"]
DOCS = {
    "/version": {"version": "0.0-plain"},
    "/v1/models": {"object": "list", "data": [{"id": "tiny", "object": "model",
                                               "created": 1700000000, "max_model_len": 256}]},
    "/props": {"default_generation_settings": {"n_ctx": 256}, "total_slots": 1},
    "/inference/v1/config": {"model_config": {"dtype": DTYPE, "max_model_len": 256},
                             "cache_config": {"cache_dtype": "auto"}, "api_key": "sk-hidden-1"},
}


def completion(stream):
    lp = {"tokens": TOKENS, "token_logprobs": [-0.25] * 3,
          "top_logprobs": [{t: -0.25} for t in TOKENS]}
    if not stream:
        return {"id": "c1", "choices": [{"index": 0, "text": "".join(TOKENS), "logprobs": lp,
                                         "finish_reason": "length"}]}
    return [{"id": "c1", "choices": [{"index": 0, "text": t, "finish_reason": None,
             "logprobs": {"tokens": [t], "token_logprobs": [-0.25],
                          "top_logprobs": [{t: -0.25}]}}]} for t in TOKENS]


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def _json(self, doc, status=200):
        body = json.dumps(doc).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        path = self.path.split("?")[0]
        self._json(DOCS[path]) if path in DOCS else self._json({"error": "no"}, 404)

    def do_POST(self):
        body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
        if not body.get("stream"):
            return self._json(completion(False))
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Transfer-Encoding", "chunked")
        self.end_headers()
        for doc in [*completion(True), "[DONE]"]:
            data = ("data: " + (doc if isinstance(doc, str) else json.dumps(doc)) + "\n\n")
            raw = data.encode()
            self.wfile.write(b"%x\r\n%s\r\n" % (len(raw), raw))
        self.wfile.write(b"0\r\n\r\n")


ThreadingHTTPServer(("127.0.0.1", PORT), Handler).serve_forever()
