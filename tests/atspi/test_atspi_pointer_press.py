"""A click by index on a GTK button goes through the pointer only where that is provably safe.

GTK presses a button through its AT-SPI ``click`` action only when its 250 ms activation
timeout ends, so the backend clicks such a button with the pointer at its centre instead, but
only when the app's own window is the top-most one there (nothing of another app or of its own
popups over it) and no client holds a pointer grab; otherwise it uses the action as before. On
a private desktop with gnome-calculator (GTK 4) above a witness app of our own that records
every pointer event it receives (``tests/peers/witness.py``): an uncovered button is pressed
with the pointer, a covered one through its action, and the witness receives nothing either
way. Each reply shows the digit pressed.
"""

from __future__ import annotations

import re
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from mcpclient import Server, serving
from test_input_target import Witness, xdotool

pytestmark = pytest.mark.slow

DISPLAY = r"text entry area \(settable, string\) Value: ([^,\n]*)"


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("gnome-calculator", "xdotool")) as desk:
        if not Path("/usr/bin/python3").exists():
            pytest.skip("the witness app needs /usr/bin/python3 with PyGObject")
        yield desk


@pytest.fixture(scope="module")
def witness(desktop: Desktop) -> Witness:
    return Witness(desktop)  # first, so Calculator maps above it


@pytest.fixture(scope="module")
def server(desktop: Desktop, witness: Witness) -> Iterator[Server]:
    with serving(desktop.env, desktop.root) as s:
        yield s


def _ready(server: Server) -> str:
    deadline = time.monotonic() + 30
    while True:
        text, _, err = server.tool("get_app_state", app="Calculator")
        if not err and re.search(r"button 9(?:,|$)", text, re.M):
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.3)


def _button(text: str, label: str) -> str:
    m = re.search(rf"^\t*(\d+) button {re.escape(label)}(?:,|$)", text, re.M)
    assert m is not None, f"no button {label!r} in:\n{text}"
    return m.group(1)


def _display(text: str) -> str:
    m = re.search(DISPLAY, text, re.M)
    assert m is not None, text
    return m.group(1).strip()


def _pointer(desk: Desktop) -> tuple[int, int]:
    out = subprocess.run(
        ["xdotool", "getmouselocation"], env=desk.env, capture_output=True, text=True, check=True
    ).stdout
    found = re.search(r"x:(\d+) y:(\d+)", out)
    assert found is not None, out
    return int(found.group(1)), int(found.group(2))


def test_an_uncovered_button_is_pressed_with_the_pointer(
    desktop: Desktop, witness: Witness, server: Server
) -> None:
    """The pointer ends on the button (it was elsewhere), and the reply shows the digit."""
    text = _ready(server)
    server.tool("press_key", app="Calculator", key="Escape")
    text, _, _ = server.tool("get_app_state", app="Calculator")
    xdotool(desktop, "mousemove", "1", "1")
    text, _, err = server.tool("click", app="Calculator", element_index=_button(text, "7"))
    assert not err, text
    assert _display(text) == "7"
    assert _pointer(desktop) != (1, 1), "the button was not pressed with the pointer"
    assert witness.received() == []


def test_a_covered_button_is_pressed_through_its_action(
    desktop: Desktop, witness: Witness, server: Server
) -> None:
    """With the witness over the whole screen the pointer would reach the witness: the
    button is pressed through its action, the pointer stays, the witness gets nothing."""
    text = _ready(server)
    server.tool("press_key", app="Calculator", key="Escape")
    text, _, _ = server.tool("get_app_state", app="Calculator")
    xdotool(desktop, "mousemove", "1", "1")
    xdotool(desktop, "windowraise", str(witness.xid))
    text, _, err = server.tool("click", app="Calculator", element_index=_button(text, "8"))
    assert not err, text
    assert _display(text) == "8"
    assert _pointer(desktop) == (1, 1)
    time.sleep(0.3)  # any stray event would be recorded by now
    assert witness.received() == []
