#!/usr/bin/env bash
# The real agent hosts for the host tests (issue 27): Claude Code and Codex CLI, pinned, from the
# npm registry, installed with the Node 22 of .ci/.node into .ci/.hosts/node_modules
# (claude: .ci/.hosts/node_modules/.bin/claude, codex: .ci/.hosts/node_modules/.bin/codex).
# Idempotent: a second run only checks.
#
# Both packages carry their program as a per-platform optional dependency (Claude Code's
# postinstall links bin/claude.exe to @anthropic-ai/claude-code-<platform>'s binary; Codex's
# bin/codex.js runs @openai/codex-<platform>'s vendored binary), so optional dependencies and
# install scripts must not be turned off. The check below runs both programs' --version.
set -euo pipefail
cd "$(dirname "$0")/.."

CLAUDE_CODE_VERSION=2.1.332
CODEX_VERSION=0.171.0

HOSTS_DIR=.ci/.hosts
NODE_BIN=.ci/.node/node_modules/node/bin/node
CLAUDE="$HOSTS_DIR/node_modules/.bin/claude"
CODEX="$HOSTS_DIR/node_modules/.bin/codex"
STAMP="$HOSTS_DIR/node_modules/.deskhand-hosts-$CLAUDE_CODE_VERSION-$CODEX_VERSION"

if [ ! -x "$NODE_BIN" ]; then
  bash .ci/setup-node.sh
fi
NODE_BIN_DIR="$(cd "$(dirname "$NODE_BIN")" && pwd)"
export PATH="$NODE_BIN_DIR:$PATH"

hosts_ok() {
  [ -f "$STAMP" ] || return 1
  "$CLAUDE" --version 2>/dev/null | grep -q "^$CLAUDE_CODE_VERSION " || return 1
  "$CODEX" --version 2>/dev/null | grep -q " $CODEX_VERSION\$" || return 1
}

if ! hosts_ok; then
  echo "setup-hosts: installing @anthropic-ai/claude-code@$CLAUDE_CODE_VERSION and" \
    "@openai/codex@$CODEX_VERSION into $HOSTS_DIR" >&2
  mkdir -p "$HOSTS_DIR"
  rm -f "$HOSTS_DIR"/node_modules/.deskhand-hosts-*
  # Only node_modules/ is written there (no package.json or lockfile), which git ignores.
  # Updates and telemetry are off in the tests' environment, not here: npm does not run them.
  npm install --prefix "$HOSTS_DIR" --no-save --no-package-lock --no-audit --no-fund \
    --loglevel=error --ignore-scripts=false --include=optional \
    "@anthropic-ai/claude-code@$CLAUDE_CODE_VERSION" "@openai/codex@$CODEX_VERSION" >&2
  touch "$STAMP"
  if ! hosts_ok; then
    echo "setup-hosts: $CLAUDE or $CODEX is missing or not the pinned version after the install" >&2
    "$CLAUDE" --version >&2 || true
    "$CODEX" --version >&2 || true
    rm -f "$STAMP"
    exit 1
  fi
fi
echo "setup-hosts: claude $("$CLAUDE" --version 2>/dev/null), $("$CODEX" --version 2>/dev/null)" >&2
