"""A user's client harness against an OpenAI-compatible server, written as users write them
(the `openai` SDK, nothing of prov): one scoring request over the evaluation text (prompt
logprobs, vLLM's `prompt_logprobs` extension), a streamed chat turn, and N concurrent short
completions. Writes what it got to --out (top-1 per prompt position, for an independent
agreement count beside prov's).

    python serve_client.py --base-url http://127.0.0.1:8000/v1 --model M --text eval.txt \
        --out answers.json [--tokens 4000] [--concurrent 16]
"""

from __future__ import annotations

import argparse
import json
from concurrent.futures import ThreadPoolExecutor

from openai import OpenAI


def score(client: OpenAI, model: str, text: str) -> list:
    r = client.completions.create(model=model, prompt=text, max_tokens=1, temperature=0,
                                  extra_body={"prompt_logprobs": 1})
    rows = r.choices[0].model_extra.get("prompt_logprobs") or []
    top1 = []
    for row in rows[1:]:  # position 0 has no prediction
        best = min(row.values(), key=lambda e: e.get("rank", 1 << 30)) if row else None
        top1.append(best.get("decoded_token") if best else None)
    return top1


def chat(client: OpenAI, model: str) -> str:
    stream = client.chat.completions.create(
        model=model, messages=[{"role": "user", "content": "List three prime numbers."}],
        max_tokens=24, temperature=0, stream=True, logprobs=True, top_logprobs=2)
    return "".join(c.choices[0].delta.content or "" for c in stream if c.choices)


def many(client: OpenAI, model: str, n: int) -> list[str]:
    def one(i: int) -> str:
        r = client.completions.create(model=model, prompt=f"Item {i}: the", max_tokens=8,
                                      temperature=0, logprobs=1)
        return r.choices[0].text

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--base-url", required=True)
    ap.add_argument("--model", required=True)
    ap.add_argument("--text", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--chars", type=int, default=0, help="cut the text to this many chars")
    ap.add_argument("--concurrent", type=int, default=16)
    args = ap.parse_args()
    # a key as users pass one; the server takes any, and prov must never store it
    client = OpenAI(base_url=args.base_url, api_key="sk-user-secret-0123456789abcdef",
                    timeout=600)
    with open(args.text, encoding="utf-8") as fh:
        text = fh.read()
    if args.chars:
        text = text[: args.chars]
    out = {"top1": score(client, args.model, text), "chat": chat(client, args.model),
           "many": many(client, args.model, args.concurrent)}
    with open(args.out, "w", encoding="utf-8") as fh:
        json.dump(out, fh)
    print(f"{len(out['top1'])} scored positions, {len(out['many'])} concurrent answers")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
