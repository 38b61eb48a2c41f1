"""What the walk reads from the accessibility bus, as plain values. Pure.

What this owns: :class:`Node`, one accessible object with everything rendering needs (numeric
role, name, description, state bits, interfaces, action names, text and numeric value, its
rectangle) and its children, and :class:`Ref`, the object's address on the bus. Nodes are
frozen: a walk builds a fresh tree every time, so an index always means "position in one
rendering", never an object that may have changed since.

It also owns the rules for what is on screen (:func:`hidden`, :func:`placement`,
:func:`child_clip`): the tree shows what the window shows, so a child is left out when the
toolkit says it is not visible (or, where the toolkit keeps it up to date, not showing), when
it has no area (GTK 4 keeps unmapped widgets, such as the pages of a stack that is not shown
or an info bar that is closed, with ``visible`` set but a zero-sized rectangle), and when it
lies wholly outside the part of a scrolled view that is on screen. Children of that last kind
are counted on their parent (:attr:`Node.clipped`), so a long list says how much of it is
scrolled away instead of silently ending.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Final

import msgspec

from . import roles
from .roles import Role, State

#: (unique bus name, object path): how AT-SPI addresses an accessible object.
Ref = tuple[str, str]
#: (x, y, width, height) in pixels: screen coordinates (GTK 4: its window's).
Box = tuple[int, int, int, int]

ACCESSIBLE = "org.a11y.atspi.Accessible"
ACTION = "org.a11y.atspi.Action"
APPLICATION = "org.a11y.atspi.Application"
COMPONENT = "org.a11y.atspi.Component"
EDITABLE_TEXT = "org.a11y.atspi.EditableText"
SELECTION = "org.a11y.atspi.Selection"
TEXT = "org.a11y.atspi.Text"
VALUE = "org.a11y.atspi.Value"


class Node(msgspec.Struct, frozen=True, kw_only=True):
    """One accessible object and its (visible) children, as read in one walk."""

    ref: Ref
    role: int
    name: str = ""
    description: str = ""
    states: int = 0
    interfaces: frozenset[str] = frozenset()
    actions: tuple[str, ...] = ()
    text: str | None = None
    value: float | None = None
    accessible_id: str = ""
    #: A drop-down's chosen item, from its list's selection (Chromium's shows it nowhere else).
    chosen: str = ""
    box: Box | None = None  # its rectangle, None when the object has none
    #: Children left out because they are scrolled out of view: (above, below, left, right).
    clipped: tuple[int, int, int, int] = (0, 0, 0, 0)
    children: tuple[Node, ...] = ()

    def walk(self) -> Iterator[tuple[int, Node, Node | None]]:
        """Pre-order ``(depth, node, parent)``, this node first at depth 0."""
        stack: list[tuple[int, Node, Node | None]] = [(0, self, None)]
        while stack:
            depth, node, parent = stack.pop()
            yield depth, node, parent
            stack.extend((depth + 1, child, node) for child in reversed(node.children))

    def has(self, state: State) -> bool:
        return roles.has(self.states, state)

    @property
    def text_settable(self) -> bool:
        """Editable text a client may replace (EditableText, editable, not read-only)."""
        return (
            EDITABLE_TEXT in self.interfaces
            and self.has(State.EDITABLE)
            and not self.has(State.READ_ONLY)
        )

    @property
    def value_settable(self) -> bool:
        return VALUE in self.interfaces and self.role in roles.SETTABLE_VALUE_ROLES

    @property
    def settable(self) -> bool:
        return self.text_settable or self.value_settable

    @property
    def disabled(self) -> bool:
        """Toolkits mark an unusable element by leaving out both ``sensitive`` and ``enabled``
        (GTK 3 and Qt set both on a usable one, GTK 4 only ``sensitive``, LibreOffice only
        ``enabled`` on a document's paragraphs and cells)."""
        usable = self.has(State.SENSITIVE) or self.has(State.ENABLED)
        return not usable and self.role != Role.APPLICATION

    def count(self) -> int:
        return sum(1 for _ in self.walk())


def hidden(states: int, *, window_showing: bool) -> bool:
    """Whether a child with these states is left out of the tree.

    Invisible objects always are. ``showing`` (visible *and* mapped on screen) is only trusted
    when the window itself reports it: GTK 3 does, so closed menus and inactive stack pages
    drop out; GTK 4.8 sets it on nothing, so it cannot be used there.
    """
    if not roles.has(states, State.VISIBLE):
        return True
    return window_showing and not roles.has(states, State.SHOWING)


#: Where a child is relative to what its parent shows.
SHOWN: Final = "shown"
NOT_DRAWN: Final = "not drawn"  # no area, or a toolkit's placeholder rectangle
ABOVE: Final = "above"
BELOW: Final = "below"
LEFT: Final = "left"
RIGHT: Final = "right"
OUT: Final = "out of view"  # scrolled away, side not known: see resolve_sides()
#: The scrolled-away places, in the order of :attr:`Node.clipped`.
OUT_OF_VIEW: Final = (ABOVE, BELOW, LEFT, RIGHT)

# GTK 3 reports an unmapped object at (-2**31, -2**31); nothing real lies that far out.
_FAR: Final = -(2**30)

#: Roles whose rectangle is a viewport: descendants outside it are scrolled out of view.
VIEWPORT_ROLES: Final = frozenset({49, 68})  # scroll pane, viewport
#: Roles that open a surface of their own (a popup menu, a popover, a tooltip): their
#: descendants are drawn in another window, not inside the rectangle the role reports (a GTK 3
#: menu-bar item's items lie below it), so they are not clipped to the window around them.
SURFACE_ROLES: Final = frozenset({Role.MENU, 41, Role.WINDOW, 64, Role.DIALOG, 2})


def placement(box: Box | None, clip: Box | None) -> str:
    """Where an object with rectangle ``box`` is, given the visible rectangle ``clip``. Pure.

    No rectangle (the object has no Component interface) says nothing: shown. A rectangle with
    no area is not drawn. Outside ``clip`` it is above, below, left or right of it (above and
    below win when it is out both ways, as lists scroll vertically far more often).
    """
    if box is None:
        return SHOWN
    x, y, w, h = box
    if w <= 0 or h <= 0 or x <= _FAR or y <= _FAR:
        return NOT_DRAWN
    if clip is None:
        return SHOWN
    cx, cy, cw, ch = clip
    if y + h <= cy:
        return ABOVE
    if y >= cy + ch:
        return BELOW
    if x + w <= cx:
        return LEFT
    if x >= cx + cw:
        return RIGHT
    return SHOWN


def needs_box(states: int) -> bool:
    """Whether a child's rectangle can change :func:`where`'s answer for it. Pure.

    An invisible or defunct child is not drawn whatever its rectangle says, so the walk need
    not ask for it. Every other answer depends on the rectangle: on GTK 4 nothing but a
    zero-sized rectangle marks an unmapped widget, and on GTK 3 a child that is not showing
    is still counted as scrolled out of view when its rectangle lies outside the view.
    """
    return roles.has(states, State.VISIBLE) and not roles.has(states, State.DEFUNCT)


def where(states: int, box: Box | None, clip: Box | None, *, window_showing: bool) -> str:
    """Whether a child object is on screen (:data:`SHOWN`), and if not, why. Pure.

    Invisible or defunct: not drawn. Where the toolkit keeps ``showing`` up to date
    (``window_showing``, GTK 3), that state decides for an object without area: GTK 3 gives a
    notebook page the rectangle of its tab, which has none while the notebook hides its tabs,
    yet the page's content is on screen. Elsewhere (GTK 4) no area means not drawn. An object
    with area outside ``clip`` is scrolled out of view (:data:`ABOVE` …) even when it is not
    showing, as GTK 3 list cells out of view are not; otherwise ``showing`` decides where it
    is kept up to date.
    """
    if not needs_box(states):
        return NOT_DRAWN
    place = placement(box, clip)
    if place == NOT_DRAWN and window_showing:
        if not roles.has(states, State.SHOWING):
            return NOT_DRAWN
        # GTK 3's tree and list cells outside the visible rows keep "showing" and their size
        # but are placed at (-2**31, -2**31): scrolled out of view, on a side their order says.
        if box is not None and box[0] <= _FAR and box[2] > 0 and box[3] > 0:
            return OUT
        return SHOWN
    if place != SHOWN:
        return place
    return NOT_DRAWN if hidden(states, window_showing=window_showing) else SHOWN


#: GtkButton and what derives from it (toggle and menu buttons, link buttons, the buttons of
#: a GTK 4 stack switcher or libadwaita view switcher, which are tabs): their AT-SPI ``click``
#: action shows the button pressed and emits ``clicked`` only when GTK's 250 ms activation
#: timeout ends (``ACTIVATE_TIMEOUT`` in gtkbutton.c, GTK 3 and GTK 4). Clocks' view switcher
#: selected its new tab 250 ms after the action, after the reply had been read.
DELAYED_CLICK_ROLES: Final = frozenset(
    {Role.PUSH_BUTTON, Role.TOGGLE_BUTTON, Role.PUSH_BUTTON_MENU, Role.PAGE_TAB, Role.LINK}
)


def click_is_delayed(role: int, actions: tuple[str, ...]) -> bool:
    """Whether pressing an element with this role and these actions through its press-like
    action takes effect only after GTK's activation timeout. Pure."""
    primary = roles.primary_action(actions)
    if primary is None or role not in DELAYED_CLICK_ROLES:
        return False
    return actions[primary].rsplit(".", 1)[-1].casefold() == "click"


def sure_point(
    rect: Box, size: tuple[int, int], frame: Box, *, margin: int = 2
) -> tuple[int, int] | None:
    """A root-window point that lies inside ``rect`` wherever the toolkit placed its window's
    content inside the X window ``frame``, or None when there is none. Pure.

    ``rect`` is relative to the toolkit's window of ``size``; ``frame`` is the X window holding
    it, which may be larger (GTK 4 and GTK 3 windows with client-side decorations keep an
    invisible border around their content and do not say how it is split between the sides).
    The content lies somewhere inside the frame, so every possible position of ``rect`` is
    covered, and the point is the middle of the part common to all of them, ``margin`` pixels
    clear of its edges. ``rect`` must lie wholly inside the window.
    """
    x, y, w, h = rect
    fx, fy, fw, fh = frame
    slack_x, slack_y = fw - size[0], fh - size[1]
    if w <= 0 or h <= 0 or slack_x < 0 or slack_y < 0:
        return None
    if x < 0 or y < 0 or x + w > size[0] or y + h > size[1]:
        return None
    left, right = fx + x + slack_x, fx + x + w  # common to all placements: [left, right)
    top, bottom = fy + y + slack_y, fy + y + h
    if right - left <= 2 * margin or bottom - top <= 2 * margin:
        return None
    return (left + right) // 2, (top + bottom) // 2


def popup_open(root: Node) -> bool:
    """Whether something below ``root`` opens a surface of its own (a popover, tooltip or
    dialog inside the window's tree, or a menu showing its items: a GTK 3 menu-bar title is a
    menu whose closed items are left out): such a surface may cover any point of the window.
    Pure."""
    return any(
        depth > 0 and node.role in SURFACE_ROLES and (node.children or node.role != Role.MENU)
        for depth, node, _ in root.walk()
    )


def clear_in_view(root: Node, target: Node) -> bool:
    """Whether ``target``'s rectangle, as walked, lies wholly in view (inside the window and
    every scrolled view around it) and overlaps no element of the tree other than its own
    ancestors and descendants (an overlay, a toast, a neighbour drawn over it). Then a pointer
    press in it reaches ``target`` and nothing else. Pure."""
    box = target.box
    if box is None or box[2] <= 0 or box[3] <= 0:
        return False
    path = _path_to(root, target)
    if path is None:
        return False
    clip = root.box if root.box is not None and root.box[2] > 0 and root.box[3] > 0 else None
    for node in path[1:-1]:
        clip = child_clip(node.role, node.box, clip)
    if clip is not None and intersect(clip, box) != box:
        return False
    related = {id(node) for node in path} | {id(node) for _, node, _ in target.walk()}
    for _, other, _ in root.walk():
        if id(other) in related or other.box is None:
            continue
        common = intersect(other.box, box)
        if common[2] > 0 and common[3] > 0:
            return False
    return True


def _path_to(root: Node, target: Node) -> list[Node] | None:
    """The nodes from ``root`` down to ``target`` (the very object), or None."""
    if root is target:
        return [root]
    for child in root.children:
        below = _path_to(child, target)
        if below is not None:
            return [root, *below]
    return None


def hollow(box: Box | None, places: Sequence[str]) -> bool:
    """Whether an element without a rectangle of its own is left out because it has children
    and none of them is drawn. Pure.

    GTK 4's stack and notebook page objects have no Component interface: only their content
    (a child) says whether the page is on screen. Once the content is left out, an empty
    ``container Page 2`` would still be listed for every hidden page."""
    return box is None and bool(places) and all(place == NOT_DRAWN for place in places)


def resolve_sides(places: list[str]) -> list[str]:
    """Children's places with :data:`OUT` made :data:`ABOVE` when a shown child follows it
    (the rows before the visible ones; a column header that stays on screen comes first and
    does not count) and :data:`BELOW` otherwise. Pure."""
    if OUT not in places:
        return places
    last = max((at for at, p in enumerate(places) if p == SHOWN), default=-1)
    return [(ABOVE if at < last else BELOW) if p == OUT else p for at, p in enumerate(places)]


def intersect(a: Box, b: Box) -> Box:
    """The common part of two rectangles (zero-sized when they do not meet). Pure."""
    x1, y1 = max(a[0], b[0]), max(a[1], b[1])
    x2, y2 = min(a[0] + a[2], b[0] + b[2]), min(a[1] + a[3], b[1] + b[3])
    return x1, y1, max(0, x2 - x1), max(0, y2 - y1)


def child_clip(role: int, box: Box | None, clip: Box | None) -> Box | None:
    """The visible rectangle a node's children are judged against. Pure.

    A scrolled view narrows it to its own rectangle; a role with a surface of its own starts
    afresh (no clip); anything else passes its parent's on.
    """
    if role in SURFACE_ROLES:
        return None
    if role in VIEWPORT_ROLES and box is not None and box[2] > 0 and box[3] > 0:
        return box if clip is None else intersect(clip, box)
    return clip
