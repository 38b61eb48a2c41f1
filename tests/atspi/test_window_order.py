"""Two real apps on one private desktop without a window manager: the app Deskhand works in is
brought to the front for its screenshot, and gets the keyboard for typed keys, whichever window
was on top before (X11 sends keys to the focused window and screenshots show the top one)."""

from __future__ import annotations

import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import McpChild
from Xlib import Xatom
from Xlib import display as xdisplay

from deskhand_d import ax

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def desk() -> Iterator[Desktop]:
    with desktop_or_skip(require=("gnome-calculator", "galculator")) as d:
        yield d


def top_pid(display: str) -> int:
    """The ``_NET_WM_PID`` of the topmost mapped top-level window."""
    conn = xdisplay.Display(display)
    try:
        root = conn.screen().root
        wm_pid = conn.intern_atom("_NET_WM_PID")
        for window in reversed(root.query_tree().children):
            if window.get_attributes().map_state != 2:  # IsViewable
                continue
            prop = window.get_full_property(wm_pid, Xatom.CARDINAL)
            if prop is not None and prop.value:
                return int(prop.value[0])
        return 0
    finally:
        conn.close()


def observe(c: McpChild, app: str, needle: str) -> ax.Tree:
    for _ in range(60):
        result = c.call("get_app_state", app=app)
        assert not result.is_error, result.text
        if needle in result.text:
            return ax.parse(result.text)
        time.sleep(0.3)
    raise AssertionError(f"{app}: no {needle!r} in\n{result.text}")


def shows(tree: ax.Tree, value: str) -> bool:
    return any(e.role.startswith("text") and value in e.label for e in tree.elements)


def test_the_app_in_use_comes_to_the_front_and_gets_the_keys(desk: Desktop) -> None:
    c = McpChild([sys.executable, "-m", "deskhand_d.programs.atspi"], desk.env, cwd=ROOT)
    try:
        calc = observe(c, "Calculator", " 6")  # gnome-calculator, started by the backend
        galc = observe(c, "galculator", "toggle button")  # started later: now on top
        assert top_pid(desk.display) == galc.pid
        calc = observe(c, "Calculator", " 6")  # its screenshot needs it in front
        assert top_pid(desk.display) == calc.pid
        # Keys typed for galculator reach galculator, although Calculator is on top.
        observe(c, "galculator", "toggle button")
        typed = c.call("type_text", app="galculator", text="12+1")
        assert not typed.is_error, typed.text
        pressed = c.call("press_key", app="galculator", key="Return")
        assert not pressed.is_error, pressed.text
        for _ in range(25):
            if shows(observe(c, "galculator", "toggle button"), "13"):
                break
            time.sleep(0.2)
        assert shows(observe(c, "galculator", "toggle button"), "13")
        assert top_pid(desk.display) == galc.pid
    finally:
        c.close()
