"""Talks to `rlanything serve` with the official `openai` client: completions, chat
completions, n, logprobs with their alternatives, stop strings, models, LoRA adapters, and
errors for bad requests. Usage: client.py BASE_URL MODEL ADAPTER ADAPTER_DIR, where the server
was started with `--adapter ADAPTER=...` and ADAPTER_DIR is another adapter folder to load.
Prints one JSON line with what it saw; exits non-zero on a failure."""
import json
import sys

import openai

import httpx

base, model, adapter, adapter_dir = sys.argv[1:5]
c = openai.OpenAI(base_url=base + "/v1", api_key="none", max_retries=0)
seen = {}

seen["models"] = [m.id for m in c.models.list().data]

r = c.completions.create(model=model, prompt=["go to the", "look"], n=2, max_tokens=5,
                         temperature=0, logprobs=1)
assert len(r.choices) == 4, r
assert sorted(ch.index for ch in r.choices) == [0, 1, 2, 3]
for ch in r.choices:
    assert len(ch.logprobs.tokens) == len(ch.logprobs.token_logprobs)
    assert all(lp <= 0 for lp in ch.logprobs.token_logprobs)
    assert ch.finish_reason in ("stop", "length")
assert r.usage.total_tokens == r.usage.prompt_tokens + r.usage.completion_tokens
seen["greedy"] = [ch.text for ch in r.choices]

r = c.completions.create(model=model, prompt=[[5, 6, 7]], max_tokens=4, temperature=1.0,
                         seed=3, top_p=0.9, extra_body={"top_k": 5,
                                                        "return_tokens_as_token_ids": True},
                         logprobs=1)
assert all(t.startswith("token_id:") for t in r.choices[0].logprobs.tokens)
seen["token_ids"] = r.choices[0].logprobs.tokens

r = c.completions.create(model=model, prompt="go to the", max_tokens=12, temperature=0,
                         stop=["apple"])
assert "apple" not in r.choices[0].text
seen["stopped"] = r.choices[0].text

r = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "go to the fridge 1"}],
                              max_tokens=5, temperature=0, logprobs=True)
assert r.choices[0].message.role == "assistant"
assert r.choices[0].logprobs.content is not None
seen["chat"] = r.choices[0].message.content

r = c.completions.create(model=model, prompt="go to the", max_tokens=3, temperature=0, logprobs=3)
top = r.choices[0].logprobs.top_logprobs
assert len(top) == 3 and all(len(t) == 3 for t in top), top
for t, lp in zip(top, r.choices[0].logprobs.token_logprobs):
    assert abs(max(t.values()) - lp) < 1e-4, (t, lp)
r = c.chat.completions.create(model=model, messages=[{"role": "user", "content": "look"}],
                              max_tokens=3, temperature=0, logprobs=True, top_logprobs=2)
for t in r.choices[0].logprobs.content:
    assert len(t.top_logprobs) == 2 and t.top_logprobs[0].token == t.token, t
seen["top_logprobs"] = [sorted(t.values()) for t in top]

# adapters: the one the server started with, and one loaded now with vLLM's call
seen["models_with_adapter"] = [m.id for m in c.models.list().data]
r = c.completions.create(model=adapter, prompt="go to the", max_tokens=4, temperature=0)
seen["adapter_greedy"] = r.choices[0].text
c.post("/load_lora_adapter", cast_to=httpx.Response,
       body={"lora_name": "loaded", "lora_path": adapter_dir})
r = c.completions.create(model="loaded", prompt="go to the", max_tokens=4, temperature=0)
seen["loaded_greedy"] = r.choices[0].text
c.post("/unload_lora_adapter", cast_to=httpx.Response, body={"lora_name": "loaded"})
seen["models_after_unload"] = [m.id for m in c.models.list().data]

errors = {}
for name, call in [
    ("model", lambda: c.completions.create(model="nope", prompt="go", max_tokens=2)),
    ("unloaded", lambda: c.completions.create(model="loaded", prompt="go", max_tokens=2)),
    ("n", lambda: c.completions.create(model=model, prompt="go", n=0, max_tokens=2)),
    ("top_p", lambda: c.completions.create(model=model, prompt="go", top_p=0, max_tokens=2)),
    ("image", lambda: c.chat.completions.create(model=model, max_tokens=2, messages=[
        {"role": "user", "content": [{"type": "image_url",
                                       "image_url": {"url": "data:image/png;base64,AA=="}}]}])),
]:
    try:
        call()
        errors[name] = None
    except openai.APIStatusError as e:
        errors[name] = [e.status_code, e.body.get("message") if isinstance(e.body, dict) else str(e.body)]
seen["errors"] = errors
print(json.dumps(seen))
