"""A client as a user writes it with the `openai` SDK (run by the vllm venv's python under
`prov exec`): chat and completions, each whole and streamed, with logprobs, greedy; then
N completions at once from N threads. Argv: BASE_URL MODEL N API_KEY."""

import sys
import threading

from openai import OpenAI

base, model, n, key = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]
client = OpenAI(base_url=base + "/v1", api_key=key, max_retries=0, timeout=600)
messages = [{"role": "user", "content": "the cat sat on the"}]

chat = client.chat.completions.create(model=model, messages=messages, max_tokens=6,
                                      temperature=0, logprobs=True, top_logprobs=3)
print("chat:", chat.choices[0].message.content)
for _chunk in client.chat.completions.create(model=model, messages=messages, max_tokens=6,
                                            temperature=0, logprobs=True, top_logprobs=3,
                                            stream=True):
    pass
done = client.completions.create(model=model, prompt="the cat sat on the", max_tokens=6,
                                 temperature=0, logprobs=3)
print("completion:", done.choices[0].text)
for _chunk in client.completions.create(model=model, prompt="the cat sat on the", max_tokens=6,
                                       temperature=0, logprobs=3, stream=True):
    pass


def one(i):
    client.completions.create(model=model, prompt=f"request {i} of the day", max_tokens=4,
                              temperature=0, logprobs=1)


threads = [threading.Thread(target=one, args=(i,)) for i in range(n)]
for t in threads:
    t.start()
for t in threads:
    t.join()
