#!/usr/bin/env bash
# Creates target/py-venv with ALFWorld 0.4.2 (its engine, for the Python package's parity
# tests), pytest and NumPy; scripts/python-tests.sh builds the package into it.
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/py-venv
if [ ! -x "$venv/bin/python" ]; then
  python3 -m venv "$venv"
fi
if ! "$venv/bin/python" -c "import alfworld, pytest, numpy" 2>/dev/null; then
  # alfworld 0.4.2 builds fast-downward-textworld and jericho from source (g++), about 3 minutes
  "$venv/bin/pip" install -q alfworld==0.4.2 pytest numpy
fi
"$venv/bin/python" -c "import alfworld, pytest, numpy; print('ALFWorld ready')"
