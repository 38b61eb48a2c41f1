"""When the X server draws on screen: the DAMAGE extension on the root window.

What this owns: a second X connection (python-xlib) with a Damage object on the root window
reporting every drawn rectangle, a reader task in the server's nursery that numbers them, and
fences: a request whose answer comes back in the same event stream, so that "drawn after the
fence" means drawn after the moment we asked, whatever the scheduling on our side.

Why the root window: it is what screenshots read, so its damage is exactly "the pixels a
screenshot would show have changed", for the app's window, its menus and dialogs alike, with a
compositor or without one.

Theory of operation: the connection is opened in a worker thread (connecting and querying
extensions need round trips) and used only from the trio thread afterwards, without blocking:
requests here have no replies, and events are read when the socket is readable. A fence
changes a property on a small unmapped window of our own; the server sends the resulting
PropertyNotify after every DamageNotify it generated before handling the change.
"""

from __future__ import annotations

import collections
import math
from typing import Any, Final

import trio

_KEEP: Final = 512  # recent damage rectangles kept (a burst of drawing is far fewer)

Rect = tuple[int, int, int, int]


class DamageUnavailable(Exception):
    """The display cannot report damage (no DAMAGE extension, or no display at all)."""


def overlaps(a: Rect, b: Rect) -> bool:
    """Whether two ``(x, y, width, height)`` rectangles share a pixel. Pure."""
    ax, ay, aw, ah = a
    bx, by, bw, bh = b
    return ax < bx + bw and bx < ax + aw and ay < by + bh and by < ay + ah


class Damage:
    """Damage on one display's root window, numbered in the order the server reported it."""

    def __init__(self, conn: Any) -> None:
        from Xlib import X, Xatom

        self._conn = conn
        root = conn.screen().root
        self._notify = conn.extension_event.DamageNotify
        self._property_notify = X.PropertyNotify
        self._atom = conn.intern_atom("_DESKHAND_FENCE")
        self._integer = Xatom.INTEGER
        self._window = root.create_window(
            -10, -10, 1, 1, 0, 0, X.InputOnly, X.CopyFromParent, event_mask=X.PropertyChangeMask
        )
        self._damage = root.damage_create(_raw_rectangles())
        conn.flush()
        # (number, rectangle, when it was read on the trio clock), oldest first
        self._recent: collections.deque[tuple[int, Rect, float]] = collections.deque(maxlen=_KEEP)
        self.seq = 0  # how many damage reports so far
        self._fences_sent = 0
        self._fences_back = 0
        self._fence_seq: dict[int, int] = {}  # fence number -> damage number when it came back
        self._changed = trio.Event()
        self.alive = True

    @classmethod
    async def open(cls, display: str) -> Damage:
        def connect() -> Damage:
            from Xlib import display as xdisplay
            from Xlib import error as xerror

            from . import xlibquirks

            try:
                conn = xdisplay.Display(display or None)
            except (xerror.DisplayError, xerror.ConnectionClosedError, xerror.XauthError) as exc:
                xlibquirks.close_abandoned_sockets(exc)
                raise DamageUnavailable(f"cannot connect to X display {display!r}") from exc
            try:
                xlibquirks.restore_core_errors(conn)
                if not conn.has_extension("DAMAGE"):
                    raise DamageUnavailable(f"X display {display!r} has no DAMAGE extension")
                conn.damage_query_version()  # required before any other DAMAGE request
                conn.set_error_handler(lambda error, request: None)
                return cls(conn)
            except BaseException:
                conn.close()
                raise

        return await trio.to_thread.run_sync(connect)

    async def run(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        """Read events until the connection is closed or lost (then :attr:`alive` is False)."""
        from Xlib import error as xerror

        task_status.started()
        try:
            while True:
                while self._conn.pending_events():  # reads what has arrived, never blocks
                    self._handle(self._conn.next_event())
                await trio.lowlevel.wait_readable(self._conn.fileno())
        except (xerror.ConnectionClosedError, OSError, trio.ClosedResourceError):
            pass
        finally:
            self.alive = False
            self._wake()

    def _handle(self, event: Any) -> None:
        if event.type == self._notify:
            area = event.area
            self.seq += 1
            rect = (area.x, area.y, area.width, area.height)
            self._recent.append((self.seq, rect, trio.current_time()))
        elif event.type == self._property_notify and event.atom == self._atom:
            self._fence_seq[self._fences_back] = self.seq
            self._fences_back += 1
        else:
            return
        self._wake()

    def _wake(self) -> None:
        self._changed.set()
        self._changed = trio.Event()

    async def _next(self, deadline: float) -> bool:
        """Until the next event or ``deadline`` (trio clock); False at the deadline."""
        if not self.alive:
            return False
        with trio.move_on_at(deadline):
            await self._changed.wait()
            return True
        return False

    async def fence(self, deadline: float) -> int | None:
        """The damage number the server had reached when it handled our request: later ones
        were drawn after this call. None when the answer did not come by ``deadline``."""
        from Xlib import error as xerror

        mine = self._fences_sent
        try:
            self._window.change_property(self._atom, self._integer, 32, [mine])
            self._conn.flush()
        except (xerror.ConnectionClosedError, OSError):
            self.alive = False
            return None
        self._fences_sent += 1
        while self._fences_back <= mine:
            if not await self._next(deadline):
                return None
        seq = self._fence_seq.pop(mine)
        for late in [n for n in self._fence_seq if n < mine]:  # fences given up on
            del self._fence_seq[late]
        return seq

    def last_in(self, rect: Rect) -> int:
        """The number of the latest damage that touched ``rect`` (0: none kept)."""
        for seq, area, _ in reversed(self._recent):
            if overlaps(area, rect):
                return seq
        return 0

    def drawn_at(self, rect: Rect) -> float:
        """When (trio clock) the latest damage that touched ``rect`` was read; -inf: none kept.
        Read, not drawn: a busy moment on our side only makes it look more recent."""
        for _, area, when in reversed(self._recent):
            if overlaps(area, rect):
                return when
        return -math.inf

    async def drawn_after(self, rect: Rect, seq: int, deadline: float) -> bool:
        """Until something is drawn in ``rect`` after damage number ``seq``; False when
        ``deadline`` (trio clock) comes first."""
        while self.last_in(rect) <= seq:
            if not await self._next(deadline):
                return False
        return True

    def close(self) -> None:
        """Close the connection (from the trio thread: the reader is told first)."""
        self.alive = False
        try:
            trio.lowlevel.notify_closing(self._conn.fileno())
        except (RuntimeError, OSError):  # outside trio, or already closed
            pass
        try:
            self._conn.close()
        except Exception:  # closing a lost connection may fail in any way
            pass


def _raw_rectangles() -> int:
    from Xlib.ext import damage

    return int(damage.DamageReportRawRectangles)
