"""Loads a base checkpoint with transformers and a LoRA adapter on it with the real `peft`
package, and compares their log-probabilities with this project's. Usage:
check.py BASE_DIR ADAPTER_DIR OURS_JSON, where OURS_JSON holds {"ids": [[...]], "logprobs":
[[[...vocab...] per position but the last] per sequence]}. Prints the largest difference as JSON; exits
non-zero when it is over 1e-4 or the adapter changed nothing."""
import json
import sys

import torch
from peft import PeftModel
from transformers import AutoModelForCausalLM

base_dir, adapter_dir, ours_path = sys.argv[1], sys.argv[2], sys.argv[3]
ours = json.load(open(ours_path))
base = AutoModelForCausalLM.from_pretrained(base_dir, torch_dtype=torch.float32)
base.eval()
with torch.no_grad():
    plain = [torch.log_softmax(base(torch.tensor([ids])).logits[0], -1) for ids in ours["ids"]]
model = PeftModel.from_pretrained(base, adapter_dir)
model.eval()
worst, moved = 0.0, 0.0
with torch.no_grad():
    for ids, want, p in zip(ours["ids"], ours["logprobs"], plain):
        lp = torch.log_softmax(model(torch.tensor([ids])).logits[0], -1)[:-1]
        p = p[:-1]
        worst = max(worst, (lp - torch.tensor(want)).abs().max().item())
        moved = max(moved, (lp - p).abs().max().item())
print(json.dumps({"max_abs_diff": worst, "adapter_effect": moved}))
sys.exit(0 if worst < 1e-4 and moved > 1e-3 else 1)
