"""The X11 half of a tool call, seen from the backend: one lazily opened display, in a thread.

What this owns: opening :class:`~.x11.X11` on first use (and again after a failure, since a
display may come up later), running its synchronous calls in a worker thread, turning its
errors into sentences, and the geometry between a window screenshot and the screen: tool
coordinates are pixels of the window's screenshot, so a point maps to the screen by adding
the window's origin.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Protocol, TypeVar

import outcome
import trio

if TYPE_CHECKING:
    from .x11 import X11
    from .x11guard import Guard

T = TypeVar("T")

#: Largest screenshot side we take (a full-screen window on a large monitor is still fine).
MAX_SIDE = 8192
#: After input, an app may update its accessibility tree before it repaints (GTK 4 on Xvfb
#: repaints 100-300 ms after a click, with press animations), so a screenshot taken soon after
#: input waits until SETTLE_MIN has passed since the input and two captures SETTLE_STEP apart
#: differ in at most SETTLE_NOISE bytes (a blinking, fading caret changes about 70), for at
#: most SETTLE_MAX seconds.
SETTLE_MIN = 0.15
SETTLE_STEP = 0.04
SETTLE_MAX = 1.0
SETTLE_NOISE = 512


def changed_bytes(a: bytes, b: bytes) -> int:
    """How many bytes differ between two captures of the same size. Pure; C-speed big-int
    arithmetic rather than a Python loop over half a million bytes."""
    if len(a) != len(b):
        return max(len(a), len(b))
    xor = int.from_bytes(a, "big") ^ int.from_bytes(b, "big")
    return len(a) - xor.to_bytes(len(a), "big").count(0)


# Each byte falls in a bin of two quantizations whose bin edges lie 32 apart (v >> 6 and
# (v + 32) >> 6, packed into one byte as low and high bits): two values land in different bins
# of both only when they are at least 32 apart, and always when they are 64 or more apart.
_BINS = bytes((v >> 6) | (((v + 32) >> 6) << 3) for v in range(256))
_BOTH_DIFFER = bytes(int(bool(x & 0b111) and bool(x >> 3)) for x in range(256))


def significant_bytes(a: bytes, b: bytes) -> int:
    """How many bytes differ by a lot (32 or more of 255, surely from 64) between two captures
    of the same size. A colour transition or a fading caret changes pixels by small steps
    from one frame to the next; new text or a new widget changes them by a lot. Pure, and
    C-speed like :func:`changed_bytes`."""
    if len(a) != len(b):
        return max(len(a), len(b))
    if a == b:
        return 0
    xor = int.from_bytes(a.translate(_BINS), "big") ^ int.from_bytes(b.translate(_BINS), "big")
    return xor.to_bytes(len(a), "big").translate(_BOTH_DIFFER).count(1)


class ScreenUnavailable(Exception):
    """X11 cannot be used for this call; the message says why."""


def to_screen(origin: tuple[int, int], x: float, y: float) -> tuple[float, float]:
    """A point in a window screenshot -> the same point in root-window pixels. Pure."""
    return origin[0] + x, origin[1] + y


def centre(extents: tuple[int, int, int, int]) -> tuple[float, float]:
    """The middle of an ``(x, y, width, height)`` rectangle. Pure."""
    x, y, w, h = extents
    return x + w / 2, y + h / 2


def usable_rect(extents: tuple[int, int, int, int]) -> bool:
    """Whether a window rectangle can be captured (GTK 3 reports unmapped ones off-screen)."""
    x, y, w, h = extents
    return 0 < w <= MAX_SIDE and 0 < h <= MAX_SIDE and x > -MAX_SIDE and y > -MAX_SIDE


class Seat(Protocol):
    """Where input goes and pictures come from: :class:`Screen` on X11,
    :class:`~.wlscreen.WaylandScreen` on Wayland."""

    @property
    def kind(self) -> str: ...

    def attach(self, nursery: trio.Nursery) -> None: ...

    async def run(self, fn: Callable[[X11], T], *, stop: threading.Event | None = None) -> T: ...

    async def send(self, what: str, *args: Any, guard: Guard | None, **options: Any) -> None: ...

    def input_ready(self) -> bool: ...

    async def screenshot(
        self, extents: tuple[int, int, int, int], *, input_age: float | None = None
    ) -> bytes | None: ...

    async def capture(self, extents: tuple[int, int, int, int]) -> tuple[int, int, bytes]: ...

    async def encode(self, shot: tuple[int, int, bytes]) -> bytes: ...

    async def activate(self, pid: int, *, focus: bool) -> None: ...

    async def aclose(self) -> None: ...


class Screen:
    """The X display named by ``DISPLAY`` in ``env``; opened when first needed."""

    kind = "x11"

    def __init__(self, env: Mapping[str, str] | None = None) -> None:
        self._display = (os.environ if env is None else env).get("DISPLAY", "")
        self._x11: X11 | None = None

    def attach(self, nursery: trio.Nursery) -> None:
        """Nothing to start: the display is opened in a worker thread when first used."""

    def input_ready(self) -> bool:
        """X11 input needs no one's say: always."""
        return True

    async def send(self, what: str, *args: Any, guard: Guard | None, **options: Any) -> None:
        """Run the :class:`~.x11.X11` input method ``what`` under ``guard`` (see
        :mod:`.x11guard`); a cancelled call stops it between batches."""

        def call(display: X11) -> None:
            getattr(display, what)(*args, guard=guard, **options)

        await self.run(call, stop=guard.stop if guard is not None else None)

    def _open(self) -> X11:
        if self._x11 is not None:
            return self._x11
        try:
            from . import x11
        except ImportError as exc:  # python-xlib is a Linux-only dependency
            raise ScreenUnavailable(f"python-xlib is not installed ({exc})") from exc
        try:
            self._x11 = x11.X11.open(self._display or None)
        except x11.X11Unavailable as exc:
            raise ScreenUnavailable(str(exc)) from exc
        return self._x11

    async def run(self, fn: Callable[[X11], T], *, stop: threading.Event | None = None) -> T:
        """``fn(x11)`` in a worker thread; X errors and a lost display become
        :class:`ScreenUnavailable` (a lost display is reopened next time).

        A worker thread cannot be interrupted, so a cancelled call sets ``stop`` (which
        guarded input checks between batches) and then waits for the thread to return.
        """

        def work() -> T:
            handle = self._open()
            from . import x11

            try:
                return fn(handle)
            except x11.X11Unavailable as exc:
                self._forget()
                raise ScreenUnavailable(str(exc)) from exc
            except x11.X11Error as exc:
                raise ScreenUnavailable(f"the X server refused: {exc}") from exc

        if stop is None:
            return await trio.to_thread.run_sync(work)
        async with trio.open_nursery() as nursery:

            async def stop_when_cancelled() -> None:
                try:
                    await trio.sleep_forever()
                finally:
                    stop.set()

            nursery.start_soon(stop_when_cancelled)
            # Captured, so that the thread's own exception leaves the nursery unwrapped.
            got = await outcome.acapture(trio.to_thread.run_sync, work)
            nursery.cancel_scope.cancel()
        return got.unwrap()

    def _forget(self) -> None:
        handle, self._x11 = self._x11, None
        if handle is not None:
            try:
                handle.close()
            except Exception:  # closing a dead connection may fail in any way
                pass

    async def screenshot(
        self, extents: tuple[int, int, int, int], *, input_age: float | None = None
    ) -> bytes | None:
        """A PNG of the window rectangle, or None when no screenshot can be taken.

        ``input_age``: seconds since input was last sent to the app, when that was recent; the
        pixels are then captured until they settle (see ``SETTLE_MIN``).
        """
        if not usable_rect(extents):
            return None
        x, y, w, h = extents

        def capture(d: X11) -> bytes:
            from . import png

            if input_age is not None and input_age < SETTLE_MIN:
                time.sleep(SETTLE_MIN - input_age)
            width, height, rgb = d.screenshot_rgb(x, y, w, h)
            deadline = time.monotonic() + (SETTLE_MAX if input_age is not None else 0)
            while time.monotonic() < deadline:
                time.sleep(SETTLE_STEP)
                again = d.screenshot_rgb(x, y, w, h)[2]
                quiet = changed_bytes(again, rgb) <= SETTLE_NOISE
                rgb = again
                if quiet:
                    break
            return png.encode_rgb(width, height, rgb)

        try:
            return await self.run(capture)
        except (ScreenUnavailable, ValueError):
            return None

    async def capture(self, extents: tuple[int, int, int, int]) -> tuple[int, int, bytes]:
        """The window rectangle's pixels now, as ``(width, height, packed RGB)``.

        Raises:
            ScreenUnavailable: No display, or the rectangle lies off the screen.
        """
        x, y, w, h = extents
        try:
            return await self.run(lambda d: d.screenshot_rgb(x, y, w, h))
        except ValueError as exc:
            raise ScreenUnavailable(str(exc)) from exc

    async def encode(self, shot: tuple[int, int, bytes]) -> bytes:
        """A capture as PNG (in a worker thread: a large window takes milliseconds)."""
        from . import png

        return await trio.to_thread.run_sync(lambda: png.encode_rgb(*shot))

    async def activate(self, pid: int, *, focus: bool) -> None:
        """Raise ``pid``'s window (with ``focus``, give it the keyboard); best effort, so a
        display that is missing or refuses leaves the call to say so on its own terms."""
        if pid <= 0:
            return
        try:
            await self.run(lambda d: d.activate_pid(pid, focus=focus))
        except ScreenUnavailable:
            pass

    def close(self) -> None:
        self._forget()

    async def aclose(self) -> None:
        self._forget()
