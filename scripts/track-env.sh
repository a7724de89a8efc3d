#!/usr/bin/env bash
# Installs TensorBoard and the Weights & Biases client into target/track-venv, where the
# trackers' tests read a run's curves back with TensorBoard's own reader and W&B's offline run
# files (or set RLA_TRACK_PYTHON to another interpreter that has both). About 280 MB.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/track-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q tensorboard==2.21.0 wandb==0.31.0
"$venv/bin/python" -c "import tensorboard, wandb; print('trackers ready: tensorboard', tensorboard.__version__, 'wandb', wandb.__version__)"
