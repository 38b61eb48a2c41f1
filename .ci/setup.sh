#!/usr/bin/env bash
# Install everything Deskhand needs on a fresh Debian machine: system packages, the venv, the
# Linux desktop stack for the AT-SPI backend, and Node 22 for the pi extension.
# Idempotent: a second run only checks. Used by the README's two commands and by CI.
set -euo pipefail
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

# command -> Debian package that provides it
declare -A NEEDS=(
  [systemd-analyze]=systemd
  [systemd-socket-activate]=systemd
  [xmllint]=libxml2-utils
  [strace]=strace    # tests/daemon/test_child_secrets.py reads the environment of consent's tools
)
missing=()
for cmd in "${!NEEDS[@]}"; do
  command -v "$cmd" >/dev/null 2>&1 || missing+=("${NEEDS[$cmd]}")
done
python3 -c 'import venv, ensurepip' >/dev/null 2>&1 || missing+=(python3-venv)
if [ "${#missing[@]}" -gt 0 ]; then
  echo "setup: installing Debian packages: ${missing[*]}" >&2
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  # shellcheck disable=SC2046
  $SUDO apt-get install -y -qq --no-install-recommends $(printf '%s\n' "${missing[@]}" | sort -u) >/dev/null
fi

python3 - <<'PY'
import sys
if sys.version_info < (3, 11):
    sys.exit(f"setup: Deskhand needs Python 3.11 or newer, this is {sys.version.split()[0]}")
PY

if [ ! -x .venv/bin/python ]; then
  echo "setup: creating .venv" >&2
  python3 -m venv .venv
fi
stamp=.venv/.deskhand-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  echo "setup: installing Python packages into .venv" >&2
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e '.[dev]'
  touch "$stamp"
fi

# Linux: the desktop stack for the AT-SPI backend, its tests and the demo (Xvfb, the buses,
# gnome-calculator, galculator). Everywhere: Node 22 and the pi extension's packages.
if [ "$(uname -s)" = Linux ]; then
  bash .ci/setup-desktop.sh
fi
bash .ci/setup-node.sh
bash .ci/setup-hosts.sh
