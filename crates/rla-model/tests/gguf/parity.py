"""Loads a GGUF file in transformers (which dequantises it with the `gguf` package) and compares
it with this project's conversion of the same file: token ids of texts, per-token
log-probabilities of a text, and a greedy continuation. Prints a JSON report.

usage: parity.py FILE.gguf OURS.json
OURS.json: {"texts": [...], "ids": [[...]], "scored": [ids], "logprobs": [...],
            "prompt": [ids], "greedy": [ids]}
"""
import json
import pathlib
import sys

import torch
from transformers import AutoModelForCausalLM, AutoTokenizer

gguf, ours_path = pathlib.Path(sys.argv[1]), sys.argv[2]
ours = json.loads(pathlib.Path(ours_path).read_text())
kw = dict(gguf_file=gguf.name)
tok = AutoTokenizer.from_pretrained(gguf.parent, **kw)
model = AutoModelForCausalLM.from_pretrained(gguf.parent, torch_dtype=torch.float32, **kw)
model.eval()

ids = [tok(t, add_special_tokens=False)["input_ids"] for t in ours["texts"]]
differ = [
    {"text": t, "ours": o, "transformers": i}
    for t, o, i in zip(ours["texts"], ours["ids"], ids)
    if o != i
]

with torch.no_grad():
    x = torch.tensor([ours["scored"]])
    logits = model(x).logits[0].double()
    lp = torch.log_softmax(logits, -1)
    theirs = lp[:-1].gather(1, x[0, 1:, None])[:, 0]
    diff = (theirs - torch.tensor(ours["logprobs"], dtype=torch.float64)).abs().max().item()
    moved = (theirs - theirs.mean()).abs().max().item()
    p = torch.tensor([ours["prompt"]])
    out = model.generate(p, max_new_tokens=len(ours["greedy"]), do_sample=False,
                         eos_token_id=None, pad_token_id=0)
    greedy = out[0, p.shape[1]:].tolist()

report = {
    "texts": len(ours["texts"]),
    "token_ids_differ": differ,
    "scored_tokens": len(ours["scored"]) - 1,
    "max_abs_logprob_diff": diff,
    "logprob_spread": moved,
    "greedy_equal": greedy == ours["greedy"],
    "greedy_transformers": greedy,
    "greedy_ours": ours["greedy"],
    "transformers": __import__("transformers").__version__,
}
try:  # llama.cpp's own tokenizer, where llama-cpp-python is installed
    import llama_cpp

    ll = llama_cpp.Llama(model_path=str(gguf), vocab_only=True, verbose=False)
    lids = [ll.tokenize(t.encode(), add_bos=False, special=True) for t in ours["texts"]]
    report["llama_cpp_differ"] = [
        {"text": t, "ours": o, "llama_cpp": i}
        for t, o, i in zip(ours["texts"], ours["ids"], lids)
        if o != i
    ]
except ImportError:
    pass
print(json.dumps(report))
