"""Synthetic input through XTEST: the right X events reach an ordinary client window."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from x11peer import Event, PeerWindow, typed_text
from Xlib import X

from deskhand_d.programs.atspi.x11 import X11

CONTROL_L, SHIFT_L, RETURN, ESCAPE = 0xFFE3, 0xFFE1, 0xFF0D, 0xFF1B


def of_type(events: list[Event], *types: int) -> list[Event]:
    return [e for e in events if e.type in types]


def count(event_type: int, n: int) -> Callable[[list[Event]], bool]:
    return lambda events: len(of_type(events, event_type)) >= n


# --- pointer ---------------------------------------------------------------------------


def test_left_click_lands_at_the_point(x11: X11, peer: PeerWindow) -> None:
    """A click at root (150, 170) is button 1 at (50, 50) in the window at (100, 120)."""
    x11.click(150, 170)
    events = of_type(peer.wait(count(X.ButtonRelease, 1)), X.ButtonPress, X.ButtonRelease)
    assert [(e.type, e.detail, e.x, e.y, e.root_x, e.root_y) for e in events] == [
        (X.ButtonPress, 1, 50, 50, 150, 170),
        (X.ButtonRelease, 1, 50, 50, 150, 170),
    ]


@pytest.mark.parametrize(
    ("button", "number"), [("left", 1), ("middle", 2), ("right", 3), ("RIGHT", 3)]
)
def test_buttons(x11: X11, peer: PeerWindow, button: str, number: int) -> None:
    """Button names map to X button numbers 1-3."""
    x11.click(300, 300, button=button)
    events = of_type(peer.wait(count(X.ButtonRelease, 1)), X.ButtonPress)
    assert [e.detail for e in events] == [number]


def test_double_click_is_two_presses(x11: X11, peer: PeerWindow) -> None:
    """count=2 sends two press/release pairs at the same spot."""
    x11.click(200, 200, count=2)
    events = of_type(peer.wait(count(X.ButtonRelease, 2)), X.ButtonPress, X.ButtonRelease)
    assert [(e.type, e.x, e.y) for e in events] == [
        (X.ButtonPress, 100, 80),
        (X.ButtonRelease, 100, 80),
    ] * 2


def test_fractional_coordinates_are_rounded(x11: X11, peer: PeerWindow) -> None:
    """Coordinates from scaled screenshots may be fractional; the nearest pixel is used."""
    x11.click(150.6, 170.4)
    press = of_type(peer.wait(count(X.ButtonPress, 1)), X.ButtonPress)[0]
    assert (press.root_x, press.root_y) == (151, 170)


@pytest.mark.parametrize(
    ("args", "message"),
    [
        ((1280, 10), "outside"),
        ((-1, 10), "outside"),
        ((float("nan"), 10), "finite"),
    ],
)
def test_bad_points_are_rejected(x11: X11, args: tuple[float, float], message: str) -> None:
    """Points off the screen raise instead of clicking at the clamped edge."""
    with pytest.raises(ValueError, match=message):
        x11.click(*args)


def test_bad_button_and_count_are_rejected(x11: X11) -> None:
    """Unknown buttons and counts below one are ValueErrors naming the choices."""
    with pytest.raises(ValueError, match="left, middle, right"):
        x11.click(10, 10, button="fourth")
    with pytest.raises(ValueError, match="at least 1"):
        x11.click(10, 10, count=0)


def test_drag_presses_moves_and_releases(x11: X11, peer: PeerWindow) -> None:
    """A drag is press at the start, motion with button 1 held, release at the end."""
    x11.drag(110, 130, 310, 260)
    events = peer.wait(count(X.ButtonRelease, 1))
    press, release = of_type(events, X.ButtonPress)[0], of_type(events, X.ButtonRelease)[0]
    assert (press.detail, press.x, press.y) == (1, 10, 10)
    assert (release.detail, release.x, release.y) == (1, 210, 140)
    dragging = [e for e in of_type(events, X.MotionNotify) if e.state & X.Button1Mask]
    assert len(dragging) >= 5
    assert (dragging[-1].x, dragging[-1].y) == (210, 140)
    assert events.index(press) < events.index(dragging[0]) < events.index(release)


@pytest.mark.parametrize(
    ("direction", "pages", "button", "clicks"),
    [("down", 1, 5, 5), ("up", 2, 4, 10), ("left", 0.2, 6, 1), ("right", 0.01, 7, 1)],
)
def test_scroll_sends_wheel_buttons(
    x11: X11, peer: PeerWindow, direction: str, pages: float, button: int, clicks: int
) -> None:
    """Scrolling is wheel buttons 4-7 at the point, five notches per page, at least one."""
    x11.scroll(250, 250, direction, pages)
    events = of_type(peer.wait(count(X.ButtonRelease, clicks)), X.ButtonPress)
    assert {(e.detail, e.x, e.y) for e in events} == {(button, 150, 130)}
    assert len(events) == clicks


def test_bad_scroll_arguments_are_rejected(x11: X11) -> None:
    """Unknown directions and non-positive page counts are ValueErrors."""
    with pytest.raises(ValueError, match="up, down, left, right"):
        x11.scroll(10, 10, "sideways", 1)
    with pytest.raises(ValueError, match="positive"):
        x11.scroll(10, 10, "down", 0)


# --- keyboard --------------------------------------------------------------------------


def key_presses(events: list[Event]) -> list[int]:
    return [e.keysym for e in of_type(events, X.KeyPress)]


def test_press_return(x11: X11, peer: PeerWindow) -> None:
    """A single key name is one press and one release of that keysym."""
    x11.press_key("Return")
    events = of_type(peer.wait(count(X.KeyRelease, 1)), X.KeyPress, X.KeyRelease)
    assert [(e.type, e.keysym) for e in events] == [(X.KeyPress, RETURN), (X.KeyRelease, RETURN)]


def test_alias_and_case(x11: X11, peer: PeerWindow) -> None:
    """'esc' is Escape."""
    x11.press_key("esc")
    assert key_presses(peer.wait(count(X.KeyRelease, 1))) == [ESCAPE]


def test_chord_holds_modifiers(x11: X11, peer: PeerWindow) -> None:
    """ctrl+shift+t holds Control and Shift while t is pressed, then releases in reverse."""
    x11.press_key("ctrl+shift+t")
    events = of_type(peer.wait(count(X.KeyRelease, 3)), X.KeyPress, X.KeyRelease)
    assert [(e.type, e.keysym) for e in events] == [
        (X.KeyPress, CONTROL_L),
        (X.KeyPress, SHIFT_L),
        (X.KeyPress, ord("T")),  # t's keycode read at the shifted level
        (X.KeyRelease, ord("T")),
        (X.KeyRelease, SHIFT_L),
        (X.KeyRelease, CONTROL_L),
    ]
    assert events[2].state & (X.ControlMask | X.ShiftMask) == X.ControlMask | X.ShiftMask


def test_shifted_keysym_adds_shift(x11: X11, peer: PeerWindow) -> None:
    """'A' and 'ctrl+exclam' reach their keysyms by adding Shift as needed."""
    x11.press_key("A")
    x11.press_key("ctrl+exclam")
    events = peer.wait(count(X.KeyRelease, 5))
    assert key_presses(events) == [SHIFT_L, ord("A"), CONTROL_L, SHIFT_L, ord("!")]
    assert of_type(events, X.KeyPress)[-1].state & X.ControlMask


def test_key_missing_from_keymap_is_bound_then_restored(x11: X11, peer: PeerWindow) -> None:
    """'€' (not on a US keymap) arrives as its keysym; the keymap is unchanged afterwards."""
    before = peer.keymap()
    x11.press_key("€")
    x11.press_key("ctrl+Greek_alpha")
    assert key_presses(peer.wait(count(X.KeyRelease, 3))) == [0x010020AC, CONTROL_L, 0x7E1]
    assert peer.keymap() == before


def test_unknown_key_is_a_value_error(x11: X11) -> None:
    """Misspelt key names fail before anything is sent."""
    with pytest.raises(ValueError, match="unknown key name 'Retrun'"):
        x11.press_key("Retrun")


@pytest.mark.parametrize(
    "text",
    [
        "Hello, World! 1+1=2 (ok) [x] {y} <z> ~`'\"|\\ _-?/;:@#$%^&*",
        "line one\nline two\tand a tab\n",
        "Grüße – naïve café, 5 € → 😀",
    ],
)
def test_type_text_arrives_exactly(x11: X11, peer: PeerWindow, text: str) -> None:
    """Typed text, shifted characters and non-keymap Unicode included, reads back exactly."""
    before = peer.keymap()
    x11.type_text(text)
    events = peer.wait(lambda ev: typed_text(ev) == text)
    assert typed_text(events) == text
    assert peer.keymap() == before


def test_more_foreign_characters_than_spare_keycodes(x11: X11, peer: PeerWindow) -> None:
    """Text needing more temporary keys than the keymap has free is typed in pieces."""
    text = "αβγδεζηθικλμνξοπρστυφχψω АБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩ"
    before = peer.keymap()
    x11.type_text(text)
    events = peer.wait(lambda ev: typed_text(ev) == text, timeout=10)
    assert typed_text(events) == text
    assert peer.keymap() == before


def test_carriage_returns_are_newlines(x11: X11, peer: PeerWindow) -> None:
    """CRLF is one Return, like a newline."""
    x11.type_text("a\r\nb")
    assert key_presses(peer.wait(count(X.KeyRelease, 3))) == [ord("a"), RETURN, ord("b")]


def test_control_characters_are_rejected(x11: X11, peer: PeerWindow) -> None:
    """Text with an escape character fails up front; nothing is typed."""
    with pytest.raises(ValueError, match="control character"):
        x11.type_text("ab\x1bc")
    assert peer.wait(lambda ev: False, timeout=0.2) == []
