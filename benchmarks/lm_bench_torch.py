"""The measurements of `rlanything bench lm`, with PyTorch + transformers on the same checkpoint.

    rlanything bench lm --save /tmp/benchlm
    python3 benchmarks/lm_bench_torch.py /tmp/benchlm

Prints prefill tokens/s (8×256), decode tokens/s at batch 1 and 32 (64 new tokens, greedy, no early
stop) and training tokens/s (forward + backward + AdamW on 8×128), on the CPU, with the same number
of threads. Exits quietly if torch or transformers is not installed.
"""
import os
import sys
import time


def main():
    try:
        import torch
        from transformers import AutoModelForCausalLM
    except ImportError as e:  # pragma: no cover - depends on the machine
        print(f"PyTorch/transformers not installed ({e}); nothing to compare")
        return 0
    path = sys.argv[1] if len(sys.argv) > 1 else "/tmp/benchlm"
    torch.set_num_threads(int(os.environ.get("THREADS", os.cpu_count() or 1)))
    model = AutoModelForCausalLM.from_pretrained(path, torch_dtype=torch.float32)
    model.eval()
    vocab = model.config.vocab_size

    def report(name, tokens, secs):
        print(f"{name:<30} {tokens / secs:>12.0f} tokens/s")

    ids = (torch.arange(8 * 256) % vocab).reshape(8, 256)
    with torch.no_grad():
        model(ids)
        t = time.time()
        for _ in range(3):
            model(ids)
        report("prefill (8×256)", 3 * 8 * 256, time.time() - t)
        for batch in (1, 32):
            prompts = (torch.arange(batch * 16) % vocab + 4).reshape(batch, 16)
            t = time.time()
            model.generate(prompts, max_new_tokens=64, min_new_tokens=64, do_sample=False, pad_token_id=0)
            report(f"decode batch {batch} (64 new)", batch * 64, time.time() - t)
    model.train()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-4)
    x = (torch.arange(8 * 129) % (vocab - 4) + 4).reshape(8, 129)
    def step():
        out = model(x, labels=x)
        out.loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        opt.step()
        opt.zero_grad()
    step()
    t = time.time()
    for _ in range(3):
        step()
    report("train (8×128, fwd+bwd+AdamW)", 3 * 8 * 128, time.time() - t)
    return 0


if __name__ == "__main__":
    sys.exit(main())
