#!/usr/bin/env bash
# The GPU check of the PyTorch learner, one prepared script for a machine with GPUs, PyTorch
# (CUDA), transformers and peft, and no network: the worker against plain PyTorch on the device
# (NCCL), then full fine-tuning of a Qwen2.5-1.5B-shaped model and LoRA r = 64 on a
# Qwen2.5-7B-shaped one (random weights from their configs) at 4k and 16k tokens a step, with
# tokens/s, peak memory and MFU (benchmarks/gpu_check.py). About 5 minutes on one H200.
#   scripts/gpu-check.sh                  # every GPU of this machine (NPROC=1 for one)
#   scripts/gpu-check.sh --smoke          # toy sizes on whatever device there is (CI: the CPU)
#   PYTHON=target/peft-venv/bin/python scripts/gpu-check.sh --smoke
set -euo pipefail
cd "$(dirname "$0")/.."
py=${PYTHON:-python3}
if [ -z "${NPROC:-}" ]; then
  NPROC=$("$py" -c "import torch; print(max(1, torch.cuda.device_count()))")
fi
exec "$py" -m torch.distributed.run --standalone --nnodes=1 --nproc-per-node="$NPROC" \
  benchmarks/gpu_check.py "$@"
