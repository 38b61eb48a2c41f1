"""Benchmark: the AT-SPI backend on the real gnome-calculator, in a private Xvfb desktop.

* ``get_app_state`` warm (after one observation), timed as the daemon sees it: one MCP
  ``tools/call`` over stdio to ``python -m deskhand_d.backends.atspi``, tree text and PNG
  screenshot included, divided by a **reference full dump** of the same window with Debian's
  libatspi through python3-gi (``bench/atspi_reference.py``, warm walks) in the same run.
  Target: <= 0.5.
* action latency: ``click`` by index on a keypad button (the answer comes back after the
  action has been delivered and the window observed again, as Sky does), p50 and p95; and
  ``press_key`` of a digit, which goes through XTest and so through the input-target guard.
* the input-target guard itself (``deskhand_d/backends/atspi/x11guard.py``): one key batch
  (Shift pressed and released on the focused Calculator) timed in-process with and without
  the guard's server grab and owner check, in the same run; the difference is what every
  guarded batch adds.

Run it alone as ``.venv/bin/python bench/atspi.py`` (JSON on stdout); ``bench/run.py``
imports :func:`measure_atspi` and skips it where there is no Xvfb or gnome-calculator.
"""

from __future__ import annotations

import json
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from dhtest.mcpstdio import McpChild  # noqa: E402

from deskhand_d.backends import xsession  # noqa: E402
from deskhand_d.jev import ax  # noqa: E402

RUNS = 30
CLICKS = 40
GUARD_BATCHES = 300
TARGET = 0.5
APP = "gnome-calculator"


def available() -> str:
    """Empty when the benchmark can run here, else what is missing."""
    missing = xsession.missing_binaries()
    for name in (APP, "/usr/bin/python3"):
        if shutil.which(name) is None:
            missing.append(name)
    return ", ".join(missing)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def measure_atspi() -> dict[str, Any]:
    desk = xsession.start_desktop(apps=(APP,))
    try:
        child = McpChild([sys.executable, "-m", "deskhand_d.backends.atspi"], desk.env, cwd=ROOT)
        try:
            return _measure(desk, child)
        finally:
            child.close()
    finally:
        desk.close()


def _measure(desk: xsession.Desktop, child: McpChild) -> dict[str, Any]:
    # first observation: waits for the app, walks GTK4's lazily created tree
    deadline = time.monotonic() + 30
    while True:
        first = child.call("get_app_state", app="Calculator")
        if not first.is_error and " 6" in first.text:
            break
        assert time.monotonic() < deadline, first.text
        time.sleep(0.3)
    state_ms: list[float] = []
    nodes = 0
    for _ in range(RUNS):
        start = time.perf_counter()
        result = child.call("get_app_state", app="Calculator")
        state_ms.append((time.perf_counter() - start) * 1000)
        assert not result.is_error and result.images, result.text
        nodes = len(ax.parse(result.text).elements)
    ref = subprocess.run(
        ["/usr/bin/python3", str(ROOT / "bench" / "atspi_reference.py"), APP, str(RUNS)],
        env={**desk.env, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if ref.returncode != 0:
        raise RuntimeError(f"the reference dump failed: {ref.stderr.strip()[-2000:]}")
    reference = json.loads(ref.stdout.strip().splitlines()[-1])
    tree = ax.parse(child.call("get_app_state", app="Calculator").text)
    button = next(e.index for e in tree.elements if "button" in e.role and e.label == "6")
    click_ms: list[float] = []
    for _ in range(CLICKS):
        start = time.perf_counter()
        done = child.call("click", app="Calculator", element_index=str(button))
        click_ms.append((time.perf_counter() - start) * 1000)
        assert not done.is_error, done.text
    key_ms: list[float] = []
    for _ in range(CLICKS):
        start = time.perf_counter()
        done = child.call("press_key", app="Calculator", key="6")
        key_ms.append((time.perf_counter() - start) * 1000)
        assert not done.is_error, done.text
    guard = _guard_cost(desk)
    state = statistics.median(state_ms)
    dump = statistics.median(reference["walk_ms"])
    return {
        "get_app_state_ms": round(state, 2),
        "get_app_state_p95_ms": round(_p(state_ms, 0.95), 2),
        "elements": nodes,
        "reference_dump_ms": round(dump, 2),
        "reference_nodes": reference["nodes"],
        "ratio": round(state / dump, 3),
        "target": TARGET,
        "click_p50_ms": round(statistics.median(click_ms), 2),
        "click_p95_ms": round(_p(click_ms, 0.95), 2),
        "press_key_p50_ms": round(statistics.median(key_ms), 2),
        "press_key_p95_ms": round(_p(key_ms, 0.95), 2),
        **guard,
        "guard_share_of_press_key": round(guard["guard_added_ms"] / statistics.median(key_ms), 4),
    }


def _guard_cost(desk: xsession.Desktop) -> dict[str, float]:
    """One key batch with and without the input-target guard, alternating, in-process."""
    from deskhand_d.backends.atspi.x11 import X11
    from deskhand_d.backends.atspi.x11guard import Guard

    pid = desk.apps[APP].pid
    guard = Guard(pid=pid)
    plain: list[float] = []
    guarded: list[float] = []
    with X11.open(desk.display) as x:
        x.activate_pid(pid, focus=True)
        for _ in range(GUARD_BATCHES):
            for sample, g in ((plain, None), (guarded, guard)):
                start = time.perf_counter()
                x.press_key("shift", guard=g)
                sample.append((time.perf_counter() - start) * 1000)
    base, checked = statistics.median(plain), statistics.median(guarded)
    return {
        "key_batch_ms": round(base, 3),
        "key_batch_guarded_ms": round(checked, 3),
        "guard_added_ms": round(checked - base, 3),
    }


if __name__ == "__main__":
    missing = available()
    if missing:
        sys.exit(f"bench/atspi.py needs {missing} (run .ci/setup-desktop.sh)")
    print(json.dumps(measure_atspi()))
