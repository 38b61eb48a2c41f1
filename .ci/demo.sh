#!/usr/bin/env bash
# The main job: set up, then do a real task through the daemon: observe Calculator, press
# 6 + 7 =, check that the display shows 13 and save a screenshot of it. On Linux that is the
# real gnome-calculator driven through AT-SPI (in a private Xvfb desktop when no desktop is
# present, or a private headless GNOME Wayland session with DESKHAND_DEMO_SESSION=wayland);
# elsewhere, or when no desktop can be had, the simulated desktop. `deskhandctl demo` starts its
# own daemon with a throwaway profile and stops everything it started at the end.
set -euo pipefail
cd "$(dirname "$0")/.."
bash .ci/setup.sh
session=()
if [ "${DESKHAND_DEMO_SESSION:-x11}" = "wayland" ]; then
  session=(--wayland)
fi
exec .venv/bin/deskhandctl demo "${session[@]}" \
  --screenshot "${DESKHAND_DEMO_SCREENSHOT:-$PWD/deskhand-demo.png}"
