#!/usr/bin/env bash
# Builds and installs the Python package (`pip install .`, maturin with PyO3) into
# target/py-venv beside ALFWorld 0.4.2, pytest and NumPy, then runs its tests: ALFWorld's own
# engine is required there (RLA_REQUIRE_ALFWORLD=1), so its parity tests cannot be skipped.
# Extra arguments go to pytest (`scripts/python-tests.sh -k rules`).
set -euo pipefail
cd "$(dirname "$0")/.."
venv=target/py-venv
# The test build of the wheel uses cargo's dev profile (optimised dependencies, the workspace at
# opt-level 1), whose compiled crates `cargo test --workspace` has already made: the wheel profile
# (what `pip install .` builds for a user) would compile the command line's dependencies again.
export MATURIN_PEP517_ARGS="${MATURIN_PEP517_ARGS:---profile dev}"
scripts/python-env.sh
"$venv/bin/pip" install -q .
# the README's one command in a virtual environment that holds nothing else
bare=target/py-venv-bare
rm -rf "$bare"
python3 -m venv "$bare"
"$bare/bin/pip" install -q .
"$bare/bin/python" -c "import rlanything.household, rlanything.rules, rlanything.sandbox, rlanything.desktop, rlanything.alfworld.agents.environment; print('pip install . in a bare venv:', rlanything.__version__)"
# the package's `rlanything` command (the CLI through the extension module)
help=$("$bare/bin/rlanything" --help)
grep -q "Usage: rlanything" <<<"$help" || { echo "rlanything --help: $help" >&2; exit 1; }
"$bare/bin/python" -m rlanything --version
RLA_REQUIRE_ALFWORLD=1 "$venv/bin/python" -m pytest -q python/tests "$@"
