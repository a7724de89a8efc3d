#!/usr/bin/env python3
"""The GPU check of the PyTorch learner (scripts/gpu-check.sh launches it with torchrun).

1. The worker on the device (NCCL on GPUs, gloo on the CPU) against plain PyTorch: a tiny
   Qwen2-shaped model, the worker's PPO and SFT steps (FSDP2, its loss, AdamW, clipping) and the
   same steps written directly on one unsharded copy: losses, gradient norms and weights equal.
2. Throughput of full fine-tuning of a Qwen2.5-1.5B-shaped model and of LoRA r = 64 on a
   Qwen2.5-7B-shaped model (random weights from the config; bf16 compute over f32 masters,
   activation checkpointing), at 4k and 16k tokens a step: tokens/s, peak memory, and MFU =
   6 × parameters × tokens / time / peak (989 TFLOP/s, the H200's dense bf16; recomputation not
   counted).

`--smoke` runs both parts at toy sizes on whatever device is there (CI runs it on the CPU).
"""

import argparse
import importlib.util
import json
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
WORKER = os.path.join(HERE, "..", "crates", "rla-torch", "worker", "rla_torch_worker.py")
PEAK = 989e12

QWEN25_15B = dict(hidden_size=1536, intermediate_size=8960, num_hidden_layers=28, num_attention_heads=12,
                  num_key_value_heads=2, vocab_size=151936, tie_word_embeddings=True)
QWEN25_7B = dict(hidden_size=3584, intermediate_size=18944, num_hidden_layers=28, num_attention_heads=28,
                 num_key_value_heads=4, vocab_size=152064, tie_word_embeddings=False)
TOY = dict(hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
           num_key_value_heads=2, vocab_size=512, tie_word_embeddings=True)


def load_worker():
    spec = importlib.util.spec_from_file_location("rla_torch_worker", WORKER)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def write_config(folder, shape):
    cfg = {"architectures": ["Qwen2ForCausalLM"], "model_type": "qwen2", "hidden_act": "silu",
           "max_position_embeddings": 32768, "rms_norm_eps": 1e-6, "rope_theta": 1000000.0,
           "torch_dtype": "float32", "use_sliding_window": False, **shape}
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, "config.json"), "w") as f:
        json.dump(cfg, f)


def batch(n, length, vocab, seed, ppo):
    import numpy as np
    rng = np.random.default_rng(seed)
    plen = length // 2
    tokens = rng.integers(0, vocab, size=n * length).astype(np.int32)
    arrays = {"tokens": tokens, "lengths": np.full(n, length, np.int32),
              "prompt_lengths": np.full(n, plen, np.int32)}
    r = n * (length - plen)
    if ppo:
        arrays["old_logprobs"] = (-rng.uniform(3, 8, size=r)).astype(np.float32)
        arrays["ref_logprobs"] = (-rng.uniform(3, 8, size=r)).astype(np.float32)
        arrays["advantages"] = rng.normal(size=n).astype(np.float32)
    return arrays


def config(folder, dtype, lora=None, random_init=False, ckpt=False, micro_batch=16, beta=0.01):
    return {"config": {"model_dir": folder, "dtype": dtype, "lr": 1e-4, "micro_batch": micro_batch,
                       "max_grad_norm": 1.0, "ppo": {"clip_eps": 0.2, "log_ratio_clamp": 10.0, "kl_beta": beta},
                       "lora": lora, "seed": 0, "frozen_reference": False, "random_init": random_init,
                       "activation_checkpointing": ckpt}}


def say(w, *a):
    if w.rank == 0:
        print(*a, flush=True)


def check_against_plain_torch(mod, w, folder, device):
    """The worker's steps against the same steps on one unsharded model."""
    import numpy as np
    import torch
    import torch.distributed as dist
    from safetensors.torch import save_file
    from transformers import AutoConfig, AutoModelForCausalLM
    if w.rank == 0:
        write_config(folder, TOY)
        torch.manual_seed(1)
        m = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), torch_dtype=torch.float32)
        sd = {k: v.contiguous() for k, v in m.state_dict().items() if k != "lm_head.weight"}
        save_file(sd, os.path.join(folder, "model.safetensors"), metadata={"format": "pt"})
    dist.barrier()
    w.op_init(config(folder, "f32", micro_batch=2, beta=0.02), {})
    plain = AutoModelForCausalLM.from_config(AutoConfig.from_pretrained(folder), torch_dtype=torch.float32)
    from safetensors.torch import load_file
    plain.load_state_dict(load_file(os.path.join(folder, "model.safetensors")), strict=False)
    plain.tie_weights()
    plain.to(device)
    opt = torch.optim.AdamW(plain.parameters(), lr=1e-4, betas=(0.9, 0.999), eps=1e-8, weight_decay=0.0)
    worst = 0.0
    for step, kind in enumerate(["ppo", "ppo", "sft"]):
        arrays = batch(5, 24, TOY["vocab_size"], step, kind == "ppo")
        got, _ = w.op_forward_backward({"loss": kind}, arrays)
        norm = w.op_optim_step({}, {})[0]["grad_norm"]
        # the same step by hand: token mean within each sequence, mean over sequences
        n, length = 5, 24
        x = torch.from_numpy(arrays["tokens"].astype(np.int64)).view(n, length).to(device)
        logits = plain(input_ids=x[:, :-1]).logits.float()
        lp = torch.log_softmax(logits, -1).gather(-1, x[:, 1:].unsqueeze(-1)).squeeze(-1)[:, 11:]
        if kind == "sft":
            per = -lp
        else:
            old = torch.from_numpy(arrays["old_logprobs"]).view(n, -1).to(device)
            ref = torch.from_numpy(arrays["ref_logprobs"]).view(n, -1).to(device)
            adv = torch.from_numpy(arrays["advantages"]).to(device).unsqueeze(1)
            ratio = torch.exp(torch.clamp(lp - old, -10, 10))
            per = -torch.minimum(ratio * adv, torch.clamp(ratio, 0.8, 1.2) * adv)
            q = ref - lp
            per = per + 0.02 * (torch.exp(q) - q - 1)
        loss = per.mean(1).mean()
        opt.zero_grad()
        loss.backward()
        want = float(torch.nn.utils.clip_grad_norm_(plain.parameters(), 1.0))
        opt.step()
        for a, b, what in [(got["loss"], float(loss), "loss"), (norm, want, "gradient norm")]:
            rel = abs(a - b) / max(abs(b), 1e-6)
            worst = max(worst, rel)
            if rel > 1e-4:
                raise SystemExit(f"step {step} ({kind}): the worker's {what} {a} against plain torch's {b}")
    from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
    full = get_model_state_dict(w.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
    if w.rank == 0:
        mine = plain.state_dict()
        d = max(float((full[k].float() - mine[k].float().cpu()).abs().max()) for k in full)
        if d > 1e-5:
            raise SystemExit(f"the worker's weights differ from plain torch's by {d}")
        say(w, f"check: 2 PPO and 1 SFT steps on {w.world} process(es), {device}: losses and gradient "
               f"norms equal plain PyTorch to {worst:.1e} (relative), weights to {d:.1e}")


def throughput(mod, w, folder, name, shape, lora, tokens, seq, steps):
    import torch
    import torch.distributed as dist
    if w.rank == 0:
        write_config(folder, shape)
    dist.barrier()
    if w.cuda:
        torch.cuda.reset_peak_memory_stats()
    t0 = time.time()
    w.op_init(config(folder, "bf16", lora=lora, random_init=True, ckpt=True, micro_batch=max(1, tokens // seq)), {})
    init_s = time.time() - t0
    params = sum(p.numel() for p in w.model.parameters())
    n = tokens // seq
    arrays = batch(n * w.world, seq, shape["vocab_size"], 0, True)
    # the step's response tokens are half of each sequence; the forward and backward passes
    # run over every token, so MFU counts them all
    w.op_forward_backward({"loss": "ppo"}, arrays)
    w.op_optim_step({}, {})
    if w.cuda:
        torch.cuda.synchronize()
    t0 = time.time()
    for _ in range(steps):
        w.op_forward_backward({"loss": "ppo"}, arrays)
        w.op_optim_step({}, {})
    if w.cuda:
        torch.cuda.synchronize()
    dt = (time.time() - t0) / steps
    per_rank = tokens
    tps = per_rank / dt
    mfu = 6 * params * per_rank / dt / PEAK
    peak = f"{torch.cuda.max_memory_allocated() / 2**30:.1f} GiB" if w.cuda else "n/a (CPU)"
    say(w, f"{name}: {params / 1e9:.2f} B weights, {per_rank} tokens/step/GPU ({n} × {seq}), "
           f"{dt:.2f} s/step, {tps:,.0f} tokens/s/GPU, peak memory {peak}, MFU {100 * mfu:.1f}% "
           f"(init {init_s:.0f} s)")
    w.model = None
    w.reference = None
    w.opt = None
    if w.cuda:
        torch.cuda.empty_cache()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--smoke", action="store_true", help="toy sizes, any device")
    p.add_argument("--steps", type=int, default=3)
    p.add_argument("--only", default="", help="comma-separated: check,1.5b,7b-lora")
    args = p.parse_args()
    mod = load_worker()
    import torch
    w = mod.Worker(argparse.Namespace(cpu=not torch.cuda.is_available(), collective_timeout=1800.0))
    say(w, f"torch {torch.__version__}, {w.world} process(es), device {w.device}"
           + (f" ({torch.cuda.get_device_name()})" if w.cuda else ""))
    only = set(filter(None, args.only.split(",")))
    with tempfile.TemporaryDirectory() as tmp:
        import torch.distributed as dist
        box = [tmp]
        dist.broadcast_object_list(box, src=0)  # one folder for every rank (one machine)
        tmp = box[0]
        if not only or "check" in only:
            check_against_plain_torch(mod, w, os.path.join(tmp, "check"), w.device)
        runs = [("Qwen2.5-1.5B full", QWEN25_15B, None), ("Qwen2.5-7B LoRA r=64", QWEN25_7B,
                 {"r": 64, "alpha": 128.0, "targets": ["q_proj", "k_proj", "v_proj", "o_proj",
                                                       "gate_proj", "up_proj", "down_proj"]})]
        sizes = [(4096, 4096), (16384, 4096)]
        if args.smoke:
            runs = [("toy full", TOY, None), ("toy LoRA r=4", TOY, {"r": 4, "alpha": 8.0, "targets": ["q_proj", "v_proj"]})]
            sizes = [(64, 32), (128, 32)]
        keys = ["1.5b", "7b-lora"]
        for key, (name, shape, lora) in zip(keys, runs):
            if only and key not in only:
                continue
            for tokens, seq in sizes:
                throughput(mod, w, os.path.join(tmp, f"{key}-{tokens}"), name, shape, lora, tokens, seq, args.steps)
    dist.barrier()
    dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
