"""The Wayland half of a tool call: keys, clicks and pictures through the compositor.

What this owns: :class:`WaylandScreen`, which stands where :class:`~.screen.Screen` stands on
X11, for sessions where ``WAYLAND_DISPLAY`` is set. Input goes through the compositor's
remote-desktop session (:mod:`.remote`); pictures come from its screen cast (:mod:`.frames`).

Where input lands, proven by the compositor. Wayland lets no client see where windows are or
which one is focused; toolkits report element rectangles relative to their own window, and
GTK 4 keeps reporting its last focused element as focused after its window lost the keyboard.
The compositor says one thing: a stream recording "the focused window" paints the window keys
go to. So before every batch of input (a click, a wheel step, a run of typed characters, a key
chord) a new stream of the focus window is recorded and one frame of it read:

* the window painted there must be one of the app's own windows as its toolkit reports it
  (the same size; or that size with a client-side shadow around it, GTK 3; or inside a frame
  the app draws itself, Qt: :func:`.frames.place`), and no window of another app could be it
  as well (``Guard.other_sizes``); otherwise nothing is sent (``InputStopped``,
  ``target_changed``);
* pointer input is placed through a stream of the whole monitor: the window's pixels are
  found there (:func:`.frames.locate`), and the pixels around each point must show there as
  they are in the window's own frame, so that what the pointer lands on is the app's window
  (not a window kept above it, nor a place off the screen). A window inside a frame the app
  draws itself gets no pointer input: where its content starts cannot be seen.

Screenshots are the same picture: the focus window's frame, when it is one of the app's
windows, once its stream has gone quiet. An app whose window is not focused has no
screenshot (nothing proves which window a picture would show); its tree still reads, and
clicks by index still work through the accessibility actions.

The remote-desktop session (keys, buttons, wheel steps, pointer motion in its monitor's
stream) is started once and kept, one of two kinds (``DESKHAND_WAYLAND_INPUT``, set from
``backend.wayland_input``):

* ``portal`` (the default): the desktop portal's (:mod:`.portal`), which the person approves
  in the desktop's own dialog, sharing one monitor. The focused window is still proven
  through GNOME's screen cast, which needs no dialog of its own; without it (KDE Plasma)
  nothing is asked and nothing sent.
* ``mutter``: GNOME's own (:mod:`.remote`), which asks no one, so only where the person chose
  it (and in tests); it shares the primary monitor.
"""

from __future__ import annotations

import math
import os
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Protocol, TypeVar

import trio

from . import frames, png
from .portal import PortalSession
from .remote import (
    BUTTONS,
    Monitor,
    RemoteSession,
    SeatUnavailable,
    SessionBus,
    Stream,
    point_at,
    screen_cast_only,
    stop_screen_cast,
    warm_up,
)
from .screen import (
    SETTLE_MAX,
    SETTLE_MIN,
    ScreenUnavailable,
    usable_rect,
)
from .x11guard import Guard, Progress, process_alive
from .x11keys import XK_RETURN, XK_TAB, keysym_for_char, parse_key_spec

T = TypeVar("T")

INPUT_ENV: Final = "DESKHAND_WAYLAND_INPUT"
INPUT_KINDS: Final = ("portal", "mutter")
#: Characters typed between two proofs of the focused window.
TYPE_BATCH: Final = 64  # as X11's batches: a proof costs a frame of the focused window
GRAB_ATTEMPTS: Final = 4
#: Pairs of frames (the focused window, the shared monitor) taken to find the window: a caret
#: that blinks between the two makes one pair disagree.
LOCATE_ATTEMPTS: Final = 3
#: A window's stream that sends no frame for this long shows the window as it is now (it
#: sends one for each time the window is drawn: every 17 ms during an animation at 60 Hz).
FRAME_QUIET_S: Final = 0.06
WHEEL_STEPS_PER_PAGE: Final = 5
DRAG_STEPS: Final = 10
_DIRECTIONS: Final = {"up": (0, -1), "down": (0, 1), "left": (1, -1), "right": (1, 1)}
#: How long a call waits for the person to answer the portal's dialog before it says so.
APPROVAL_WAIT_S: Final = 20.0


def input_kind(env: Mapping[str, str]) -> str:
    kind = env.get(INPUT_ENV, "portal").strip().lower()
    return kind if kind in INPUT_KINDS else "portal"


def _inside(size: tuple[int, int], points: Sequence[tuple[float, float]]) -> None:
    """Every point (window coordinates) lies inside a window of ``size``. Pure.

    Raises:
        ValueError: One does not.
    """
    for x, y in points:
        if not (math.isfinite(x) and math.isfinite(y)) or not (
            0 <= x < size[0] and 0 <= y < size[1]
        ):
            raise ValueError(f"({x}, {y}) is not inside the {size[0]}x{size[1]} window")


def _proven(frame: frames.Frame, guard: Guard, progress: Progress, what: str) -> frames.Placed:
    """How one of the app's windows explains the focus window's frame (see
    :func:`.frames.place`). Pure.

    Raises:
        InputStopped: None of them does, or a window of another app would explain it too.
    """
    box = frame.opaque_box()
    placed = None
    if box is not None:
        found = [p for size in sorted(guard.window_sizes) if (p := frames.place(box, size))]
        placed = min(found, key=lambda p: p.origin is None, default=None)  # a known origin first
    if box is None or placed is None:
        shown = f"a {box[2]}x{box[3]} window" if box is not None else "no window"
        raise progress.stopped(
            "target_changed",
            f"the keyboard focus is on {shown}, not on one of the app's windows, so {what} "
            "would have gone elsewhere",
        )
    if any(frames.place(box, size) for size in guard.other_sizes):
        raise progress.stopped(
            "target_changed",
            "another app shows a window that the focused window could be as well as the "
            f"app's, so the compositor cannot show which of them {what} would reach",
        )
    return placed


class Seat(Protocol):
    """A remote-desktop session as the input code uses it (Mutter's or the portal's): input,
    and the monitor stream its pointer motion is measured in."""

    warm: bool
    pointed: bool
    closed: bool
    monitor: Monitor

    async def pipewire_fd(self) -> int | None: ...

    async def stop(self) -> None: ...

    async def key(self, keysym: int, down: bool) -> None: ...

    async def move(self, x: float, y: float) -> None: ...

    async def button(self, code: int, down: bool) -> None: ...

    async def wheel(self, axis: int, steps: int) -> None: ...


@dataclass(slots=True)
class _Asking:
    """The portal's dialog, asked once and answered whenever the person answers it."""

    done: trio.Event = field(default_factory=trio.Event)
    session: PortalSession | None = None
    problem: str = ""


def type_keysyms(text: str) -> list[int]:
    """The keysym of each character to type (Return for a newline, Tab for a tab). Pure.

    Raises:
        ValueError: A control character that no key types.
    """
    out = []
    for char in text.replace("\r\n", "\n"):
        if char in "\n\r":
            out.append(XK_RETURN)
        elif char == "\t":
            out.append(XK_TAB)
        else:
            out.append(keysym_for_char(char))
    return out


class WaylandScreen:
    """Input and pictures on a Wayland session (see the module notes)."""

    kind: Final = "wayland"

    def __init__(self, env: Mapping[str, str]) -> None:
        self.env = dict(env)
        self.input = input_kind(env)
        self._nursery: trio.Nursery | None = None
        self._bus: SessionBus | None = None
        self._lock = trio.Lock()
        self._seat: Seat | None = None
        self._asking: _Asking | None = None

    def attach(self, nursery: trio.Nursery) -> None:
        self._nursery = nursery

    def input_ready(self) -> bool:
        """Whether input can go out without first asking the person (GNOME's own interface,
        or a portal session they already allowed)."""
        return self.input == "mutter" or (self._seat is not None and not self._seat.closed)

    async def _session_bus(self) -> SessionBus:
        if self._bus is None:
            if self._nursery is None:
                raise RuntimeError("WaylandScreen.attach() was not called")
            try:
                self._bus = await SessionBus.open(self.env, self._nursery)
            except SeatUnavailable as exc:
                raise ScreenUnavailable(str(exc)) from None
        return self._bus

    @asynccontextmanager
    async def _batch(
        self,
        guard: Guard,
        progress: Progress,
        what: str,
        *,
        points: Sequence[tuple[float, float]] = (),
    ) -> AsyncIterator[tuple[Seat, tuple[int, int]]]:
        """Input for one batch, once the focused window is proven to be one of the app's (see
        the module notes): the sender, and where the window's top-left corner is in the
        stream its pointer motion is measured in (found on the portal only for pointer input,
        whose ``points`` in window coordinates must lie inside that window). Nothing has been
        sent when this raises.

        Raises:
            ValueError: A point is outside the focused window.
            InputStopped: The focused window is not the app's (or not in view).
        """
        if not process_alive(guard.pid):
            raise progress.stopped("target_gone", f"the app (process {guard.pid}) has exited")
        if self._seat is None:
            # Nothing is asked of the person on a desktop where the answer could not be used
            # (no GNOME screen cast to prove the focus): this fails first there.
            await self._focus_frame()
        seat = await self._seat_session()
        corner: tuple[int, int] | None = None
        for _ in range(LOCATE_ATTEMPTS):
            if not points:
                _proven(await self._focus_frame(), guard, progress, what)
                corner = (0, 0)
                break
            frame, screen = await self._frame_pair(seat)  # taken together: one moment
            placed = _proven(frame, guard, progress, what)
            _inside(placed.size, points)
            if placed.origin is None:
                raise ScreenUnavailable(
                    "this app draws its own window frame, so where its content starts cannot "
                    "be seen from outside: keys reach it, but the pointer cannot be placed "
                    "(use the elements' own actions: a click by index where one has an "
                    "action, or its secondary actions)"
                )
            # The toolkit's points, measured in the opaque window (what locate compares).
            shift = placed.origin[0] - placed.box[0], placed.origin[1] - placed.box[1]
            inner = [(x + shift[0], y + shift[1]) for x, y in points]
            if screen is not None:
                found = await trio.to_thread.run_sync(
                    frames.locate, frame, placed.box, screen, inner
                )
                if found is not None:
                    corner = found[0] + shift[0], found[1] + shift[1]
                    break
        if corner is None:
            raise progress.stopped(
                "target_changed",
                "the app's window does not show on the screen where the pointer would go "
                f"(covered there, or off the screen), so {what} could land elsewhere",
            )
        guard.sending.set()
        try:
            await warm_up(seat)
            yield seat, corner
        except SeatUnavailable as exc:
            await seat.stop()  # a fresh session next time (through the portal: a new say)
            raise ScreenUnavailable(f"the remote-desktop session failed: {exc}") from None

    async def _seat_session(self) -> Seat:
        """The remote-desktop session, started once and kept: GNOME's own (``mutter``), or the
        portal's, asked for once (the person answers the desktop's dialog; a call waits
        :data:`APPROVAL_WAIT_S` for that, and a later call finds the answer)."""
        if self._seat is not None and not self._seat.closed:
            return self._seat
        if self.input == "mutter":
            bus = await self._session_bus()
            try:
                self._seat = await RemoteSession.start(bus)
            except SeatUnavailable as exc:
                raise ScreenUnavailable(
                    f"GNOME's remote-desktop interface is unavailable ({exc}); it exists only "
                    "under GNOME's compositor (Mutter)"
                ) from None
            return self._seat
        if self._asking is None:
            bus = await self._session_bus()
            self._asking = asking = _Asking()
            assert self._nursery is not None

            async def ask() -> None:
                try:
                    asking.session = await PortalSession.start(bus, self.env)
                except SeatUnavailable as exc:
                    asking.problem = str(exc)
                finally:
                    asking.done.set()

            self._nursery.start_soon(ask)
        asking = self._asking
        with trio.move_on_after(APPROVAL_WAIT_S):
            await asking.done.wait()
        if not asking.done.is_set():
            raise ScreenUnavailable(
                "waiting for your approval: the desktop shows a dialog asking whether "
                "Deskhand may control the screen; answer it, then try again"
            )
        self._asking = None
        if asking.session is None:
            raise ScreenUnavailable(f"the desktop's remote-desktop portal: {asking.problem}")
        self._seat = asking.session
        return asking.session

    async def _frame_pair(self, seat: Seat) -> tuple[frames.Frame, frames.Frame | None]:
        """A frame of the focused window and one of the session's monitor, taken at the same
        time (the app's window is then looked for on the monitor, see
        :func:`.frames.locate`); the monitor's is None when its stream gave none."""
        got: dict[str, frames.Frame] = {}
        failed: list[ScreenUnavailable] = []

        async def window() -> None:
            try:
                got["window"] = await self._focus_frame()
            except ScreenUnavailable as exc:  # raised on its own below, not in a group
                failed.append(exc)

        async def monitor() -> None:
            fd = None
            try:
                fd = await seat.pipewire_fd()
                if fd is None:
                    got["monitor"] = await self._fresh_monitor_frame()
                else:
                    node = seat.monitor.node
                    got["monitor"] = await frames.settled(
                        node, self.env, quiet=0.0, limit=0.0, fd=fd
                    )
            except (frames.FrameUnavailable, SeatUnavailable):
                pass  # asked again with a new pair of frames
            finally:
                if fd is not None:
                    os.close(fd)

        async with trio.open_nursery() as nursery:
            nursery.start_soon(window)
            nursery.start_soon(monitor)
        if failed:
            raise failed[0]
        return got["window"], got.get("monitor")

    async def _fresh_monitor_frame(self) -> frames.Frame:
        """A frame of the primary monitor from a new stream of its own, as the focused
        window's frame is taken (a new stream sends its first frame at once, without waiting
        for the screen to change). Its pixels are measured as the session's own monitor
        stream measures them: it is the same monitor."""
        bus = await self._session_bus()
        try:
            session, stream = await screen_cast_only(bus, monitor=True)
        except SeatUnavailable as exc:
            raise frames.FrameUnavailable(str(exc)) from None
        try:
            return await frames.settled(stream.node, self.env, quiet=0.0, limit=0.0)
        finally:
            with trio.CancelScope(shield=True):
                await stop_screen_cast(bus, session)

    # --- what X11 alone can do ----------------------------------------------------------------

    async def run(self, fn: Callable[[Any], T], *, stop: object = None) -> T:
        raise ScreenUnavailable("there is no X11 display to ask on a Wayland session")

    async def activate(self, pid: int, *, focus: bool) -> None:
        """Nothing: on Wayland no program may raise or focus another's window."""

    # --- pictures ----------------------------------------------------------------------------

    async def _focus_frame(self, *, settle: float = 0.0, not_before: float = 0.0) -> frames.Frame:
        """A frame of the focused window, from a screen cast of its own (no input; a new one
        when a stream gives no frame); with ``settle``, as :meth:`_grab` settles it."""
        bus = await self._session_bus()
        for attempt in range(GRAB_ATTEMPTS):
            try:
                session, stream = await screen_cast_only(bus)
            except SeatUnavailable as exc:
                raise ScreenUnavailable(f"the compositor offers no screen cast ({exc})") from None
            try:
                return await self._grab(stream, settle=settle, not_before=not_before)
            except ScreenUnavailable:
                if attempt == GRAB_ATTEMPTS - 1:
                    raise
            finally:
                with trio.CancelScope(shield=True):
                    await stop_screen_cast(bus, session)
        raise AssertionError("unreachable")

    async def _grab(
        self, stream: Stream, *, settle: float = 0.0, not_before: float = 0.0
    ) -> frames.Frame:
        """A frame of ``stream``: the first, or with ``settle`` the one it shows once it has
        gone quiet (see :func:`.frames.settled`), at most ``settle`` seconds later."""
        try:
            return await frames.settled(
                stream.node,
                self.env,
                quiet=FRAME_QUIET_S,
                limit=settle,
                not_before=not_before,
            )
        except frames.FrameUnavailable as exc:
            raise ScreenUnavailable(str(exc)) from None

    async def capture(
        self,
        extents: tuple[int, int, int, int],
        *,
        settle: float = 0.0,
        not_before: float = 0.0,
    ) -> tuple[int, int, bytes]:
        """The focused window's pixels as ``(width, height, packed RGB)``, when it has the
        size of ``extents`` (the app's window); with ``settle``, once its stream went quiet.

        Raises:
            ScreenUnavailable: No screen cast, or the focused window is not that window.
        """
        frame = await self._focus_frame(settle=settle, not_before=not_before)
        box = frame.opaque_box()
        placed = frames.place(box, (extents[2], extents[3])) if box is not None else None
        if placed is None:
            raise ScreenUnavailable("the app's window is not the focused one")
        # The toolkit's window rectangle where the frame shows it (tool coordinates are its
        # pixels, as on X11); the window as drawn where it does not.
        rect = placed.box if placed.origin is None else (*placed.origin, *placed.size)
        rgb = await trio.to_thread.run_sync(frames.composite_rgb, frame, rect)
        return rect[2], rect[3], rgb

    async def encode(self, shot: tuple[int, int, bytes]) -> bytes:
        return await trio.to_thread.run_sync(lambda: png.encode_rgb(*shot))

    async def screenshot(
        self, extents: tuple[int, int, int, int], *, input_age: float | None = None
    ) -> bytes | None:
        """A PNG of the app's focused window; after recent input (``input_age`` seconds ago),
        the frame its stream shows once it went quiet, and not one from before
        :data:`~.screen.SETTLE_MIN` after the input (the app may not have begun to draw its
        answer); None when there is none to take."""
        if not usable_rect(extents):
            return None
        try:
            if input_age is None:
                shot = await self.capture(extents)
            else:
                not_before = trio.current_time() + max(0.0, SETTLE_MIN - input_age)
                shot = await self.capture(extents, settle=SETTLE_MAX, not_before=not_before)
            return await self.encode(shot)
        except ScreenUnavailable:
            return None

    # --- input -------------------------------------------------------------------------------

    async def send(self, what: str, *args: Any, guard: Guard | None, **options: Any) -> None:
        """Run input method ``what`` (``click``, ``scroll``, ``drag``, ``press_key``,
        ``type_text``) as :class:`~.x11.X11` names them, every batch proven first.

        Raises:
            ScreenUnavailable: No remote-desktop session (nothing was sent).
            ValueError: Bad arguments (nothing was sent).
            InputStopped: A batch would not reach the app; ``done`` says how far input got.
        """
        if guard is None:
            raise ScreenUnavailable("Wayland input is sent only with a target to prove")
        methods: dict[str, Callable[..., Awaitable[None]]] = {
            "click": self._click,
            "scroll": self._scroll,
            "drag": self._drag,
            "press_key": self._press_key,
            "type_text": self._type_text,
        }
        method = methods.get(what)
        if method is None:
            raise ScreenUnavailable(f"{what} is not available on Wayland")
        async with self._lock:
            await method(guard, *args, **options)

    def _window_point(self, guard: Guard, x: float, y: float) -> tuple[float, float]:
        return x - guard.origin[0], y - guard.origin[1]

    async def _click(
        self, guard: Guard, x: float, y: float, button: str = "left", count: int = 1
    ) -> None:
        code = BUTTONS.get(button)
        if code is None or count < 1:
            raise ValueError(f"bad button {button!r} or count {count}")
        wx, wy = self._window_point(guard, x, y)
        progress = Progress(count, "clicks")
        async with self._batch(guard, progress, "the click", points=[(wx, wy)]) as (send, at):
            await point_at(send, at[0] + wx, at[1] + wy)
            for _ in range(count):  # one batch: a double click must not wait between clicks
                await send.button(code, True)
                with trio.CancelScope(shield=True):  # never leave a button down
                    await send.button(code, False)
                progress.done += 1

    async def _scroll(
        self, guard: Guard, x: float, y: float, direction: str, pages: float = 1.0
    ) -> None:
        if direction not in _DIRECTIONS or not pages > 0 or math.isinf(pages):
            raise ValueError(f"bad direction {direction!r} or pages {pages}")
        axis, sign = _DIRECTIONS[direction]
        wx, wy = self._window_point(guard, x, y)
        notches = max(1, round(pages * WHEEL_STEPS_PER_PAGE))
        progress = Progress(notches, "wheel steps")
        async with self._batch(guard, progress, "the scroll", points=[(wx, wy)]) as (send, at):
            await point_at(send, at[0] + wx, at[1] + wy)
            for _ in range(notches):
                await send.wheel(axis, sign)
                progress.done += 1

    async def _drag(self, guard: Guard, x1: float, y1: float, x2: float, y2: float) -> None:
        start, end = self._window_point(guard, x1, y1), self._window_point(guard, x2, y2)
        progress = Progress(DRAG_STEPS + 2, "drag steps")
        a, b = start, end
        async with self._batch(guard, progress, "the drag", points=[a, b]) as (send, corner):
            await point_at(send, corner[0] + a[0], corner[1] + a[1])
            await send.button(BUTTONS["left"], True)
            progress.done += 1
            try:
                for step in range(1, DRAG_STEPS + 1):
                    t = step / DRAG_STEPS
                    x, y = a[0] + (b[0] - a[0]) * t, a[1] + (b[1] - a[1]) * t
                    await send.move(corner[0] + x, corner[1] + y)
                    progress.done += 1
            finally:
                with trio.CancelScope(shield=True):
                    await send.button(BUTTONS["left"], False)
            progress.done += 1

    async def _press_key(self, guard: Guard, spec: str) -> None:
        chord = parse_key_spec(spec)
        progress = Progress(1, "keys")
        async with self._batch(guard, progress, "the key") as (send, _):
            await _chord(send, chord.held, [chord.key])
            progress.done = 1

    async def _type_text(self, guard: Guard, text: str, *, into_field: bool = False) -> None:
        keysyms = type_keysyms(text)
        progress = Progress(len(keysyms), "characters")
        for start in range(0, len(keysyms), TYPE_BATCH):
            batch = keysyms[start : start + TYPE_BATCH]
            async with self._batch(guard, progress, "the typing") as (send, _):
                await _chord(send, (), batch)
                progress.done += len(batch)

    async def aclose(self) -> None:
        if self._seat is not None:
            with trio.CancelScope(shield=True):
                await self._seat.stop()
        if self._bus is not None:
            with trio.CancelScope(shield=True):
                await self._bus.aclose()
        self._bus = None

    def close(self) -> None:
        """Nothing to close synchronously: :meth:`aclose` ends the sessions."""


async def _chord(remote: Seat, held: Sequence[int], keys: Sequence[int]) -> None:
    """Tap each of ``keys`` while ``held`` are down; every key pressed is released, even when
    the call is cancelled part-way."""
    down: list[int] = []
    try:
        for keysym in held:
            await remote.key(keysym, True)
            down.append(keysym)
        for keysym in keys:
            await remote.key(keysym, True)
            down.append(keysym)
            await remote.key(keysym, False)
            down.pop()
    finally:
        with trio.CancelScope(shield=True):
            for keysym in reversed(down):
                await remote.key(keysym, False)
