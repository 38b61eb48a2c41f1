"""Keys go to the element with the focus, and the reply says what they did.

On one private desktop: a click by index on the combo box entry of GTK 4's and GTK 3's Widget
Factory puts the caret at the end of its text, so the next ``type`` adds to it (it used to
replace it), and the reply says the text changed; an element behind GTK 4's modal About dialog
is refused, naming the dialog; and while another app holds an active grab of the keyboard
(``tests/peers/witness.py grab``, as an open menu or a screen lock does), keys are refused with
nothing sent, and that app receives nothing.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import ToolResult
from mcpclient import Server, serving
from screenread import index, observe_until, ok

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
WITNESS = ROOT / "tests" / "peers" / "witness.py"
DELIVERY = "deskhand/delivery"
EFFECT = "deskhand/effect"
ENTRY = r"(?:text entry area|text field) \(settable, string\) Value: comboboxentry"


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("gtk4-widget-factory", "gtk3-widget-factory", "mousepad")) as d:
        if not Path("/usr/bin/python3").exists():
            pytest.skip("the witness app needs /usr/bin/python3 with PyGObject")
        yield d


@pytest.fixture(scope="module")
def server(desktop: Desktop) -> Iterator[Server]:
    with serving(desktop.env, desktop.root) as s:
        yield s


def note(result: ToolResult) -> dict[str, Any]:
    found: dict[str, Any] | None = (result.raw.get("_meta") or {}).get(DELIVERY)
    assert result.is_error and found is not None, result.text[:500]
    return found


@pytest.mark.parametrize("app", ["Widget Factory", "gtk3-widget-factory"])
def test_a_click_on_an_entry_puts_the_caret_in_it_and_typing_adds(server: Server, app: str) -> None:
    state = observe_until(server, app, ENTRY)
    entry = index(state.text, ENTRY)
    ok(server.call("click", 30, app=app, element_index=entry))
    typed = ok(server.call("type_text", 30, app=app, text=" typed"))
    assert (typed.raw.get("_meta") or {}).get(EFFECT) == {"effect": "changed", "what": "text"}
    assert re.search(r"Value: comboboxentry typed$", typed.text, re.M), typed.text[:3000]


def test_an_element_behind_gtk4s_about_dialog_is_refused(server: Server) -> None:
    """Widget Factory's About is a modal window GTK 4.8 reports as a `filler` that never says
    it is showing: it is listed first, with its buttons, and the window behind it takes no
    input while it is open."""
    state = observe_until(server, "Widget Factory", r"tab \(selected\) Page _1")
    header = re.search(
        r"^\t*\d+ tab \(selectable\) Page _3\n(?:.*\n)*?\t*\d+ button\n\t*(\d+) button",
        state.text,
        re.M,
    )
    assert header, state.text[-1500:]
    menu = ok(server.call("click", 30, app="Widget Factory", element_index=header.group(1)))
    about = ok(
        server.call(
            "click",
            30,
            app="Widget Factory",
            element_index=index(menu.text, "menu item About Widget Factory"),
        )
    )
    assert re.search(r"^0 dialog About GTK Widget Factory", about.text, re.M), about.text[:800]
    assert "button Close" in about.text.split("\n1 ", 1)[0] or "button Close" in about.text
    behind = server.call(
        "click",
        30,
        app="Widget Factory",
        element_index=index(about.text, r"tab \(selectable\) Page _2"),
    )
    assert note(behind) == {
        "state": "refused",
        "reason": "modal_dialog",
        "dialog": "About GTK Widget Factory",
    }
    closed = ok(
        server.call(
            "click", 30, app="Widget Factory", element_index=index(about.text, r"button Close")
        )
    )
    assert "About GTK Widget Factory" not in closed.text


def test_keys_are_refused_while_another_app_holds_the_keyboard(
    desktop: Desktop, server: Server
) -> None:
    """X sends every key to a client that grabbed the keyboard, whatever has the focus: the
    input guard sees the grab (an app's own open menu is told apart by its popup window)."""
    observe_until(server, "Mousepad", r"text entry area")
    record = desktop.root / "grabber.jsonl"
    grabber = desktop.spawn(
        ["/usr/bin/python3", str(WITNESS), str(record), "900", "650", "300", "200", "grab"],
        "grabber",
    )
    try:
        deadline = time.monotonic() + 30
        while not (record.exists() and '"grabbed"' in record.read_text()):
            assert time.monotonic() < deadline, desktop.log("grabber").read_text()
            time.sleep(0.05)
        lines = [json.loads(line) for line in record.read_text().splitlines() if line]
        assert {"event": "grabbed", "status": 0} in lines  # GDK_GRAB_SUCCESS
        for tool, args in (("type_text", {"text": "never"}), ("press_key", {"key": "ctrl+a"})):
            result = server.call(tool, 60, app="Mousepad", **args)
            stop = note(result)
            # The grabber reports the keyboard focus as its own (a grab moves it there), so
            # the focus check refuses first; were it silent, the X check would.
            assert stop["state"] == "refused", stop
            if stop["reason"] == "focus_elsewhere":
                assert "another application" in result.text, result.text[:400]
            else:
                assert (stop["reason"], stop["done"]) == ("target_changed", 0), stop
                assert "another program holds the keyboard" in result.text, result.text[:400]
        time.sleep(0.3)  # a stray key would have been recorded by now
        lines = [json.loads(line) for line in record.read_text().splitlines() if line]
        assert [x for x in lines if x["event"] not in ("ready", "grabbed")] == []
        text = ok(server.call("get_app_state", 90, app="Mousepad")).text
        assert "never" not in text
    finally:
        grabber.terminate()
        grabber.wait(10)
    # once the grab is gone, keys reach the app again
    typed = ok(server.call("type_text", 60, app="Mousepad", text="after"))
    assert "after" in typed.text


GRABBER = """
import sys, time
from Xlib import X, display
d = display.Display()
status = d.screen().root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
print(status, flush=True)
time.sleep(60)
"""


def test_keys_are_refused_while_a_silent_client_holds_the_keyboard(
    desktop: Desktop, server: Server
) -> None:
    """A plain X client that says nothing on the accessibility bus grabs the keyboard: the
    focus reports cannot tell, and the X server's answer does: nothing is sent."""
    observe_until(server, "Mousepad", r"text entry area")
    grabber = subprocess.Popen(
        [sys.executable, "-c", GRABBER],
        env=desktop.env,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert grabber.stdout is not None
        assert grabber.stdout.readline().strip() == "0"  # GrabSuccess
        result = server.call("type_text", 60, app="Mousepad", text="never")
        stop = note(result)
        assert stop["state"] == "refused", stop
        if stop["reason"] == "target_changed":
            assert stop["done"] == 0 and "another program holds the keyboard" in result.text
        else:  # the app reported losing the focus to the grab and someone else holding it
            assert stop["reason"] == "focus_elsewhere", stop
    finally:
        grabber.kill()
        grabber.wait(10)
        if grabber.stdout is not None:
            grabber.stdout.close()
    text = ok(server.call("get_app_state", 90, app="Mousepad")).text
    assert "never" not in text
