"""Large containers, read by what is visible of them: never listed in full.

What this owns: which containers are too large to list (:func:`is_large`), and reading such a
container's children in a bounded window around the part its rectangle shows
(:func:`read_window`), with the children left unread counted by side, so the tree says how
much more there is (``Details: 1999 more items scrolled out of view (0 above, 1999 below)``).

Why. ``Accessible.GetChildren`` on a spreadsheet answers with every cell, and an application
that creates its cells' accessible objects on demand (LibreOffice, GTK 3's tree views) creates
all of them to answer: observing LibreOffice that way drove it to 1.8-4 GB at full CPU. A
container that says it manages its descendants (``MANAGES_DESCENDANTS``: its children are made
on demand, their number may be huge) is therefore read by position once it has more children
than a window holds, and so is any container with more children than the hard limit, whatever
its states say.

Theory of operation. The container's own rectangle is its viewport. The first and last
children in view are found down and up its left edge with ``Component.GetAccessibleAtPoint``
(a header that stays put answers nothing there, so a few points are tried) and placed with
``GetIndexInParent``; for a table, the last column is found at the first row's right end, the
indices become rows and columns (``Table.GetRowAtIndex``/``GetColumnAtIndex``) and the visible
rows and columns are read cell by cell (``Table.GetAccessibleAt``); a list is read child by
child (``GetChildAtIndex``). A little beyond the visible range is read on each side so that the
walk's usual rules judge the edges, and never more than :data:`WINDOW` children. Where the
visible range cannot be found (no answer anywhere), the first :data:`WINDOW` children are read
and the window is marked unlocated: the walk then reports the tree as cut. A rule's pure part
is a function of its own here (:func:`span`, :func:`table_window`, :func:`unread`,
:func:`edge_points`), tested on values.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Final

import trio

from . import roles
from .bus import Bus, BusError
from .model import ACCESSIBLE, COMPONENT, Box, Ref
from .roles import State

#: Children read of a large container, at most.
WINDOW: Final = 200
#: A container with more children than this is read by window whatever its states say.
HARD_LIMIT: Final = 2000
#: Rows (list items) read beyond the visible ones on each side, for the walk to judge.
MARGIN: Final = 2
TABLE: Final = "org.a11y.atspi.Table"
SCREEN_COORDS: Final = 0
_NULL_PATH: Final = "/org/a11y/atspi/null"
_MAX_HOPS: Final = 6


def is_large(states: int, count: int) -> bool:
    """Whether a container with ``count`` children is read by window, not listed. Pure."""
    if count > HARD_LIMIT:
        return True
    return count > WINDOW and roles.has(states, State.MANAGES_DESCENDANTS)


@dataclass(frozen=True, slots=True)
class Window:
    """The children read of a large container, and how many were left unread on each side."""

    refs: tuple[Ref, ...]
    above: int = 0
    below: int = 0
    left: int = 0
    right: int = 0
    located: bool = True  # False: the visible range was not found, the first ones were read


def span(first: int, last: int, total: int, limit: int, margin: int = MARGIN) -> range:
    """The positions to read: ``first..last`` (the visible ones) widened by ``margin`` on each
    side, kept within ``0..total`` and to at most ``limit`` positions from the top. Pure."""
    if total <= 0 or limit <= 0:
        return range(0)
    lo = max(0, min(first, last) - margin)
    hi = min(total - 1, max(first, last) + margin)
    lo = min(lo, total - 1)
    return range(lo, min(hi + 1, lo + limit))


def table_window(rows: range, cols: range, limit: int) -> tuple[range, range]:
    """Rows and columns to read so that at most ``limit`` cells are read: the columns first
    (all visible ones while at least one row fits), then as many of the rows as fit. Pure."""
    cols = cols[: max(1, limit)]
    per_row = max(1, len(cols))
    rows = rows[: max(1, limit // per_row)]
    return rows, cols


def unread(rows: range, cols: range, n_rows: int, n_cols: int) -> tuple[int, int, int, int]:
    """(above, below, left, right) cells of an ``n_rows`` x ``n_cols`` table outside the
    ``rows`` x ``cols`` read. Pure."""
    if not rows or not cols:
        return 0, n_rows * n_cols, 0, 0
    above = rows.start * n_cols
    below = (n_rows - rows.stop) * n_cols
    left = len(rows) * cols.start
    right = len(rows) * (n_cols - cols.stop)
    return above, max(0, below), left, max(0, right)


class _Reader:
    """The calls of one window read, under the walk's limit on calls in flight."""

    def __init__(self, bus: Bus, ref: Ref, limiter: trio.CapacityLimiter) -> None:
        self.bus, self.ref, self.limiter = bus, ref, limiter

    async def call(self, iface: str, method: str, sig: str | None = None, *args: Any) -> Any:
        async with self.limiter:
            (answer,) = await self.bus.call(self.ref, iface, method, sig, tuple(args))
        return answer

    async def get(self, iface: str, name: str) -> Any:
        async with self.limiter:
            return await self.bus.get(self.ref, iface, name)

    async def child_at_point(self, x: int, y: int) -> int | None:
        """The index of the container's child at the screen point, or None."""
        try:
            found = await self.call(COMPONENT, "GetAccessibleAtPoint", "iiu", x, y, SCREEN_COORDS)
        except BusError:
            return None
        current = (str(found[0]), str(found[1]))
        for _ in range(_MAX_HOPS):  # the deepest object there: climb to the container's child
            if not current[0] or current[1] == _NULL_PATH or current == self.ref:
                return None
            try:
                async with self.limiter:
                    parent = await self.bus.get(current, ACCESSIBLE, "Parent")
                    if (str(parent[0]), str(parent[1])) == self.ref:
                        (index,) = await self.bus.call(current, ACCESSIBLE, "GetIndexInParent")
                        return int(index) if int(index) >= 0 else None
            except BusError:
                return None
            current = (str(parent[0]), str(parent[1]))
        return None

    async def refs_at(self, positions: range) -> list[Ref | None]:
        got: list[Ref | None] = [None] * len(positions)

        async def one(at: int, index: int) -> None:
            try:
                found = await self.call(ACCESSIBLE, "GetChildAtIndex", "i", index)
            except BusError:
                return
            got[at] = (str(found[0]), str(found[1]))

        async with trio.open_nursery() as nursery:
            for at, index in enumerate(positions):
                nursery.start_soon(one, at, index)
        return got

    async def cells(self, rows: range, cols: range) -> list[Ref | None]:
        pairs = [(r, c) for r in rows for c in cols]
        got: list[Ref | None] = [None] * len(pairs)

        async def one(at: int, row: int, col: int) -> None:
            try:
                found = await self.call(TABLE, "GetAccessibleAt", "ii", row, col)
            except BusError:
                return
            got[at] = (str(found[0]), str(found[1]))

        async with trio.open_nursery() as nursery:
            for at, (row, col) in enumerate(pairs):
                nursery.start_soon(one, at, row, col)
        return got


def edge_points(box: Box, *, from_top: bool) -> list[tuple[int, int]]:
    """Points down (or up) the left edge of ``box``, just inside it, to find the first (last)
    child in view: the first one or two may fall on a header that stays put (GTK 3's tree
    view answers nothing there), so a few follow, up to a quarter of the height. Pure."""
    x, y, w, h = box
    px = x + min(3, max(0, w - 1))
    offsets = sorted({min(d, max(0, h - 1)) for d in (3, 16, 32, 48, 64, h // 4)})
    if from_top:
        return [(px, y + d) for d in offsets]
    return [(px, y + h - 1 - d) for d in offsets]


async def read_window(
    bus: Bus,
    ref: Ref,
    count: int,
    box: Box | None,
    interfaces: frozenset[str],
    limiter: trio.CapacityLimiter,
    limit: int = WINDOW,
) -> Window:
    """The children of the large container ``ref`` (``count`` of them) that its rectangle
    ``box`` shows, and a few around them; see the module notes."""
    reader = _Reader(bus, ref, limiter)
    found: dict[str, tuple[int, int] | None] = {"top": None, "bottom": None}
    if box is not None and box[2] > 0 and box[3] > 0:

        async def locate(side: str) -> None:
            for x, y in edge_points(box, from_top=side == "top"):
                index = await reader.child_at_point(x, y)
                if index is not None:
                    found[side] = (index, y)
                    return

        async with trio.open_nursery() as nursery:
            nursery.start_soon(locate, "top")
            nursery.start_soon(locate, "bottom")
    top, bottom = found["top"], found["bottom"]
    if top is None and bottom is None:
        read = await reader.refs_at(range(min(count, limit)))
        refs = tuple(r for r in read if r is not None)
        return Window(refs, below=max(0, count - len(read)), located=False)
    first = top[0] if top is not None else None
    last = bottom[0] if bottom is not None else None
    if TABLE in interfaces:
        right = None
        if box is not None and top is not None:
            right = await reader.child_at_point(box[0] + box[2] - 4, top[1])
        try:
            return await _table_window(reader, first, last, right, limit)
        except BusError:
            pass  # not a usable table after all: read it as a list
    lo = first if first is not None else max(0, (last or 0) - limit + 1)
    hi = last if last is not None else lo + limit - 1
    positions = span(lo, hi, count, limit)
    read = await reader.refs_at(positions)
    return Window(
        tuple(r for r in read if r is not None),
        above=positions.start if positions else 0,
        below=max(0, count - (positions.stop if positions else 0)),
    )


async def _table_window(
    reader: _Reader, first: int | None, last: int | None, right: int | None, limit: int
) -> Window:
    """The visible rows and columns of a table, cell by cell (see :func:`table_window`);
    ``first``/``last``: the indices of the cells found at the top and bottom left, either
    may be missing."""
    n_rows = int(await reader.get(TABLE, "NRows"))
    n_cols = int(await reader.get(TABLE, "NColumns"))
    known = first if first is not None else last
    if known is None or n_rows <= 0 or n_cols <= 0:
        raise BusError("the table does not place its visible cells")
    col0 = int(await reader.call(TABLE, "GetColumnAtIndex", "i", known))
    row0 = row1 = int(await reader.call(TABLE, "GetRowAtIndex", "i", known))
    if first is not None and last is not None:
        row1 = int(await reader.call(TABLE, "GetRowAtIndex", "i", last))
    elif first is None:  # only the bottom is known: the rows above it, as many as fit
        row0 = max(0, row1 - max(1, limit // n_cols) + 1)
    col1 = col0
    if right is not None:
        col1 = int(await reader.call(TABLE, "GetColumnAtIndex", "i", right))
    if min(row0, row1, col0, col1) < 0:
        raise BusError("the table does not place its visible cells")
    rows = span(row0, row1, n_rows, n_rows)
    cols = span(col0, col1, n_cols, n_cols, margin=0)
    rows, cols = table_window(rows, cols, limit)
    found = await reader.cells(rows, cols)
    above, below, left, right_out = unread(rows, cols, n_rows, n_cols)
    return Window(tuple(r for r in found if r is not None), above, below, left, right_out)
