#!/usr/bin/env bash
# Installs PyTorch (the CPU-only import of PyPI's wheel), transformers and peft into
# target/peft-venv, where the LoRA export test finds them (or set RLA_PEFT_PYTHON to another
# interpreter that has them).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/peft-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
# --no-deps: PyPI's torch wheel otherwise pulls ~3 GB of CUDA libraries the CPU never uses
"$venv/bin/pip" install -q --no-deps torch==2.5.1
"$venv/bin/pip" install -q filelock typing_extensions sympy==1.13.1 networkx jinja2 fsspec numpy \
  transformers==4.55.4 peft==0.17.1 accelerate
"$venv/bin/python" -c "import torch, transformers, peft; print('peft ready:', torch.__version__, transformers.__version__, peft.__version__)"
