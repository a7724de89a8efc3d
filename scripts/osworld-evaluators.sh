#!/usr/bin/env bash
# Installs OSWorld's spreadsheet evaluators (desktop-env 1.0.2's table metrics, with the
# pandas/numpy/openpyxl versions it pins) into target/osworld-venv, where rla-desktop's
# conformance test finds them (or set RLA_OSWORLD_PYTHON to another interpreter).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/osworld-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
"$venv/bin/pip" install -q -r crates/rla-desktop/tests/osworld/requirements.txt
# --no-deps: the package's other dependencies (torch, easyocr, …) are not needed for table.py
"$venv/bin/pip" install -q --no-deps desktop-env==1.0.2
"$venv/bin/python" -c "import pandas, openpyxl; print('OSWorld evaluators ready: pandas', pandas.__version__, 'openpyxl', openpyxl.__version__)"
