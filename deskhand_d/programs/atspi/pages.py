"""Which of the pages stacked in one place is on screen, where the toolkit does not say.

What this owns: the rule for siblings that share one rectangle (the pages of a GTK 4 stack,
notebook or libadwaita view stack), and the probe that tells the page on screen from the
others. The rules are pure functions of :class:`~.model.Node` values; :func:`shown_page` asks
the application.

Why it is needed. GTK 4.8 keeps ``showing`` on its windows only, so the walk judges a widget by
its rectangle: an unmapped one has none (:func:`~.model.where`). A stack page that was on
screen once keeps the allocation it had when it is swapped out, though: after Clocks switched
from World to Stopwatch, its World page (and the "Add World Clock" page inside it) still
reported the full rectangle, ``visible`` and ``sensitive``, exactly like the Stopwatch page
drawn there. Nothing in the page's own states or rectangle tells them apart.

What does: GTK answers ``Component.GetAccessibleAtPoint`` with ``gtk_widget_pick``, which
never picks an unmapped widget. So where two or more siblings share one rectangle, their
parent is asked which object lies at a few points of it, and the sibling holding the answer is
the one on screen; the others are left out. Points that answer nothing (GTK answers null for a
widget whose accessible object it has not created yet) are tried in turn; when none answers,
every sibling is kept, as before, rather than guessing. A toolkit that keeps ``showing`` up to
date (GTK 3, Qt, browsers) never needs this: the walk asks only where it does not.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final

from .bus import Bus, BusError
from .model import ACCESSIBLE, COMPONENT, NOT_DRAWN, Box, Node, Ref

SCREEN_COORDS: Final = 0  # AtspiCoordType, as the walk reads rectangles
#: How many ancestors of a picked object are looked up to find the page holding it.
MAX_HOPS: Final = 8
_NULL_PATH: Final = "/org/a11y/atspi/null"


def extent(node: Node) -> Box | None:
    """``node``'s rectangle; for an object without one (GTK 4's stack and notebook page
    objects have no Component interface) the rectangle around its children's. Pure."""
    if node.box is not None:
        return node.box
    boxes = [b for b in (extent(c) for c in node.children) if b is not None and has_area(b)]
    if not boxes:
        return None
    x1, y1 = min(b[0] for b in boxes), min(b[1] for b in boxes)
    x2 = max(b[0] + b[2] for b in boxes)
    y2 = max(b[1] + b[3] for b in boxes)
    return x1, y1, x2 - x1, y2 - y1


def has_area(box: Box) -> bool:
    return box[2] > 0 and box[3] > 0


def stacked(children: Sequence[Node]) -> list[list[int]]:
    """Groups of two or more of ``children`` (their indices) that share one rectangle with an
    area: the pages of a stack, of which only one is drawn. Pure."""
    by_box: dict[Box, list[int]] = {}
    for at, child in enumerate(children):
        box = extent(child)
        if box is not None and has_area(box):
            by_box.setdefault(box, []).append(at)
    return [group for group in by_box.values() if len(group) > 1]


def probe_points(box: Box) -> list[tuple[int, int]]:
    """Points of ``box`` to ask about, the middle first, then near each corner. Pure."""
    x, y, w, h = box
    inset_x, inset_y = min(8, w // 4), min(8, h // 4)
    return [
        (x + w // 2, y + h // 2),
        (x + inset_x, y + inset_y),
        (x + w - 1 - inset_x, y + inset_y),
        (x + inset_x, y + h - 1 - inset_y),
        (x + w - 1 - inset_x, y + h - 1 - inset_y),
    ]


def holder(pages: Sequence[Node], found: Ref) -> int | None:
    """Which of ``pages`` (its position) holds the object ``found`` in its subtree. Pure."""
    for at, page in enumerate(pages):
        if any(node.ref == found for _, node, _ in page.walk()):
            return at
    return None


async def shown_page(bus: Bus, parent: Ref, pages: Sequence[Node]) -> int | None:
    """Which of ``pages`` (siblings under ``parent`` sharing one rectangle) is on screen, by
    asking ``parent`` what lies at points of that rectangle; None when no point tells."""
    box = extent(pages[0])
    if box is None:
        return None
    for x, y in probe_points(box):
        try:
            (found,) = await bus.call(
                parent, COMPONENT, "GetAccessibleAtPoint", "iiu", (x, y, SCREEN_COORDS)
            )
        except BusError:
            return None  # the toolkit cannot tell: keep every page
        ref = (str(found[0]), str(found[1]))
        if not ref[0] or ref[1] == _NULL_PATH:
            continue
        at = await _holder_above(bus, parent, pages, ref)
        if at is not None:
            return at
    return None


async def _holder_above(bus: Bus, parent: Ref, pages: Sequence[Node], found: Ref) -> int | None:
    """:func:`holder` for ``found`` or, when the walk did not list it (an object below the
    tree's leaves), for the nearest of its ancestors that it did list; None once the search
    reaches ``parent`` (the point lies on none of the pages)."""
    current = found
    for _ in range(MAX_HOPS):
        if current == parent:
            return None
        at = holder(pages, current)
        if at is not None:
            return at
        try:
            above = await bus.get(current, ACCESSIBLE, "Parent")
        except BusError:
            return None
        current = (str(above[0]), str(above[1]))
        if current[1] == _NULL_PATH:
            return None
    return None


async def drop_hidden(bus: Bus, parent: Ref, children: list[tuple[Node | None, str]]) -> None:
    """Where ``children`` (the walk's ``(node, place)`` per child of ``parent``) share one
    rectangle, keep only the page on screen, if the app can tell which (:func:`shown_page`);
    the others become ``(None, NOT_DRAWN)``, in place."""
    kept = [at for at, (node, _) in enumerate(children) if node is not None]
    nodes = [node for node, _ in children if node is not None]
    for group in stacked(nodes):
        shown = await shown_page(bus, parent, [nodes[at] for at in group])
        if shown is None:
            continue
        for at, index in enumerate(group):
            if at != shown:
                children[kept[index]] = (None, NOT_DRAWN)
