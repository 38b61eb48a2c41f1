"""Benchmark: the same actions on X11 and on Wayland, same apps, same run.

Each session kind gets a private desktop of its own with the real gnome-calculator (GTK 4),
and then gnome-text-editor: Xvfb (input through XTest under the X11 input guard) and a
headless GNOME compositor, Mutter, with PipeWire (input through Mutter's remote-desktop
interface, every batch sent only after a frame of the focused window proved it the app's,
pictures from its screen cast). Through the ``tools/call`` of ``python -m
deskhand_d.programs.atspi``, as the daemon calls it:

* a click with its reply (the action delivered, the app's answer settled, the tree and the
  screenshot taken again): by coordinates at Calculator's ``6`` key (the compositor's pointer
  on Wayland), and by index (the element's own accessibility action, no input path at all);
* ``press_key`` of a digit with its reply;
* ``type_text`` of ``12345+67890=`` into Calculator, and of 200 characters of words into Text
  Editor's text view, each read back.

p50 and p95 per kind, and the Wayland / X11 ratio of each p50. The portal's path (the
default on a person's session) is not timed here: it sends the same events through the
portal's two processes, after the person's approval, which no benchmark should give.

Run it alone as ``.venv/bin/python bench/wayland.py`` (JSON on stdout); ``bench/run.py``
imports :func:`measure_wayland` and skips it where Xvfb, Mutter or the apps are missing.
"""

from __future__ import annotations

import json
import shutil
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests", ROOT / "bench"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from atspi import _centre, _display, _first_state, _index, _p, _timed  # noqa: E402
from dhtest.mcpstdio import McpChild  # noqa: E402

from deskhand_d.programs import xsession  # noqa: E402

RUNS = 20
CALC = "gnome-calculator"
EDITOR = "gnome-text-editor"
SUM = "12345+67890="
WORDS = (
    "the quick brown fox jumps over a lazy dog while seven wizards quietly hex five "
    "jumbo boxing judges and a vexed quartz sphinx listens to the distant waltz of "
    "nymphs; pack my box with five dozen liquor jugs, then sing of sixty zebras now "
)[:200]


def available() -> str:
    """Empty when the benchmark can run here, else what is missing."""
    missing = sorted(
        set(xsession.missing_binaries()) | set(xsession.missing_binaries(session="wayland"))
    )
    for name in (CALC, EDITOR, "gst-launch-1.0"):
        if shutil.which(name) is None:
            missing.append(name)
    return ", ".join(missing)


def _stats(ms: list[float]) -> dict[str, float]:
    return {"p50_ms": round(statistics.median(ms), 1), "p95_ms": round(_p(ms, 0.95), 1)}


def _server(desk: xsession.Desktop) -> McpChild:
    env = {**desk.env, "DESKHAND_WAYLAND_INPUT": "mutter"}
    return McpChild([sys.executable, "-m", "deskhand_d.programs.atspi"], env, cwd=ROOT)


def _calculator(desk: xsession.Desktop) -> dict[str, Any]:
    child = _server(desk)
    try:
        text = _first_state(child, "Calculator", " 6")
        # The window takes the keyboard a moment after its tree is there (Wayland): until
        # then it has no screenshot.
        deadline = time.monotonic() + 20
        while not child.call("get_app_state", app="Calculator").images:
            assert time.monotonic() < deadline, "Calculator never had the keyboard"
            time.sleep(0.2)
        x, y = _centre(desk.env, "Calculator", "6")
        six = str(_index(text, "6"))

        def cleared(_: int) -> None:
            child.call("press_key", app="Calculator", key="Escape")

        def shows_six(done: Any) -> None:
            assert _display(done.text).endswith("6"), done.text[-300:]
            cleared(0)

        out: dict[str, Any] = {}
        out["click_xy"] = _stats(
            _timed(RUNS, lambda _: child.call("click", app="Calculator", x=x, y=y), shows_six)
        )
        out["click_index"] = _stats(
            _timed(
                RUNS,
                lambda _: child.call("click", app="Calculator", element_index=six),
                shows_six,
            )
        )
        out["press_key"] = _stats(
            _timed(RUNS, lambda _: child.call("press_key", app="Calculator", key="6"), shows_six)
        )

        def summed(done: Any) -> None:
            assert _display(done.text) == "80235", done.text[-300:]
            cleared(0)

        out["type_sum"] = _stats(
            _timed(RUNS, lambda _: child.call("type_text", app="Calculator", text=SUM), summed)
        )
        return out
    finally:
        child.close()


def _editor(desk: xsession.Desktop) -> dict[str, Any]:
    child = _server(desk)
    try:
        text = _first_state(child, "Text Editor", "text entry area")
        area = next(ln for ln in text.splitlines() if "text entry area" in ln)
        index = area.strip().split(" ", 1)[0]
        done = child.call("click", app="Text Editor", element_index=index)
        assert not done.is_error, done.text

        def typed(done: Any) -> None:
            assert WORDS in done.text, done.text[-400:]
            wiped = child.call("press_key", app="Text Editor", key="ctrl+a")
            assert not wiped.is_error, wiped.text
            wiped = child.call("press_key", app="Text Editor", key="BackSpace")
            assert not wiped.is_error, wiped.text

        ms = _timed(
            RUNS // 2,
            lambda _: child.call("type_text", app="Text Editor", text=WORDS),
            typed,
        )
        return {"type_200": _stats(ms)}
    finally:
        child.close()


def measure_wayland() -> dict[str, Any]:
    results: dict[str, Any] = {}
    for kind in ("x11", "wayland"):
        row: dict[str, Any] = {}
        with xsession.private_desktop(session=kind) as desk:
            row.update(_calculator(desk))
        with xsession.private_desktop(session=kind) as desk:
            row.update(_editor(desk))
        results[kind] = row
    results["ratio_wayland_over_x11"] = {
        name: round(results["wayland"][name]["p50_ms"] / results["x11"][name]["p50_ms"], 2)
        for name in results["x11"]
    }
    return results


if __name__ == "__main__":
    missing = available()
    if missing:
        print(json.dumps({"skipped": missing}))
        sys.exit(0)
    print(json.dumps(measure_wayland(), indent=2))
