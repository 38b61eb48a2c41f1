"""The settling rules, pure: when the tree may be read after input, which clicks lag, what
counts as an app's reaction, which pixel changes are significant, which rectangles touch."""

from __future__ import annotations

import pytest

from deskhand_d.programs.atspi.damage import overlaps
from deskhand_d.programs.atspi.events import is_reaction
from deskhand_d.programs.atspi.model import Node
from deskhand_d.programs.atspi.roles import Role
from deskhand_d.programs.atspi.screen import changed_bytes, significant_bytes
from deskhand_d.programs.atspi.settle import LIMITS, Limits, lags, tree_wait

END = 100.0  # the input ended here (seconds, any clock)
NEVER = float("-inf")


def test_no_reaction_waits_for_one_until_react() -> None:
    assert tree_wait(END, input_end=END, reacted=False, last_event=NEVER) == (
        pytest.approx(LIMITS.react)
    )
    assert tree_wait(END + 0.05, input_end=END, reacted=False, last_event=NEVER) == (
        pytest.approx(LIMITS.react - 0.05)
    )
    assert tree_wait(END + LIMITS.react, input_end=END, reacted=False, last_event=NEVER) is None


def test_a_gtk_button_click_waits_longer_for_its_reaction() -> None:
    waited = tree_wait(END + 0.2, input_end=END, reacted=False, last_event=NEVER, lagging=True)
    assert waited == pytest.approx(LIMITS.lag_react - 0.2)
    assert LIMITS.lag_react > 0.25  # GTK's activation timeout
    after = END + LIMITS.lag_react
    assert tree_wait(after, input_end=END, reacted=False, last_event=NEVER, lagging=True) is None


def test_after_a_reaction_the_tree_waits_for_quiet() -> None:
    # Events keep coming: each one pushes the read back by `quiet`.
    last = END + 0.03
    assert tree_wait(last + 0.005, input_end=END, reacted=True, last_event=last) == (
        pytest.approx(LIMITS.quiet - 0.005)
    )
    assert tree_wait(last + LIMITS.quiet, input_end=END, reacted=True, last_event=last) is None


def test_quiet_counts_from_the_end_of_the_input_at_the_earliest() -> None:
    # The app answered the first of several keys while the last was still being typed.
    early = END - 0.08
    assert tree_wait(END, input_end=END, reacted=True, last_event=early) == (
        pytest.approx(LIMITS.quiet)
    )
    assert tree_wait(END + LIMITS.quiet, input_end=END, reacted=True, last_event=early) is None


def test_an_app_that_never_goes_quiet_is_read_at_tree_max() -> None:
    limits = Limits(tree_max=0.5)
    now = END + 0.49
    waited = tree_wait(now, input_end=END, reacted=True, last_event=now, limits=limits)
    assert waited == pytest.approx(0.01)
    later = END + 0.5
    assert tree_wait(later, input_end=END, reacted=True, last_event=later, limits=limits) is None


def _button(role: int = Role.PUSH_BUTTON, actions: tuple[str, ...] = ("click",)) -> Node:
    return Node(ref=(":1.2", "/b"), role=role, actions=actions)


def test_only_a_left_click_by_index_on_a_gtk_button_lags() -> None:
    nodes = [
        _button(),
        _button(Role.TOGGLE_BUTTON),
        _button(Role.CHECK_BOX),
        _button(Role.ENTRY, ("activate",)),
        _button(actions=("press",)),
    ]
    assert lags("click", {"element_index": "0"}, nodes)
    assert lags("click", {"element_index": "1", "mouse_button": "left"}, nodes)
    assert not lags("click", {"element_index": "0", "mouse_button": "right"}, nodes)
    assert not lags("click", {"x": 3, "y": 4}, nodes)
    assert not lags("click", {"element_index": "2"}, nodes)  # a check box acts at once
    assert not lags("click", {"element_index": "3"}, nodes)
    assert not lags("click", {"element_index": "4"}, nodes)  # not GTK's "click" action
    assert not lags("click", {"element_index": "9"}, nodes)
    assert not lags("click", {"element_index": "x"}, nodes)
    assert not lags("perform_secondary_action", {"element_index": "0"}, nodes)


def test_gtk3_arming_a_button_is_not_its_reaction() -> None:
    assert not is_reaction("StateChanged", "armed")
    assert is_reaction("StateChanged", "checked")
    assert is_reaction("TextChanged", "insert")
    assert is_reaction("Create", "")


def test_small_steps_are_not_significant_large_ones_always_are() -> None:
    for a in range(256):
        for b in range(256):
            n = significant_bytes(bytes([a]), bytes([b]))
            if abs(a - b) < 32:
                assert n == 0, (a, b)
            if abs(a - b) >= 64:
                assert n == 1, (a, b)


def test_significant_bytes_counts_what_changed_by_a_lot() -> None:
    frame = bytes([240]) * 30_000  # a light background
    fade = bytes([228]) * 30_000  # one step of a transition
    text = bytearray(frame)
    text[0:4000:4] = bytes([30]) * 1000  # dark glyphs drawn on it
    assert significant_bytes(frame, frame) == 0
    assert significant_bytes(frame, fade) == 0
    assert changed_bytes(frame, fade) == 30_000  # a plain byte count sees the fade as change
    assert significant_bytes(frame, bytes(text)) == 1000
    assert significant_bytes(frame, frame[:-3]) == len(frame)


def test_rectangles_overlap_only_when_they_share_a_pixel() -> None:
    window = (100, 120, 400, 300)
    assert overlaps(window, (0, 0, 101, 121))
    assert overlaps(window, (499, 419, 10, 10))
    assert overlaps(window, (0, 0, 1280, 900))
    assert not overlaps(window, (0, 0, 100, 900))  # ends just left of it
    assert not overlaps(window, (500, 120, 10, 10))  # starts just right of it
    assert not overlaps(window, (100, 420, 400, 10))
    assert not overlaps(window, (100, 120, 0, 0))
