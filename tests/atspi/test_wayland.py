"""The AT-SPI backend on a Wayland session: a headless GNOME compositor (Mutter, no XWayland)
with PipeWire, real GTK 4 apps drawing on Wayland, input through Mutter's remote-desktop
interface (``DESKHAND_WAYLAND_INPUT=mutter``) and pictures from its screen cast.

What is shown here: Calculator driven to 13 by element index, by typed text and by single
keys (the first key of each input session arrives); its screenshot is the window and shows
the result (read by tesseract); a click by coordinates lands on the button the screenshot
shows there; text typed into Text Editor is read back; and while another app has the
keyboard, keys and clicks for Calculator are refused with nothing sent (a witness app that
records every event receives none). Each test has its own desktop: focus is part of what
they test.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Iterator

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import ToolResult
from mcpclient import Server, serving
from screenread import index, observe_until, ok, seen, where
from witnessapp import Witness

from deskhand_d.surface import DELIVERY_META, EFFECT_META

CALC = "org.gnome.Calculator"
EDITOR = "org.gnome.TextEditor"


@pytest.fixture
def desk() -> Iterator[Desktop]:
    with desktop_or_skip(
        require=(
            "gnome-calculator",
            "gnome-text-editor",
            "mousepad",
            "featherpad",
            "gst-launch-1.0",
            "tesseract",
        ),
        session="wayland",
    ) as d:
        yield d


@pytest.fixture
def server(desk: Desktop) -> Iterator[Server]:
    with serving({**desk.env, "DESKHAND_WAYLAND_INPUT": "mutter"}, desk.root) as s:
        yield s


def value(result: ToolResult) -> str:
    found = re.search(r"text entry area \(settable, string\) Value: ([^,\n]*)", result.text)
    assert found, result.text[:3000]
    return found.group(1)


def keypad(server: Server) -> ToolResult:
    """Calculator's first observation with its keypad, once its window has the keyboard (its
    tree is there before the compositor has shown and focused the window)."""
    state = observe_until(server, CALC, r"^\t*\d+ button 7")
    for _ in range(120):
        if state.images:
            return state
        time.sleep(0.25)
        state = ok(server.call("get_app_state", 60, app=CALC))
    raise AssertionError("Calculator's window never took the keyboard")


def delivery(result: ToolResult) -> dict[str, object]:
    note = result.raw.get("_meta", {}).get(DELIVERY_META)
    assert isinstance(note, dict), result.raw
    return note


def test_calculator_by_index_typed_text_and_single_keys(server: Server) -> None:
    state = keypad(server)
    for key in ("6", r"\+", "7", "="):
        state = ok(
            server.call("click", 60, app=CALC, element_index=index(state.text, f"button {key}"))
        )
    assert value(state) == "13"
    ok(server.call("press_key", 60, app=CALC, key="Escape"))
    typed = ok(server.call("type_text", 60, app=CALC, text="12*3="))
    assert value(typed) == "36"  # the 1 arrived: the first key of a session is not lost
    for key in ("Escape", "9", "minus", "4", "Return"):
        pressed = ok(server.call("press_key", 60, app=CALC, key=key))
    assert value(pressed) == "5"


def test_the_screenshot_is_the_window_and_shows_the_result(server: Server) -> None:
    state = keypad(server)
    ok(server.call("type_text", 60, app=CALC, text="6+7="))
    shot = ok(server.call("get_app_state", 60, app=CALC))
    assert value(shot) == "13"
    assert len(shot.images) == 1
    mime, png = shot.images[0]
    assert mime == "image/png"
    width, height = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert (width, height) == (360, 489), (width, height)  # the window, no shadow, no desktop
    words = seen(shot)
    assert "13" in words.split(), words
    assert state.images, "the first observation of the focused window had no screenshot"


def test_a_click_by_coordinates_lands_where_the_screenshot_shows(server: Server) -> None:
    keypad(server)
    ok(server.call("type_text", 60, app=CALC, text="17"))
    shot = ok(server.call("get_app_state", 60, app=CALC))
    x, y = where(shot, "mod")  # the button's word, where the screenshot shows it
    ok(server.call("click", 60, app=CALC, x=x, y=y))
    assert value(ok(server.call("type_text", 60, app=CALC, text="5="))) == "2"  # 17 mod 5


def test_typing_into_text_editor_is_read_back(server: Server) -> None:
    state = observe_until(server, EDITOR, r"^\t*\d+ text entry area")
    view = index(state.text, "text entry area")
    ok(server.call("click", 60, app=EDITOR, element_index=view))
    typed = ok(server.call("type_text", 60, app=EDITOR, text="Hello from Wayland, 42!"))
    assert typed.raw.get("_meta", {}).get(EFFECT_META) == {"effect": "changed", "what": "text"}, (
        typed.text[-600:]
    )
    assert "Hello from Wayland, 42!" in typed.text


def has_screenshot(server: Server) -> bool:
    """Whether Calculator's observation comes with a picture: the compositor's word that its
    window has the keyboard (see deskhand_d.programs.atspi.wlscreen)."""
    return bool(ok(server.call("get_app_state", 60, app=CALC)).images)


def until(check: Callable[[], bool], what: str) -> None:
    for _ in range(60):
        if check():
            return
        time.sleep(0.25)
    raise AssertionError(f"never: {what}")


def test_no_input_while_another_app_has_the_keyboard(desk: Desktop, server: Server) -> None:
    keypad(server)
    # A window that opens before anyone has used the desktop takes the keyboard.
    witness = Witness(desk, place=(0, 0, 500, 300))
    until(lambda: not has_screenshot(server), "the witness took the keyboard")
    key = server.call("press_key", 60, app=CALC, key="7")
    assert key.is_error and delivery(key)["state"] == "refused", key.text
    assert delivery(key)["reason"] == "target_changed"
    assert "not on one of the app's windows" in key.text
    typed = server.call("type_text", 60, app=CALC, text="999")
    assert typed.is_error and delivery(typed) == {
        "state": "refused",
        "reason": "target_changed",
        "done": 0,
        "total": 3,
        "unit": "characters",
    }
    clicked = server.call("click", 60, app=CALC, x=40.0, y=300.0)
    assert clicked.is_error and delivery(clicked)["state"] == "refused", clicked.text
    shot = ok(server.call("get_app_state", 60, app=CALC))
    assert value(shot) == "" and not shot.images  # unchanged; no picture of another window
    assert witness.received() == [], json.dumps(witness.received())


PORTAL_DIALOG = "xdg-desktop-portal-gnome"


def answer_portal(person: Server, *, allow: bool) -> None:
    """Be the person at the desktop: answer the portal's remote-desktop dialog (GNOME's own
    window, read and clicked through the accessibility tree, as a screen reader user would)."""
    dialog = observe_until(person, PORTAL_DIALOG, r"^\t*\d+ button Share")
    if not allow:
        closed = person.call(
            "click", 60, app=PORTAL_DIALOG, element_index=index(dialog.text, "button Cancel")
        )
        assert not closed.is_error or "noWindowsAvailable" in closed.text, closed.text
        return
    ticked = ok(
        person.call(
            "click", 60, app=PORTAL_DIALOG,
            element_index=index(dialog.text, "checkbox Allow remote interaction"),
        )
    )  # fmt: skip
    assert re.search(r"checkbox Allow remote interaction, Value: 1", ticked.text), ticked.text
    shared = person.call(
        "click", 60, app=PORTAL_DIALOG, element_index=index(ticked.text, "button Share")
    )
    assert not shared.is_error or "noWindowsAvailable" in shared.text, shared.text  # it closed


def test_through_the_portal_only_once_the_person_allows_it(desk: Desktop) -> None:
    person = Server({**desk.env, "DESKHAND_WAYLAND_INPUT": "mutter"}, stderr=desk.root / "p.err")
    person.initialize()
    try:
        with serving({**desk.env, "DESKHAND_WAYLAND_INPUT": "portal"}, desk.root) as server:
            keypad(server)
            calls: dict[str, ToolResult] = {}

            def typing(key: str) -> threading.Thread:
                def run() -> None:
                    calls[key] = server.call("type_text", 90, app=CALC, text="6+7=")

                thread = threading.Thread(target=run)
                thread.start()
                return thread

            first = typing("declined")
            answer_portal(person, allow=False)
            first.join(90)
            declined = calls["declined"]
            assert declined.is_error and "declined" in declined.text, declined.text
            assert delivery(declined)["state"] == "refused"
            assert value(ok(server.call("get_app_state", 60, app=CALC))) == ""
            second = typing("allowed")
            answer_portal(person, allow=True)
            second.join(90)
            assert value(ok(calls["allowed"])) == "13"
            ok(server.call("type_text", 60, app=CALC, text="*2="))  # no second dialog
            shot = ok(server.call("get_app_state", 60, app=CALC))
            assert value(shot) == "26"
            x, y = where(shot, "mod")  # found on the shared screen by its pixels
            ok(server.call("click", 60, app=CALC, x=x, y=y))
            assert value(ok(server.call("type_text", 60, app=CALC, text="5="))) == "1"  # 26 mod 5
    finally:
        assert person.close() == 0


@pytest.fixture
def kde() -> Iterator[Desktop]:
    with desktop_or_skip(require=("featherpad",), session="kde") as d:
        yield d


def test_on_kde_plasma_apps_read_and_input_is_refused(kde: Desktop) -> None:
    """KWin (KDE Plasma's compositor) on its virtual backend with FeatherPad (Qt 5) drawing on
    Wayland: the tree reads; there is no GNOME screen cast to prove which window has the
    keyboard, so there is no screenshot, typing is refused with nothing sent, no dialog asks the
    person for an approval that could not be used, and doctor's checks say so."""
    from deskhand_d.backends import desktopprobe

    found = {c.name: c for c in desktopprobe.run(kde.env)}
    assert found["display"].status == "ok" and "Wayland session" in found["display"].detail
    assert found["input"].status == "failed" and "KDE Plasma" in found["input"].fix
    assert found["screenshot"].status == "failed"
    assert found["accessibility_bus"].status == "ok"
    with serving(dict(kde.env), kde.root) as server:
        state = observe_until(server, "featherpad", r"^\t*\d+ menu bar item File")
        assert not state.images
        typed = server.call("type_text", 60, app="featherpad", text="hello")
        assert typed.is_error and delivery(typed) == {"state": "refused", "reason": "not_sent"}
        assert "Wayland input is unavailable" in typed.text and "screen cast" in typed.text
        after = ok(server.call("get_app_state", 60, app="featherpad"))
        assert "hello" not in after.text


def _focused(server: Server, app: str, pattern: str) -> ToolResult:
    """``app``'s observation once its tree matches ``pattern`` and its window has the keyboard
    (the observation then has a screenshot)."""
    state = observe_until(server, app, pattern)
    for _ in range(120):
        if state.images:
            return state
        time.sleep(0.25)
        state = ok(server.call("get_app_state", 60, app=app))
    raise AssertionError(f"{app}'s window never took the keyboard")


def test_gtk3_and_qt_windows_as_their_toolkits_report_them(server: Server) -> None:
    """Toolkits report their window differently on Wayland: GTK 3 with its client-side
    shadow around it (Mousepad's 692 x 569 around a 640 x 517 window), Qt as the content inside
    the frame it draws itself (FeatherPad's 700 x 500 in a 706 x 533 window). Keys reach both
    (read back); GTK 3's menu opens by index with the pointer where its place is proven, and
    its screenshot is the toolkit's rectangle; Qt's content has no proven place, so a click by
    coordinates is refused with nothing sent and the words say what to do instead."""
    pad = _focused(server, "mousepad", r"^\t*\d+ menu bar item File")
    mime, png = pad.images[0]
    size = int.from_bytes(png[16:20], "big"), int.from_bytes(png[20:24], "big")
    assert mime == "image/png" and size[0] > 600 and size[1] > 500, size
    typed = ok(server.call("type_text", 60, app="mousepad", text="grey wolves"))
    assert "grey wolves" in typed.text
    menu = ok(
        server.call(
            "click", 60, app="mousepad", element_index=index(pad.text, "menu bar item File")
        )
    )
    assert re.search(r"^\t*\d+ menu item .*New", menu.text, re.MULTILINE), menu.text[-2000:]
    ok(server.call("press_key", 60, app="mousepad", key="Escape"))
    feather = _focused(server, "featherpad", r"^\t*\d+ text entry area")
    typed = ok(server.call("type_text", 60, app="featherpad", text="red foxes"))
    assert typed.raw.get("_meta", {}).get(EFFECT_META) == {"effect": "changed", "what": "text"}
    clicked = server.call("click", 60, app="featherpad", x=200.0, y=200.0)
    assert clicked.is_error and delivery(clicked) == {"state": "refused", "reason": "not_sent"}
    assert "draws its own window frame" in clicked.text and "by index" in clicked.text
    assert feather.images
