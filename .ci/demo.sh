#!/usr/bin/env bash
# The main job: set up, then do a real task on the simulated desktop through the daemon —
# observe Calculator, press 6 + 7 =, observe again and check that the display shows 13.
# It runs its own daemon on a private demo socket (so it never drives a real desktop), started
# on demand by deskhandctl, and stops it at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh

export DESKHAND_SOCKET="${XDG_RUNTIME_DIR:-/tmp}/deskhand-demo-$(id -u)/deskhand.sock"
export DESKHAND_BACKEND=sim
# A throwaway profile (allowlist, consent grants, audit log), never your own.
profile="${XDG_RUNTIME_DIR:-/tmp}/deskhand-demo-profile-$(id -u)"
mkdir -p -m 700 "$profile/state"
export DESKHAND_CONFIG="$profile/config.toml" XDG_STATE_HOME="$profile/state"
if [ ! -t 0 ]; then
  # Nobody at a terminal to answer the two questions a person would see: Deskhand's own
  # consent for Calculator and the simulated "Allow ChatGPT to use Calculator?" prompt. Stand in
  # for the answers: an "always" for the simulated Calculator in the throwaway profile, and a
  # simulated desktop that starts with Calculator approved. At a terminal, you answer both.
  export DESKHAND_SIM_SCENARIO='{"preapproved": ["Calculator"]}'
  .venv/bin/python - "$profile/grants.json" <<'PY'
import sys
from deskhand_d.consent.catalog import CatalogPlatform
from deskhand_d.consent.grants import GrantsFile
GrantsFile(sys.argv[1]).add(CatalogPlatform().identify("Calculator"))
PY
fi
ctl=.venv/bin/deskhandctl
field() { .venv/bin/python -c "import json, sys; print(json.load(sys.stdin).get('$1') or '')"; }
trap '$ctl --no-autostart shutdown >/dev/null 2>&1 || true' EXIT

$ctl status
state=$($ctl --json observe Calculator | field state_id)
for key in 6 plus 7 Return; do
  echo "press $key"
  next=$($ctl --json press --app Calculator --state "$state" "$key" | field state_id)
  # An action that returns a full tree comes with a fresh stateId; otherwise observe again.
  state=${next:-$($ctl --json observe Calculator | field state_id)}
done
result=$($ctl --json observe Calculator | field text)
printf '%s\n' "$result" | grep -E '^[[:space:]]*[0-9]+ text ' || true
if printf '%s\n' "$result" | grep -qE '^[[:space:]]*[0-9]+ text .?13$'; then
  echo "Calculator shows 13: done."
else
  echo "Calculator does not show 13" >&2
  exit 1
fi
