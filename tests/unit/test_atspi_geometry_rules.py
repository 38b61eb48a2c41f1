"""The walk's pure rules: which children need their rectangle read."""

from __future__ import annotations

import itertools

from deskhand_d.backends.atspi.model import (
    NOT_DRAWN,
    needs_box,
    where,
)
from deskhand_d.backends.atspi.roles import State, bits

BOXES = [None, (0, 0, 0, 0), (10, 10, 50, 20), (0, 900, 50, 20), (-(2**31), -(2**31), 50, 20)]
CLIPS = [None, (0, 0, 400, 300)]


def test_a_child_whose_states_leave_it_out_needs_no_rectangle() -> None:
    """Whenever needs_box says no, where() answers "not drawn" whatever the rectangle."""
    words = [State.VISIBLE, State.SHOWING, State.DEFUNCT, State.SENSITIVE]
    for n in range(len(words) + 1):
        for chosen in itertools.combinations(words, n):
            states = bits(*chosen)
            if needs_box(states):
                continue
            for box, clip, showing in itertools.product(BOXES, CLIPS, (False, True)):
                assert where(states, box, clip, window_showing=showing) == NOT_DRAWN


def test_a_visible_child_needs_its_rectangle() -> None:
    """GTK 4 marks an unmapped widget only by a zero-sized rectangle: visible children differ
    by rectangle alone, so none may skip it."""
    visible = bits(State.VISIBLE)
    assert needs_box(visible)
    answers = {where(visible, box, CLIPS[1], window_showing=False) for box in BOXES}
    assert len(answers) > 1
    assert not needs_box(bits(State.VISIBLE, State.DEFUNCT))
