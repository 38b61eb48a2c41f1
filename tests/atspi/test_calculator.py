"""The real gnome-calculator (GTK 4) and galculator (GTK 3) through the server over MCP stdio."""

from __future__ import annotations

import base64
import re
import time

import pytest
from mcpclient import Server

from deskhand_d.programs.core import texts

pytestmark = pytest.mark.slow


def index_of(text: str, label: str, role: str = "button") -> str:
    """The index of the first ``role`` element labelled exactly ``label`` in a tree text."""
    m = re.search(rf"^\t*(\d+) {re.escape(role)} {re.escape(label)}(?:,|$)", text, re.M)
    assert m is not None, f"no {role} {label!r} in:\n{text}"
    return m.group(1)


def wait_for(server: Server, app: str, pattern: str, limit: float = 10.0) -> str:
    """``get_app_state`` until its text matches ``pattern`` (apps compute asynchronously)."""
    deadline = time.monotonic() + limit
    while True:
        text, _, err = server.tool("get_app_state", app=app)
        assert not err, text
        if re.search(pattern, text, re.M):
            return text
        assert time.monotonic() < deadline, f"{pattern!r} never appeared in:\n{text}"
        time.sleep(0.2)


def test_launch_observe_and_add(server: Server) -> None:
    """get_app_state launches Calculator; 6 + 7 = clicked by index; the display shows 13."""
    text, images, err = server.tool("get_app_state", app="Calculator")
    assert not err, text
    lines = text.splitlines()
    assert lines[0] == texts.banner(texts.DEFAULT_CUA_VERSION)
    assert lines[1] == "<app_state>"
    assert re.fullmatch(
        r"App=/usr/share/applications/org\.gnome\.Calculator\.desktop/ "
        r"\(bundleID org\.gnome\.Calculator, pid \d+\)",
        lines[2],
    )
    assert lines[3] == 'Window: "Calculator", App: Calculator.'
    assert lines[4].startswith("0 standard window Calculator")
    assert lines[-1] == "</app_state>"
    assert "\tbutton 6 6" not in text  # GTK 4.8's doubled names are undone
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    assert base64.b64decode(images[0]["data"]).startswith(b"\x89PNG\r\n\x1a\n")
    for key in ("6", "+", "7", "="):
        text, _, err = server.tool("click", app="Calculator", element_index=index_of(text, key))
        assert not err, text
        assert text.startswith("App=org.gnome.Calculator (pid ")
        assert "<app_state>" not in text
    wait_for(server, "Calculator", r"text entry area \(settable, string\) Value: 13\b")


def test_list_apps_shows_calculator_running(server: Server) -> None:
    """list_apps puts the running calculator first, by its desktop entry."""
    text, _, err = server.tool("list_apps")
    assert not err
    first = text.splitlines()[0]
    assert first == (
        "Calculator \u2014 /usr/share/applications/org.gnome.Calculator.desktop "
        "\u2014 org.gnome.Calculator [running]"
    )


def test_app_resolves_by_id_and_executable(server: Server) -> None:
    """The same app by desktop-file id and by executable name; an unknown one is not found."""
    for name in ("org.gnome.Calculator", "gnome-calculator", "org.gnome.Calculator.desktop"):
        text, _, err = server.tool("get_app_state", app=name)
        assert not err, text
        assert 'Window: "Calculator", App: Calculator.' in text
    text, _, err = server.tool("get_app_state", app="No Such App")
    assert err and text == texts.app_not_found("No Such App")


def test_stale_and_invalid_indexes(server: Server) -> None:
    """Indexes beyond the latest rendering are stale; non-numbers are invalid IDs."""
    server.tool("get_app_state", app="Calculator")
    text, _, err = server.tool("click", app="Calculator", element_index="99999")
    assert err and text == texts.STALE_ELEMENT
    text, _, err = server.tool("click", app="Calculator", element_index="x1")
    assert err and text == texts.invalid_element_id("x1")


def test_set_value(server: Server) -> None:
    """set_value on a button is refused with Sky's text; on the display it replaces the text."""
    text, _, _ = server.tool("get_app_state", app="Calculator")
    reply, _, err = server.tool(
        "set_value", app="Calculator", element_index=index_of(text, "7"), value="1"
    )
    assert err and reply == texts.NOT_SETTABLE
    display = re.search(r"^\t*(\d+) text entry area", text, re.M)
    assert display is not None
    reply, _, err = server.tool(
        "set_value", app="Calculator", element_index=display.group(1), value="12*3"
    )
    assert not err, reply
    assert re.search(r"text entry area \(settable, string\) Value: 12\*3\b", reply)
    entry = re.search(r"^\t*(\d+) text entry area", reply, re.M)
    assert entry is not None
    reply, _, err = server.tool(
        "select_text", app="Calculator", element_index=entry.group(1), text="3"
    )
    assert not err, reply
    assert reply.endswith(texts.selected_text_tail("3"))


def test_action_needs_a_session(server: Server) -> None:
    """Acting on an app never observed in this process gets Sky's not-active text."""
    text, _, err = server.tool("click", app="galculator", element_index="0")
    assert err and text == texts.not_active("galculator")


def test_keys_typing_and_coordinates(server: Server) -> None:
    """A click focuses the display; type_text and press_key reach it; unknown keys are refused."""
    text, _, _ = server.tool("get_app_state", app="Calculator")
    display = re.search(r"^\t*(\d+) text entry area", text, re.M)
    assert display is not None
    text, _, _ = server.tool(
        "set_value", app="Calculator", element_index=display.group(1), value=""
    )
    display = re.search(r"^\t*(\d+) text entry area", text, re.M)
    assert display is not None
    # No primary action on the display: this clicks its centre through XTest, which focuses it.
    reply, images, err = server.tool("click", app="Calculator", element_index=display.group(1))
    assert not err, reply
    assert images  # clicks come back with a screenshot
    reply, _, err = server.tool("type_text", app="Calculator", text="2+3\n")
    assert not err, reply
    wait_for(server, "Calculator", r"text entry area \(settable, string\) Value: 5\b")
    reply, _, err = server.tool("press_key", app="Calculator", key="nosuchkey+q")
    assert err and reply == texts.INVALID_PARAMETER
    reply, _, err = server.tool("press_key", app="Calculator", key="Escape")
    assert not err, reply


def test_galculator_gtk3_smoke(server: Server) -> None:
    """GTK 3: galculator launches, 6 + 7 = by index, the display reads 13. (Window order
    between two apps is tested in test_window_order.py.)"""
    text, images, err = server.tool("get_app_state", app="galculator")
    assert not err, text
    assert "App: Galculator." in text.splitlines()[3]
    assert images
    for key in ("6", "+", "7", "="):
        text, _, err = server.tool(
            "click", app="galculator", element_index=index_of(text, key, "toggle button")
        )
        assert not err, text
    wait_for(server, "galculator", r"^\t*\d+ text 13$")
