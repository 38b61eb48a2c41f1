"""Text typed at the speed of a machine into real GTK text views: read back exactly from the
accessibility tree, and still stopped, with an exact count, when the focus moves to another app.

Mousepad (GTK 3) and GNOME Text Editor (GTK 4) on a private desktop without a window manager,
above a witness app of our own (``tests/peers/witness.py``) that records any input reaching it.
The text goes through the backend's X11 layer the way keys for an editable text are sent:
``X11.type_text(..., into_field=True)`` under the input-target guard of the app's process, as
fast as the app reads them. It is read back through the backend's ``get_app_state``, from the
text view's ``Value``. The text holds three times more distinct characters missing from the
keymap than there are spare keycodes, so keycodes change meaning while it is typed.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from mcpclient import Server, serving
from witnessapp import Witness
from Xlib import display as xdisplay

from deskhand_d import ax
from deskhand_d.programs.atspi import x11guard
from deskhand_d.programs.atspi.x11 import BATCH_KEYS, X11
from deskhand_d.programs.atspi.x11guard import Guard, InputStopped
from deskhand_d.programs.atspi.x11keys import Keymap, chunks_by_spares, keysym_for_char

pytestmark = pytest.mark.slow

APPS = ["Mousepad", "Text Editor"]

# Accented Latin, Greek, Cyrillic, CJK, Hangul and emoji outside the Basic Multilingual Plane:
# 59 distinct characters a US keymap lacks (Xvfb has 19 spare keycodes).
FOREIGN = "éèàçñüößøåæœ€£¥αβγδεζηθλμπσωΩΔЖЯжяшщыюБГД中文字日本語한국어😀🎉🚀👍🌍→≠∞½"
WORDS = [
    "typing",
    "at",
    "the",
    "speed",
    "of",
    "a",
    "machine,",
    "every",
    "key",
    "counts:",
    "42+8=50!",
]


def mixed_text(length: int) -> str:
    """``length`` characters of words, foreign characters and line breaks (no line starts
    with a space, so no editor re-indents it)."""
    out: list[str] = []
    i = 0
    while sum(map(len, out)) < length:
        word = WORDS[i % len(WORDS)]
        foreign = FOREIGN[(i * 7) % len(FOREIGN)] + FOREIGN[(i * 3 + 1) % len(FOREIGN)]
        out.append(f"{word} {foreign}" + ("\n" if i % 10 == 9 else " "))
        i += 1
    return "".join(out)[:length].rstrip(" \n")


TEXT = mixed_text(600)


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("mousepad", "gnome-text-editor", "xdotool")) as desk:
        if not Path("/usr/bin/python3").exists():
            pytest.skip("the witness app needs /usr/bin/python3 with PyGObject")
        desk.env["XDG_DATA_HOME"] = str(desk.root / "data")  # the editors' drafts stay here
        yield desk


@pytest.fixture(scope="module")
def witness(desktop: Desktop) -> Witness:
    return Witness(
        desktop, "typing-witness"
    )  # first, so every app the backend starts maps above it


@pytest.fixture(scope="module")
def server(desktop: Desktop, witness: Witness) -> Iterator[Server]:
    with serving(desktop.env, desktop.root) as s:
        yield s


def text_area(server: Server, app: str) -> tuple[ax.Tree, ax.tree.Element]:
    """The app's tree and its text view, waiting for the app to show one."""
    deadline = time.monotonic() + 90
    while True:
        result = server.call("get_app_state", 90, app=app)
        if not result.is_error and "text entry area" in result.text:
            tree = ax.parse(result.text)
            return tree, next(e for e in tree.elements if e.role.startswith("text entry area"))
        assert time.monotonic() < deadline, result.text
        time.sleep(0.5)


def empty_and_focus(server: Server, app: str) -> int:
    """Click into the app's text view, empty it, and return the app's pid."""
    tree, area = text_area(server, app)
    for call in (
        {"element_index": str(area.index)},
        {"key": "ctrl+a"},
        {"key": "Delete"},
    ):
        tool = "click" if "element_index" in call else "press_key"
        result = server.call(tool, 30, app=app, **call)
        assert not result.is_error, result.text
    assert read_back(server, app) == ""
    assert tree.pid is not None
    return tree.pid


def read_back(server: Server, app: str) -> str:
    return text_area(server, app)[1].attributes.get("Value", "")


def keymap_rows(name: str) -> list[list[int]]:
    conn = xdisplay.Display(name)
    try:
        info = conn.display.info
        count = info.max_keycode - info.min_keycode + 1
        return [list(row) for row in conn.get_keyboard_mapping(info.min_keycode, count)]
    finally:
        conn.close()


def first_piece(name: str, text: str) -> int:
    """How many characters of ``text`` go out before the first spare keycode is rebound."""
    conn = xdisplay.Display(name)
    try:
        info = conn.display.info
        rows = conn.get_keyboard_mapping(info.min_keycode, info.max_keycode - info.min_keycode + 1)
        modifiers = [code for codes in conn.get_modifier_mapping() for code in codes if code]
    finally:
        conn.close()
    keymap = Keymap(info.min_keycode, [list(row) for row in rows], modifiers)
    keysyms = [keysym_for_char(c) for c in text]
    return len(next(chunks_by_spares(keysyms, keymap, len(keymap.spare_keycodes()))))


def test_the_text_rebinds_spare_keycodes_several_times(desktop: Desktop) -> None:
    """The text is long and foreign enough for several rounds of keycode bindings."""
    assert len(TEXT) == 600 and len(set(FOREIGN)) == len(FOREIGN) == 59
    assert set(FOREIGN) <= set(TEXT)
    assert first_piece(desktop.display, TEXT) < len(TEXT) / 3


@pytest.mark.parametrize("app", APPS)
def test_long_mixed_text_reads_back_exactly(
    desktop: Desktop, witness: Witness, server: Server, app: str
) -> None:
    """600 characters with 59 foreign ones (emoji included) and line breaks, typed as fast
    as the app reads them: the text view holds exactly that text, and the keymap is as
    before."""
    pid = empty_and_focus(server, app)
    before = keymap_rows(desktop.display)
    with X11.open(desktop.display) as x:
        x.type_text(TEXT, guard=Guard(pid=pid), into_field=True)
    assert read_back(server, app) == TEXT
    assert keymap_rows(desktop.display) == before
    assert witness.received() == []


@pytest.mark.parametrize("app", APPS)
def test_focus_moved_to_another_app_mid_text_stops_with_the_exact_count(
    desktop: Desktop,
    witness: Witness,
    server: Server,
    app: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The witness takes the keyboard focus while the text is being typed (when the backend
    first waits for the app to read what it was sent): the next batch is not sent, the stop names
    the other window, its count is the characters sent before, the app holds exactly those,
    and the witness received nothing."""
    pid = empty_and_focus(server, app)
    moved: list[float] = []
    wait = x11guard.Echo.wait

    def focus_moves_first(echo: x11guard.Echo, *args: Any, **kwargs: Any) -> bool:
        if not moved:
            subprocess.run(
                ["xdotool", "windowfocus", str(witness.xid)], env=desktop.env, check=True
            )
            moved.append(time.monotonic())
        return wait(echo, *args, **kwargs)

    monkeypatch.setattr(x11guard.Echo, "wait", focus_moves_first)
    with X11.open(desktop.display) as x, pytest.raises(InputStopped) as stopped:
        x.type_text(TEXT, guard=Guard(pid=pid), into_field=True)
    assert moved
    # the backend first waits for the app to read its keys after the first batch, which
    # ends at 64 keys or where the first piece of spare keycodes ends
    sent = min(BATCH_KEYS, first_piece(desktop.display, TEXT))
    assert (stopped.value.reason, stopped.value.unit) == ("target_changed", "characters")
    assert (stopped.value.done, stopped.value.total) == (sent, len(TEXT))
    assert "another program's window" in stopped.value.detail
    time.sleep(0.3)  # any stray key would have reached the witness by now
    assert witness.received() == []
    # (spaces at the end of a tree line may not show)
    assert read_back(server, app).rstrip(" ") == TEXT[:sent].rstrip(" ")
