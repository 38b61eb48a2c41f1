#!/usr/bin/env bash
# Node 22 for the pi extension (clients/pi), its tests and the MCP TypeScript SDK test peer.
# Idempotent: a second run only checks.
#
# The machine's Node is 20 (or absent) and Debian only ships 18, while pi needs >= 22.19. The
# npm registry's `node@22` package carries the official binary, so we install that into
# .ci/.node (node: .ci/.node/node_modules/node/bin/node) with whatever npm is at hand (Debian's
# `npm` package is installed first if there is none), then install clients/pi's packages from
# its lockfile with that Node first on PATH.
set -euo pipefail
cd "$(dirname "$0")/.."

NODE_DIR=.ci/.node
NODE_BIN="$NODE_DIR/node_modules/node/bin/node"
NODE_SPEC="node@22"
PI_DIR=clients/pi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then SUDO="sudo"; fi

node_ok() {
  [ -x "$NODE_BIN" ] || return 1
  "$NODE_BIN" -e '
    const [maj, min] = process.versions.node.split(".").map(Number);
    process.exit(maj === 22 && min >= 19 ? 0 : 1);
  ' >/dev/null 2>&1
}

if ! node_ok; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "setup-node: no npm on this machine; installing Debian's npm package" >&2
    export DEBIAN_FRONTEND=noninteractive
    $SUDO apt-get update -qq
    $SUDO apt-get install -y -qq --no-install-recommends npm >/dev/null
  fi
  echo "setup-node: installing $NODE_SPEC from the npm registry into $NODE_DIR" >&2
  mkdir -p "$NODE_DIR"
  # Only node_modules/ is written there (no package.json or lockfile), which git ignores.
  # The package's install script puts the platform's binary in place, so scripts must run.
  npm install --prefix "$NODE_DIR" --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error --ignore-scripts=false "$NODE_SPEC" >&2
  if ! node_ok; then
    echo "setup-node: $NODE_BIN is missing or not Node >= 22.19 after the install" >&2
    exit 1
  fi
fi

NODE_BIN_DIR="$(cd "$(dirname "$NODE_BIN")" && pwd)"
export PATH="$NODE_BIN_DIR:$PATH"

# npm itself is a Node script: with Node 22 first on PATH it runs under Node 22. Each package
# directory is installed from its lockfile: the pi extension, and the test peer that drives
# `deskhandctl mcp` with the official MCP TypeScript SDK client.
for dir in "$PI_DIR" tests/peers/mcp-ts; do
  stamp="$dir/node_modules/.deskhand-installed"
  if [ ! -f "$stamp" ] || [ "$dir/package-lock.json" -nt "$stamp" ] \
    || [ "$dir/package.json" -nt "$stamp" ]; then
    echo "setup-node: installing $dir's packages" >&2
    (cd "$dir" && npm ci --no-audit --no-fund --loglevel=error >&2)
    touch "$stamp"
  fi
done
echo "setup-node: $("$NODE_BIN" --version) at $NODE_BIN" >&2
