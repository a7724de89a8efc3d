"""Check a checkpoint written by this project against transformers: same token ids, same
log-probabilities, same chat prompt.

    rlanything lm init --config configs/tiny.toml --tokenizer-corpus CORPUS --out /tmp/tiny
    rlanything lm logprobs --model /tmp/tiny --text "take apple 1 from fridge 1" > /tmp/ours.json
    python3 benchmarks/check_against_transformers.py /tmp/tiny /tmp/ours.json "take apple 1 from fridge 1"

Needs torch and transformers (>= 4.51 for Qwen3); exits quietly without them.
"""
import json
import sys


def main():
    try:
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as e:
        print(f"PyTorch/transformers not installed ({e}); nothing to check")
        return 0
    path, ours_path, text = sys.argv[1], sys.argv[2], sys.argv[3]
    ours = json.load(open(ours_path))
    tok = AutoTokenizer.from_pretrained(path)
    ids = tok(text)["input_ids"]
    assert ids == ours["token_ids"], (ids, ours["token_ids"])
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
    with torch.no_grad():
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)
    theirs = [lp[i, t].item() for i, t in enumerate(ids[1:])]
    diff = max(abs(a - b) for a, b in zip(theirs, ours["logprobs"]))
    print(f"token ids equal; max |Δ log-prob| = {diff:.2e}")
    assert diff < 1e-4
    return 0


if __name__ == "__main__":
    sys.exit(main())
