#!/usr/bin/env bash
# The test command: installs what the tests need (scripts/setup-tests.sh; skipped part by part
# when already there), then runs every test: the Rust workspace (unit, integration and
# conformance tests), the Python package's suite, and the fault script.
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/setup-tests.sh
echo "== cargo test --workspace"
cargo test --workspace
echo "== the Python package (pip install . beside ALFWorld 0.4.2, then pytest)"
scripts/python-tests.sh
echo "== the fault script"
scripts/faults.sh
