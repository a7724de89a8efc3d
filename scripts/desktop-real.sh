#!/usr/bin/env bash
# Installs the real desktop that `rlanything desktop serve-real` serves: the Debian packages (an
# X server, a window manager, D-Bus and the accessibility bus, LibreOffice Calc with its GTK
# front end, AT-SPI's Python binding, LibreOffice's own Python binding (UNO: the tree asks it
# which cells hold something), wmctrl; about 130 MB to download) and
# target/desktop-venv, a Python environment that sees the system's pyatspi beside PyPI's
# pyautogui (pyatspi is not on PyPI, pyautogui is not in Debian). Root, or sudo, for the packages.
set -euo pipefail
cd "$(dirname "$0")/.."
export PIP_NO_CACHE_DIR=1
pkgs=(xvfb openbox dbus-x11 at-spi2-core libreoffice-calc libreoffice-gtk3 python3-pyatspi
  python3-uno python3-tk python3-xlib python3-venv python3-pip wmctrl)
missing=()
for p in "${pkgs[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  sudo=""
  if [ "$(id -u)" != 0 ]; then
    command -v sudo >/dev/null 2>&1 || {
      echo "error: the real desktop needs the Debian packages ${missing[*]}; install them as root" >&2
      exit 1
    }
    sudo=sudo
  fi
  echo "== Debian packages: ${missing[*]}"
  # the GUI package replaces the headless one
  if dpkg-query -W -f='${Status}' libreoffice-calc-nogui 2>/dev/null | grep -q "ok installed"; then
    DEBIAN_FRONTEND=noninteractive $sudo apt-get remove -y -qq libreoffice-calc-nogui >/dev/null
  fi
  $sudo apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
venv=target/desktop-venv
if [ ! -x "$venv/bin/python" ]; then
  # Debian's Python: pyatspi is built for it
  /usr/bin/python3 -m venv --system-site-packages "$venv"
fi
"$venv/bin/pip" install -q pyautogui==0.9.54 pillow==11.3.0
# pyautogui opens the X display when imported: it is looked up here, imported by the server
"$venv/bin/python" -c "import importlib.util, sys, pyatspi, uno, tkinter, PIL; sys.exit(importlib.util.find_spec('pyautogui') is None)"
echo "real desktop ready: $venv/bin/python ($(soffice --version | head -1))"
