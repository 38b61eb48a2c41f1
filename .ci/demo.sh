#!/usr/bin/env bash
# The main job: set up, start the Deskhand daemon (deskhandctl starts it on demand) and show
# its status. Leaves the daemon running; stop it with `.venv/bin/deskhandctl shutdown`.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
exec .venv/bin/deskhandctl status
