#!/usr/bin/env bash
# The whole test suite: set up, then run every test (unit, daemon, CLI, units, packaging,
# lint and type checks). Extra arguments go to pytest.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
exec .venv/bin/python -m pytest "$@"
