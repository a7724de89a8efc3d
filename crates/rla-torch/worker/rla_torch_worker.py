#!/usr/bin/env python3
"""rlanything's learner worker: a Hugging Face causal LM trained with PyTorch FSDP2.

Launched with torchrun, one process per device (``--nnodes``/``--node-rank``/``--master-addr``
for several machines). Global rank 0 connects to the loop (``--connect HOST:PORT``) and answers
its calls; every other rank follows rank 0, which hands each call to them with a broadcast. The
worker needs PyTorch, transformers, safetensors and numpy (and peft for LoRA), never the
rlanything package itself.

The protocol, version 1, over one TCP connection: each message is ``b"RLAW"``, the header's length
(u32, little-endian), the payload's length (u64), the header (UTF-8 JSON) and the payload (the
header's ``arrays``, ``[{"name", "dtype": "i32"|"f32", "shape"}]``, packed in order, little-endian).
A call's header holds ``v`` (the protocol version), ``id``, ``op`` and its arguments; the reply
holds the same ``id`` and ``ok``, with ``error`` when the call failed.

Ops: ``init`` (the model folder, the optimiser, the PPO objective, LoRA, sharding), ``logprobs``
(under the trained policy or the frozen KL reference), ``forward_backward`` (PPO-clip with the k3
KL term, or SFT cross-entropy: the token mean within each sequence, then the mean over the call's
sequences; gradients add up over calls), ``optim_step`` (clips the global gradient norm, one AdamW
step, returns the norm), ``set_lr``, ``save_state``/``load_state`` (model, optimiser and RNG with
torch.distributed.checkpoint), ``export`` (a Hugging Face folder, or a PEFT adapter), ``health``
and ``shutdown``.

A batch is ``tokens`` (i32, every sequence's prompt and response ids, concatenated), ``lengths``
and ``prompt_lengths`` (i32, one per sequence) and, per response token, ``old_logprobs``,
``ref_logprobs`` and ``loss_mask`` (f32), and ``advantages`` (f32, one per sequence); for
constrained answers ``choice_counts`` (i32, one per response token, 0 for a free one) and
``choice_tokens`` (i32, the tokens each was drawn among, in order), over which its
log-probability is then taken.
"""

import argparse
import datetime
import json
import os
import shutil
import socket
import struct
import sys
import traceback

PROTOCOL = 1
MAGIC = b"RLAW"
DTYPES = {"i32": "<i4", "f32": "<f4"}
# what an export copies from the model's folder besides the weights
SKIP = ("model.safetensors", "model.safetensors.index.json", "optimizer.safetensors",
        "adapter_model.safetensors", "adapter_config.json")


class CallError(Exception):
    """A call the worker refuses, with what was wrong; the worker stays usable."""


def read_exact(sock, n):
    buf = bytearray()
    while len(buf) < n:
        chunk = sock.recv(min(n - len(buf), 1 << 20))
        if not chunk:
            raise ConnectionError("the loop closed the connection")
        buf += chunk
    return bytes(buf)


def recv_msg(sock):
    import numpy as np
    head = read_exact(sock, 16)
    if head[:4] != MAGIC:
        raise ConnectionError("not a message of rlanything's worker protocol")
    hlen, plen = struct.unpack("<IQ", head[4:])
    header = json.loads(read_exact(sock, hlen).decode("utf-8"))
    payload = read_exact(sock, plen)
    arrays, off = {}, 0
    for a in header.get("arrays", []):
        dt = np.dtype(DTYPES[a["dtype"]])
        count = 1
        for s in a["shape"]:
            count *= int(s)
        arrays[a["name"]] = np.frombuffer(payload, dtype=dt, count=count, offset=off).reshape(a["shape"])
        off += count * dt.itemsize
    if off != len(payload):
        raise ConnectionError("the payload's length does not match its arrays")
    return header, arrays


def send_msg(sock, header, arrays=None):
    import numpy as np
    header = dict(header)
    parts, desc = [], []
    for name, arr in (arrays or {}).items():
        kind = "f32" if arr.dtype.kind == "f" else "i32"
        a = np.ascontiguousarray(arr, dtype=DTYPES[kind])
        desc.append({"name": name, "dtype": kind, "shape": list(a.shape)})
        parts.append(a.tobytes())
    header["arrays"] = desc
    h = json.dumps(header).encode("utf-8")
    payload = b"".join(parts)
    sock.sendall(MAGIC + struct.pack("<IQ", len(h), len(payload)) + h + payload)


class Batch:
    """A call's sequences, checked before any collective (every rank checks the same data)."""

    def __init__(self, arrays, vocab, with_ppo):
        import numpy as np
        for k in ("tokens", "lengths", "prompt_lengths"):
            if k not in arrays:
                raise CallError(f"the batch has no `{k}` array")
        tokens = arrays["tokens"].astype(np.int64)
        lengths = arrays["lengths"].astype(np.int64)
        plens = arrays["prompt_lengths"].astype(np.int64)
        if lengths.shape != plens.shape or len(lengths.shape) != 1:
            raise CallError("`lengths` and `prompt_lengths` must be lists of one length")
        if int(lengths.sum()) != tokens.shape[0]:
            raise CallError(f"`lengths` add up to {int(lengths.sum())}, not the {tokens.shape[0]} tokens sent")
        if len(lengths) and ((plens < 1).any() or (lengths - plens < 1).any()):
            raise CallError("every sequence needs a prompt and a response of at least one token")
        if tokens.size and (tokens.min() < 0 or tokens.max() >= vocab):
            bad = int(tokens.max() if tokens.max() >= vocab else tokens.min())
            raise CallError(f"token id {bad} is outside the model's vocabulary of {vocab}")
        self.n = len(lengths)
        starts = np.concatenate([[0], np.cumsum(lengths)[:-1]]) if self.n else np.zeros(0, np.int64)
        rlens = lengths - plens
        rstarts = np.concatenate([[0], np.cumsum(rlens)[:-1]]) if self.n else np.zeros(0, np.int64)
        self.rtotal = int(rlens.sum())
        self.seqs = [tokens[s:s + n] for s, n in zip(starts, lengths)]
        self.plens, self.rlens, self.rstarts = plens, rlens, rstarts

        def per_token(name, default):
            if name not in arrays:
                return default
            a = arrays[name].astype(np.float32)
            if a.shape != (self.rtotal,):
                raise CallError(f"`{name}` holds {a.shape[0] if a.ndim else 0} values for {self.rtotal} response tokens")
            if not np.isfinite(a).all():
                raise CallError(f"`{name}` holds a value that is not finite")
            return a

        self.mask = per_token("loss_mask", np.ones(self.rtotal, np.float32))
        # constrained responses: the tokens each response token was drawn among (none: any)
        self.choices = None
        if "choice_counts" in arrays:
            counts = arrays["choice_counts"].astype(np.int64)
            flat = arrays.get("choice_tokens", np.zeros(0, np.int32)).astype(np.int64)
            if counts.shape != (self.rtotal,) or (counts < 0).any():
                raise CallError(f"`choice_counts` must hold one count per response token ({self.rtotal})")
            if int(counts.sum()) != flat.shape[0]:
                raise CallError(f"`choice_counts` add up to {int(counts.sum())}, not the {flat.shape[0]} choice tokens sent")
            if flat.size and (flat.min() < 0 or flat.max() >= vocab):
                raise CallError("a choice token is outside the model's vocabulary")
            at = np.concatenate([[0], np.cumsum(counts)])
            self.choices = [flat[at[k]:at[k + 1]] for k in range(self.rtotal)]
        self.old = per_token("old_logprobs", None)
        self.ref = per_token("ref_logprobs", None)
        self.adv = None
        if "advantages" in arrays:
            self.adv = arrays["advantages"].astype(np.float32)
            if self.adv.shape != (self.n,) or not np.isfinite(self.adv).all():
                raise CallError("`advantages` must hold one finite value per sequence")
        if with_ppo and (self.old is None or self.adv is None):
            raise CallError("a PPO batch needs `old_logprobs` and `advantages`")

    def rows(self, idx, name):
        """The per-response-token array `name` of the sequences `idx`, padded to [b, R]."""
        import numpy as np
        src = getattr(self, name)
        r = max(int(self.rlens[i]) for i in idx)
        out = np.zeros((len(idx), r), np.float32)
        for j, i in enumerate(idx):
            s, n = int(self.rstarts[i]), int(self.rlens[i])
            out[j, :n] = src[s:s + n]
        return out


class Worker:
    def __init__(self, args):
        import torch
        import torch.distributed as dist
        self.args = args
        self.rank = int(os.environ.get("RANK", "0"))
        self.world = int(os.environ.get("WORLD_SIZE", "1"))
        local = int(os.environ.get("LOCAL_RANK", "0"))
        self.cuda = torch.cuda.is_available() and not args.cpu
        if self.cuda:
            torch.cuda.set_device(local)
            self.device = torch.device("cuda", local)
        else:
            self.device = torch.device("cpu")
        timeout = datetime.timedelta(seconds=args.collective_timeout)
        if "MASTER_ADDR" not in os.environ:
            # run without torchrun: a group of one
            os.environ.setdefault("MASTER_ADDR", "127.0.0.1")
            os.environ.setdefault("MASTER_PORT", str(free_port()))
            os.environ.setdefault("RANK", "0")
            os.environ.setdefault("WORLD_SIZE", "1")
        dist.init_process_group("nccl" if self.cuda else "gloo", timeout=timeout)
        self.model = None

    # --- setup -------------------------------------------------------------------------------

    def load(self, folder, dtype, random_init=False):
        """The causal LM saved in `folder` (weights, and a PEFT adapter beside them, if any);
        with `random_init`, one of its config's shape with fresh random weights (benchmarks)."""
        import torch
        from safetensors.torch import load_file
        from transformers import AutoConfig, AutoModelForCausalLM
        config = AutoConfig.from_pretrained(folder)
        self.vocab = config.vocab_size
        self.config = config
        if random_init:
            torch.manual_seed(0)
            with torch.device(self.device):
                return AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
        model = AutoModelForCausalLM.from_config(config, torch_dtype=dtype)
        index = os.path.join(folder, "model.safetensors.index.json")
        if os.path.exists(index):
            with open(index) as f:
                files = sorted(set(json.load(f)["weight_map"].values()))
        else:
            files = ["model.safetensors"]
        state = {}
        for name in files:
            state.update(load_file(os.path.join(folder, name)))
        state = {k: v.to(dtype) for k, v in state.items()}
        missing, unexpected = model.load_state_dict(state, strict=False)
        tied = getattr(config, "tie_word_embeddings", False)
        missing = [k for k in missing if not (tied and k == "lm_head.weight")
                   and not k.endswith("rotary_emb.inv_freq")]
        if missing or unexpected:
            raise CallError(f"{folder}: the weights do not fit the config "
                            f"(missing {missing[:3]}, unexpected {unexpected[:3]})")
        if tied:
            model.tie_weights()
        if os.path.exists(os.path.join(folder, "adapter_config.json")):
            from peft import PeftModel
            model = PeftModel.from_pretrained(model, folder, is_trainable=True)
        return model

    def shard(self, model, trainable):
        """FSDP2 over the decoder blocks and the whole model, on a mesh of every rank."""
        import torch
        from torch.distributed.device_mesh import init_device_mesh
        from torch.distributed.fsdp import CPUOffloadPolicy, MixedPrecisionPolicy, fully_shard
        model.to(self.device)
        mesh = init_device_mesh(self.device.type, (self.world,))
        kw = {"mesh": mesh}
        if self.compute != torch.float32:
            kw["mp_policy"] = MixedPrecisionPolicy(param_dtype=self.compute, reduce_dtype=torch.float32)
        if self.offload:
            kw["offload_policy"] = CPUOffloadPolicy()
        for m in model.modules():
            if type(m).__name__.endswith("DecoderLayer"):
                fully_shard(m, **kw)
        fully_shard(model, **kw)
        # gradients are summed over ranks, never averaged: each rank's loss is its share of the
        # whole batch's mean already (and backends differ in how they average)
        for m in model.modules():
            if hasattr(m, "set_gradient_divide_factor"):
                m.set_gradient_divide_factor(1.0)
        if not trainable:
            for p in model.parameters():
                p.requires_grad_(False)
            model.eval()
        return model

    def op_init(self, h, _arrays):
        import torch
        c = h["config"]
        torch.manual_seed(int(c.get("seed", 0)))
        names = {"f32": torch.float32, "bf16": torch.bfloat16, "f16": torch.float16}
        if c.get("dtype", "f32") not in names:
            raise CallError(f"dtype {c.get('dtype')!r}: use f32, bf16 or f16")
        self.compute = names[c.get("dtype", "f32")]
        self.offload = bool(c.get("offload", False))
        if self.offload and not self.cuda:
            raise CallError("offload keeps the sharded weights in CPU memory while GPUs compute; "
                            "this worker computes on the CPU, where they already are")
        self.ppo = c["ppo"]
        # PPO trains the tempered policy its samples were drawn from (softmax(logits / T))
        self.temperature = float(c.get("temperature", 1.0)) or 1.0
        self.micro_batch = max(1, int(c.get("micro_batch", 16)))
        self.token_budget = int(c.get("token_budget", 0))
        self.max_grad_norm = float(c.get("max_grad_norm", 1.0))
        self.folder = c["model_dir"]
        # master weights in f32; compute in `dtype` (FSDP2's mixed precision)
        random_init = bool(c.get("random_init", False))
        model = self.load(self.folder, torch.float32, random_init)
        lora = c.get("lora")
        if lora is not None and not hasattr(model, "peft_config"):
            from peft import LoraConfig, get_peft_model
            model = get_peft_model(model, LoraConfig(
                r=int(lora["r"]), lora_alpha=float(lora["alpha"]), lora_dropout=0.0,
                target_modules=list(lora["targets"]), task_type="CAUSAL_LM"))
        if c.get("activation_checkpointing"):
            model.gradient_checkpointing_enable(gradient_checkpointing_kwargs={"use_reentrant": False})
        self.model = self.shard(model, trainable=True)
        self.params = [p for p in self.model.parameters() if p.requires_grad]
        opt = c.get("optimizer", {})
        self.opt = torch.optim.AdamW(
            self.params, lr=float(c["lr"]), betas=(float(opt.get("beta1", 0.9)), float(opt.get("beta2", 0.999))),
            eps=float(opt.get("eps", 1e-8)), weight_decay=float(opt.get("weight_decay", 0.0)))
        self.reference = None
        if c.get("frozen_reference"):
            ref_dir = c.get("reference_dir") or self.folder
            self.reference = self.shard(self.load(ref_dir, torch.float32, random_init), trainable=False)
        if c.get("resume"):
            self.op_load_state({"dir": c["resume"]}, {})
        if self.rank == 0:
            print(f"init: {self.folder} on {self.world} process(es), rank 0 pid {os.getpid()}, "
                  f"CUDA_VISIBLE_DEVICES {os.environ.get('CUDA_VISIBLE_DEVICES', '(all)')}, "
                  f"{self.device}, compute "
                  f"{self.compute}, offload {self.offload}, activation checkpointing "
                  f"{bool(c.get('activation_checkpointing'))}", flush=True)
        return {"parameters": sum(p.numel() for p in self.model.parameters()),
                "trainable": sum(p.numel() for p in self.params), "vocab": self.vocab}, {}

    # --- computing -----------------------------------------------------------------------------

    def split(self, batch):
        """This rank's micro-batches (lists of sequence indices) and how many every rank runs."""
        order = sorted(range(batch.n), key=lambda i: len(batch.seqs[i]))
        mine = [order[i] for i in range(self.rank, batch.n, self.world)]

        def chunks(seqs):
            out, cur, longest = [], [], 0
            for i in seqs:
                l = len(batch.seqs[i]) - 1
                over = self.token_budget > 0 and cur and max(longest, l) * (len(cur) + 1) > self.token_budget
                if cur and (len(cur) >= self.micro_batch or over):
                    out.append(cur)
                    cur, longest = [], 0
                cur.append(i)
                longest = max(longest, l)
            if cur:
                out.append(cur)
            return out

        counts = [len(chunks([order[i] for i in range(r, batch.n, self.world)])) for r in range(self.world)]
        return chunks(mine), max(counts) if counts else 0

    def forward(self, model, batch, idx, temperature=1.0):
        """Log-probabilities [b, R] of the response tokens of sequences `idx` (0 past a row's end),
        under softmax(logits / temperature)."""
        import torch
        if not idx:
            # a rank without sequences still takes part in the collectives of the forward pass
            x = torch.zeros((1, 1), dtype=torch.long, device=self.device)
            return model(input_ids=x, use_cache=False).logits.float().sum() * 0.0
        l = max(len(batch.seqs[i]) - 1 for i in idx)
        r = max(int(batch.rlens[i]) for i in idx)
        x = torch.zeros((len(idx), l), dtype=torch.long)
        pos = torch.zeros((len(idx), r), dtype=torch.long)
        tgt = torch.zeros((len(idx), r), dtype=torch.long)
        for j, i in enumerate(idx):
            s = torch.from_numpy(batch.seqs[i])
            n = len(s) - 1
            x[j, :n] = s[:n]
            p, rl = int(batch.plens[i]), int(batch.rlens[i])
            pos[j, :rl] = torch.arange(p - 1, p - 1 + rl)
            pos[j, rl:] = p - 1 + rl - 1
            tgt[j, :rl] = s[p:]
        x, pos, tgt = x.to(self.device), pos.to(self.device), tgt.to(self.device)
        logits = model(input_ids=x, use_cache=False).logits
        picked = torch.gather(logits, 1, pos.unsqueeze(-1).expand(-1, -1, logits.shape[-1])).float()
        if temperature != 1.0:
            picked = picked / temperature
        if batch.choices is not None:
            # constrained responses: log-probabilities over the tokens each one was drawn among
            keep = torch.zeros((len(idx), r, picked.shape[-1]), dtype=torch.bool)
            free = torch.ones((len(idx), r), dtype=torch.bool)
            for j, i in enumerate(idx):
                s0 = int(batch.rstarts[i])
                for t in range(int(batch.rlens[i])):
                    c = batch.choices[s0 + t]
                    if len(c):
                        keep[j, t, torch.from_numpy(c)] = True
                        free[j, t] = False
            keep |= free.unsqueeze(-1)
            picked = picked.masked_fill(~keep.to(picked.device), -1e9)
        return torch.log_softmax(picked, dim=-1).gather(-1, tgt.unsqueeze(-1)).squeeze(-1)

    def op_logprobs(self, h, arrays):
        import numpy as np
        import torch
        import torch.distributed as dist
        model = self.model if h.get("which", "policy") == "policy" else self.reference
        if model is None:
            raise CallError("no frozen KL reference: init with frozen_reference")
        batch = Batch(arrays, self.vocab, with_ppo=False)
        mine, count = self.split(batch)
        found = {}
        with torch.no_grad():
            for k in range(count):
                idx = mine[k] if k < len(mine) else []
                lp = self.forward(model, batch, idx, float(h.get("temperature", 1.0)))
                for j, i in enumerate(idx):
                    found[i] = lp[j, :int(batch.rlens[i])].cpu().numpy()
        everyone = [None] * self.world
        dist.all_gather_object(everyone, found)
        out = np.zeros(batch.rtotal, np.float32)
        for part in everyone:
            for i, v in part.items():
                s = int(batch.rstarts[i])
                out[s:s + len(v)] = v
        return {}, {"logprobs": out}

    def op_forward_backward(self, h, arrays):
        import torch
        import torch.distributed as dist
        kind = h.get("loss")
        if kind not in ("ppo", "sft"):
            raise CallError(f"loss {kind!r}: use ppo or sft")
        batch = Batch(arrays, self.vocab, with_ppo=kind == "ppo")
        if batch.n == 0:
            raise CallError("an empty batch")
        mine, count = self.split(batch)
        if self.rank == 0 and self.token_budget > 0:
            print(f"forward_backward: {batch.n} sequences in {len(mine)} micro-batches "
                  f"(token budget {self.token_budget})", flush=True)
        self.model.train()
        # the sequences' losses, the response tokens, the tokens whose ratio the clip bounds
        total = torch.zeros(3, dtype=torch.float64)
        c, eps, beta = (float(self.ppo[k]) for k in ("log_ratio_clamp", "clip_eps", "kl_beta"))
        for k in range(count):
            idx = mine[k] if k < len(mine) else []
            lp = self.forward(self.model, batch, idx,
                              self.temperature if kind == "ppo" else 1.0)
            if not idx:
                lp.backward()
                continue
            t = lambda name: torch.from_numpy(batch.rows(idx, name)).to(self.device)
            mask = t("mask")
            if kind == "sft":
                per = -lp
            else:
                old = t("old")
                adv = torch.from_numpy(batch.adv[idx]).to(self.device).unsqueeze(1)
                ratio = torch.exp(torch.clamp(lp - old, -c, c))
                per = -torch.minimum(ratio * adv, torch.clamp(ratio, 1 - eps, 1 + eps) * adv)
                total[2] += float((((ratio - 1).abs() > eps).to(mask.dtype) * mask).sum())
                if beta > 0:
                    ref = t("ref") if batch.ref is not None else old
                    q = ref - lp
                    per = per + beta * (torch.exp(q) - q - 1)
            seq = (per * mask).sum(1) / mask.sum(1).clamp(min=1.0)
            # this rank's share of the mean over the batch's sequences (summed over ranks)
            (seq.sum() / batch.n).backward()
            total[0] += float(seq.detach().sum())
            total[1] += float(mask.sum())
        dist.all_reduce(total)
        head = {"loss": float(total[0]) / batch.n, "sequences": batch.n,
                "tokens": int(batch.rlens.sum())}
        if kind == "ppo" and total[1] > 0:
            head["clip_fraction"] = float(total[2]) / float(total[1])
        return head, {}

    def op_optim_step(self, _h, _arrays):
        import torch
        grads = [p.grad for p in self.params if p.grad is not None]
        if not grads:
            raise CallError("no gradients: call forward_backward first")
        limit = self.max_grad_norm if self.max_grad_norm > 0 else float("inf")
        norm = torch.nn.utils.clip_grad_norm_(self.params, limit)
        if hasattr(norm, "full_tensor"):
            norm = norm.full_tensor()
        self.opt.step()
        self.opt.zero_grad(set_to_none=True)
        return {"grad_norm": float(norm)}, {}

    def op_set_lr(self, h, _arrays):
        for g in self.opt.param_groups:
            g["lr"] = float(h["lr"])
        return {}, {}

    # --- state -------------------------------------------------------------------------------------

    def op_save_state(self, h, _arrays):
        import torch
        import torch.distributed as dist
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict
        d = h["dir"]
        msd, osd = get_state_dict(self.model, self.opt)
        dcp.save({"model": msd, "optim": osd}, checkpoint_id=d)
        torch.save({"torch": torch.get_rng_state()}, os.path.join(d, f"rng-{self.rank}.pt"))
        dist.barrier()
        return {}, {}

    def op_load_state(self, h, _arrays):
        import torch
        import torch.distributed as dist
        import torch.distributed.checkpoint as dcp
        from torch.distributed.checkpoint.state_dict import get_state_dict, set_state_dict
        d = h["dir"]
        if not os.path.exists(os.path.join(d, ".metadata")):
            raise CallError(f"{d}: no saved learner state (.metadata missing)")
        msd, osd = get_state_dict(self.model, self.opt)
        saved = dcp.FileSystemReader(d).read_metadata().state_dict_metadata
        for k, v in msd.items():
            have = saved.get(f"model.{k}")
            if have is None:
                raise CallError(f"{d}: the saved learner state has no weight {k}: it is another model's")
            if hasattr(have, "size") and tuple(have.size) != tuple(v.shape):
                raise CallError(f"{d}: the saved learner state is another model's: {k} is "
                                f"{list(have.size)} there and {list(v.shape)} here")
        state = {"model": msd, "optim": osd}
        dcp.load(state, checkpoint_id=d)
        set_state_dict(self.model, self.opt, model_state_dict=state["model"], optim_state_dict=state["optim"])
        rng = os.path.join(d, f"rng-{self.rank}.pt")
        if os.path.exists(rng):
            torch.set_rng_state(torch.load(rng)["torch"])
        dist.barrier()
        return {}, {}

    def op_export(self, h, _arrays):
        from safetensors.torch import save_file
        from torch.distributed.checkpoint.state_dict import StateDictOptions, get_model_state_dict
        d, adapter_for = h["dir"], h.get("adapter_for")
        full = get_model_state_dict(self.model, options=StateDictOptions(full_state_dict=True, cpu_offload=True))
        if self.rank != 0:
            return {}, {}
        os.makedirs(d, exist_ok=True)
        peft = hasattr(self.model, "peft_config")
        if adapter_for is not None and not peft:
            raise CallError("the model trains no LoRA adapter to export")
        if peft:
            from peft import get_peft_model_state_dict
            adapter = get_peft_model_state_dict(self.model, state_dict=full)
            cfg = self.model.peft_config["default"]
            base_name = cfg.base_model_name_or_path
            cfg.base_model_name_or_path = adapter_for if adapter_for is not None else "./"
            cfg.inference_mode = True
            cfg.save_pretrained(d)
            cfg.base_model_name_or_path, cfg.inference_mode = base_name, False
            save_file({k: v.contiguous().float() for k, v in adapter.items()},
                      os.path.join(d, "adapter_model.safetensors"), metadata={"format": "pt"})
            if adapter_for is not None:
                return {}, {}
            base = {}
            for k, v in full.items():
                if "lora_" in k:
                    continue
                k = k.replace("base_model.model.", "", 1).replace(".base_layer.", ".")
                base[k] = v
            full = base
        if getattr(self.config, "tie_word_embeddings", False):
            full.pop("lm_head.weight", None)
        # in the compute dtype, as the candle learner saves
        save_file({k: v.to(self.compute).contiguous() for k, v in full.items()},
                  os.path.join(d, "model.safetensors"), metadata={"format": "pt"})
        for name in os.listdir(self.folder):
            src = os.path.join(self.folder, name)
            if os.path.isfile(src) and name not in SKIP and not name.startswith("rng-"):
                shutil.copyfile(src, os.path.join(d, name))
        return {}, {}

    def op_health(self, _h, _arrays):
        import torch
        return {"world": self.world, "torch": torch.__version__, "device": str(self.device),
                "visible_devices": os.environ.get("CUDA_VISIBLE_DEVICES"),
                "ready": self.model is not None}, {}


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def serve(worker, args):
    import torch.distributed as dist
    sock = None
    if worker.rank == 0:
        host, port = args.connect.rsplit(":", 1)
        sock = socket.create_connection((host, int(port)), timeout=60)
        sock.settimeout(None)
        import torch
        send_msg(sock, {"v": PROTOCOL, "op": "hello", "token": os.environ.get("RLA_WORKER_TOKEN", ""),
                        "world": worker.world, "torch": torch.__version__, "pid": os.getpid()})
    while True:
        box = [None]
        if worker.rank == 0:
            try:
                box = [recv_msg(sock)]
            except (ConnectionError, OSError, ValueError) as e:
                box = [({"op": "shutdown", "id": -1, "lost": str(e)}, {})]
        dist.broadcast_object_list(box, src=0)
        header, arrays = box[0]
        op = header.get("op")
        reply = {"v": PROTOCOL, "id": header.get("id"), "ok": True}
        out = {}
        if header.get("v", PROTOCOL) != PROTOCOL and op != "shutdown":
            reply.update(ok=False, error=f"protocol version {header.get('v')} (this worker speaks {PROTOCOL})")
        elif op == "shutdown":
            if sock is not None and header.get("id", -1) >= 0:
                send_msg(sock, reply)
            return
        else:
            fn = getattr(worker, f"op_{op}", None)
            try:
                if fn is None:
                    raise CallError(f"unknown op {op!r}")
                if op not in ("init", "health") and worker.model is None:
                    raise CallError(f"{op} before init")
                got, out = fn(header, arrays)
                reply.update(got)
            except CallError as e:
                reply.update(ok=False, error=str(e))
            except Exception as e:  # the worker's own failure, reported with where it happened
                where = traceback.extract_tb(e.__traceback__)[-1]
                reply.update(ok=False, error=f"{type(e).__name__}: {e} "
                             f"(at {os.path.basename(where.filename)}:{where.lineno})",
                             trace=traceback.format_exc()[-2000:])
        if sock is not None:
            send_msg(sock, reply, out if reply["ok"] else None)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--connect", required=True, help="HOST:PORT of the loop (rank 0 connects)")
    p.add_argument("--cpu", action="store_true", help="stay on the CPU even where CUDA is present")
    p.add_argument("--collective-timeout", type=float, default=1800.0,
                   help="seconds a collective may wait for the other ranks")
    args = p.parse_args()
    worker = Worker(args)
    try:
        serve(worker, args)
    finally:
        import torch.distributed as dist
        if dist.is_initialized():
            dist.destroy_process_group()


if __name__ == "__main__":
    sys.exit(main())
