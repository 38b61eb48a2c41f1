"""The walk's and the pointer press's pure rules: which children need their rectangle read,
which clicks by index GTK delays, where a press surely lands, when a popup may cover the
window, and when an element is wholly in view with nothing over it."""

from __future__ import annotations

import itertools

from deskhand_d.programs.atspi.model import (
    NOT_DRAWN,
    Node,
    clear_in_view,
    click_is_delayed,
    needs_box,
    popup_open,
    sure_point,
    where,
)
from deskhand_d.programs.atspi.roles import Role, State, bits

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


def test_delayed_clicks_are_gtk_buttons_pressed_through_click() -> None:
    assert click_is_delayed(Role.PUSH_BUTTON, ("click",))
    assert click_is_delayed(Role.TOGGLE_BUTTON, ("Click",))
    assert click_is_delayed(Role.PUSH_BUTTON_MENU, ("click",))
    assert not click_is_delayed(Role.PUSH_BUTTON, ())
    assert not click_is_delayed(Role.PUSH_BUTTON, ("activate",))
    assert not click_is_delayed(Role.CHECK_BOX, ("click",))


def test_sure_point_without_a_border_is_the_centre() -> None:
    assert sure_point((150, 336, 56, 40), (355, 486), (0, 0, 355, 486)) == (178, 356)
    assert sure_point((150, 336, 56, 40), (355, 486), (100, 50, 355, 486)) == (278, 406)


def test_sure_point_lies_on_the_element_wherever_the_content_sits() -> None:
    """A frame 10 pixels larger than the window: the point is inside the element for every
    placement of the content within the frame."""
    rect, size, frame = (150, 336, 55, 40), (355, 486), (0, 0, 365, 496)
    point = sure_point(rect, size, frame)
    assert point is not None
    for dx, dy in itertools.product(range(11), range(11)):
        x, y = rect[0] + dx, rect[1] + dy
        assert x < point[0] < x + rect[2] - 1 and y < point[1] < y + rect[3] - 1


def test_no_sure_point_for_small_or_outlying_elements() -> None:
    frame = (0, 0, 365, 496)
    assert sure_point((10, 10, 12, 40), (355, 486), frame) is None  # narrower than the border
    assert sure_point((10, 10, 0, 40), (355, 486), frame) is None
    assert sure_point((-5, 10, 50, 40), (355, 486), frame) is None  # partly outside the window
    assert sure_point((330, 10, 50, 40), (355, 486), frame) is None
    assert sure_point((10, 10, 50, 40), (355, 486), (0, 0, 300, 400)) is None  # frame smaller


def test_popup_open_looks_below_the_root_only() -> None:
    button = Node(ref=("a", "/b"), role=Role.PUSH_BUTTON)
    plain = Node(ref=("a", "/w"), role=Role.FRAME, children=(button,))
    assert not popup_open(plain)
    assert not popup_open(Node(ref=("a", "/d"), role=Role.DIALOG, children=(button,)))
    menu = Node(ref=("a", "/m"), role=Role.MENU, children=(button,))
    assert popup_open(Node(ref=("a", "/w"), role=Role.FRAME, children=(button, menu)))
    closed = Node(ref=("a", "/m"), role=Role.MENU)  # a menu-bar title, its items not showing
    assert not popup_open(Node(ref=("a", "/w"), role=Role.FRAME, children=(button, closed)))
    popover = Node(ref=("a", "/p"), role=Role.WINDOW)
    assert popup_open(Node(ref=("a", "/w"), role=Role.FRAME, children=(button, popover)))


def _tree() -> tuple[Node, Node, Node, Node]:
    """A window with a scrolled view holding two buttons (one half scrolled away) and an
    overlay panel over part of the view, and a free button beside it."""
    label = Node(ref=("a", "/l"), role=Role.LABEL, box=(20, 110, 40, 20))
    inside = Node(ref=("a", "/in"), role=Role.PUSH_BUTTON, box=(10, 100, 60, 40), children=(label,))
    half = Node(ref=("a", "/half"), role=Role.PUSH_BUTTON, box=(10, 180, 60, 40))
    view = Node(ref=("a", "/v"), role=49, box=(0, 50, 200, 150), children=(inside, half))
    free = Node(ref=("a", "/free"), role=Role.PUSH_BUTTON, box=(300, 100, 60, 40))
    window = Node(ref=("a", "/w"), role=Role.FRAME, box=(0, 0, 400, 300), children=(view, free))
    return window, inside, half, free


def test_clear_in_view_needs_the_whole_element_in_view() -> None:
    window, inside, half, free = _tree()
    assert clear_in_view(window, inside)
    assert clear_in_view(window, free)
    assert not clear_in_view(window, half)  # its lower half is scrolled out of the view
    stranger = Node(ref=("a", "/x"), role=Role.PUSH_BUTTON, box=(10, 100, 60, 40))
    assert not clear_in_view(window, stranger)  # not in this tree


def test_clear_in_view_refuses_what_something_else_overlaps() -> None:
    window = _tree()[0]
    toast = Node(ref=("a", "/t"), role=Role.PANEL, box=(0, 120, 200, 30))
    covered = Node(
        ref=window.ref, role=window.role, box=window.box, children=(*window.children, toast)
    )
    assert not clear_in_view(covered, covered.children[0].children[0])
    assert clear_in_view(covered, covered.children[1])
    boxless = Node(ref=("a", "/b"), role=Role.PUSH_BUTTON)
    assert not clear_in_view(window, boxless)
