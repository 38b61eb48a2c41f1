"""Typing at the speed of a machine: every character arrives, whenever the app reads it.

An app looks a key event up in the keyboard mapping as it stands when the app reads the event.
Characters the keymap lacks are typed through spare keycodes that are bound for the moment, so
a text with more distinct foreign characters than there are spare keycodes reuses keycodes;
these tests check that no keycode changes its meaning while keys typed with it are unread,
with a peer that reads every key event late, and that typing outside a text field presses a
key again only after a gap.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from x11peer import Event, PeerWindow, typed_text
from Xlib import X

from deskhand_d.programs.atspi import x11 as x11_module
from deskhand_d.programs.atspi.x11 import X11

# 63 distinct characters missing from a US keymap (Xvfb has 19 spare keycodes), in a text
# where they come back again and again, with shifted ASCII, newlines and characters outside
# the Basic Multilingual Plane.
FOREIGN = "αβγδεζηθικλμνξοπρστυφχψωАБВГДЕЖЗИЙКЛМНОПРСТУФХЦЧШЩéàçñüß€中文字😀🎉🚀"
TEXT = "".join(
    f"{FOREIGN[i % len(FOREIGN)]}{FOREIGN[(i * 7) % len(FOREIGN)]} Word{i}!"
    + ("\n" if i % 9 == 8 else " ")
    for i in range(len(FOREIGN))
)


@pytest.fixture
def slow_peer(display_name: str) -> Iterator[PeerWindow]:
    """A focused window that answers pings and reads each key event 3 ms after the last."""
    window = PeerWindow(display_name, 100, 120, 400, 300, answer_pings=True, read_delay=0.003)
    window.start_recording()
    try:
        yield window
    finally:
        window.close()


def presses(events: list[Event]) -> list[Event]:
    return [e for e in events if e.type == X.KeyPress]


def test_the_text_needs_keycodes_again() -> None:
    """The text is long and foreign enough to reuse each spare keycode several times."""
    assert len(set(TEXT) - set(map(chr, range(0x20, 0x7F))) - {"\n"}) >= 3 * 19
    assert len(TEXT) > 600


def test_a_slow_reader_gets_every_character(x11: X11, slow_peer: PeerWindow) -> None:
    """Typed into a field as fast as it can be sent, to an app reading keys late: the text
    arrives exactly, and the borrowed keycodes are given back."""
    before = slow_peer.keymap()
    x11.type_text(TEXT, into_field=True)
    events = slow_peer.wait(lambda ev: typed_text(ev) == TEXT, timeout=20)
    assert typed_text(events) == TEXT
    assert slow_peer.pings > 0  # it was asked, before keycodes were bound again
    assert slow_peer.keymap() == before


def test_a_slow_reader_without_pings_gets_every_character(
    display_name: str, x11: X11, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An app that does not answer pings is given ``restore_delay`` before a keycode changes;
    with the delay covering its lag, the text arrives exactly too."""
    monkeypatch.setattr(X11, "restore_delay", 0.5)
    peer = PeerWindow(display_name, 100, 120, 400, 300, read_delay=0.002)
    peer.start_recording()
    try:
        text = FOREIGN[:40] + " " + FOREIGN[20:]
        x11.type_text(text, into_field=True)
        assert typed_text(peer.wait(lambda ev: typed_text(ev) == text, timeout=20)) == text
    finally:
        peer.close()


def test_outside_a_field_a_key_is_pressed_again_after_a_gap(
    x11: X11, slow_peer: PeerWindow
) -> None:
    """'12+1' and '1111': the same key again only REPEAT_GAP_S after the app read it, as
    galculator needs (it ignores a key whose button is still shown pressed); other keys are
    not held back."""
    for text in ("12+1", "1111"):
        slow_peer.clear()
        x11.type_text(text)
        events = presses(slow_peer.wait(lambda ev, t=text: typed_text(ev) == t))
        assert typed_text(events) == text
        keys = [e for e in events if e.keysym != 0xFFE1]  # Shift_L, held for '+'
        gap_ms = x11_module.REPEAT_GAP_S * 1000
        for i, press in enumerate(keys):
            before = [e for e in keys[:i] if e.detail == press.detail]
            if before:
                assert press.time - before[-1].time >= gap_ms - 1  # server clock in whole ms
