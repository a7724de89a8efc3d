#!/usr/bin/env bash
# Installs the official `openai` Python client into target/openai-venv, where the serve test
# finds it (or set RLA_OPENAI_PYTHON to another interpreter that has it).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/openai-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q openai==1.109.1
"$venv/bin/python" -c "import openai; print('openai client ready:', openai.__version__)"
