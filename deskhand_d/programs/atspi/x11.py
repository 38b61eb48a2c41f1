"""The X11 side of the Linux backend: screenshots and synthetic input on one X display.

This module owns the connection to the X server (through python-xlib, pure Python) and
everything done with it: reading screen pixels as PNG, and moving the pointer, clicking,
dragging, scrolling, pressing keys and typing through the XTEST extension. AT-SPI decides
*what* to act on; this module only knows root-window pixels and keysyms.

Theory of operation:

* Calls are synchronous and meant to run in a worker thread (``trio.to_thread.run_sync``). A
  lock serialises them, because one Xlib connection must not carry two conversations at once.
* Every action ends with a round trip (``sync``), so when a method returns the server has
  generated the events; errors the server reports for earlier requests surface as
  :class:`X11Error` then rather than being printed by python-xlib later.
* A keysym missing from the keymap (``€``, ``ñ`` on a US layout) is bound for a moment to a
  spare keycode, typed, and unbound again. An app looks a key event up in the keymap as it
  stands when the app *reads* the event, not when the event was sent, so a keycode must not
  change its meaning while keys typed with it are still unread: the app would see the new
  character, or none, in their place. Typed text therefore binds every character of a piece
  (as many distinct characters as there are spare keycodes) to a keycode of its own, and
  before a keycode is bound again, or given back, it waits until the app has read the keys
  typed so far: it asks the app with a ``_NET_WM_PING`` and waits for the answer
  (:class:`~.x11guard.Echo`); an app that does not answer pings gets ``restore_delay``
  seconds instead.
* How fast text is typed depends on where it goes (``into_field``). Into an editable text
  (a text view, an entry) keys go as fast as they can be sent, in batches of up to
  ``BATCH_KEYS`` characters: such a field inserts every key it reads. Anywhere else a key
  may be a command, and apps made for people may ignore a key pressed again too soon after
  itself (galculator shows a pressed button for 100 ms and ignores its key meanwhile, so
  ``12+1`` typed quickly lost its second ``1``); there the same key is pressed again only
  ``REPEAT_GAP_S`` after the app read its previous press, and other keys are not held back.
* Coordinates are root-window pixels: the same space as the screenshots.
* With a :class:`~.x11guard.Guard`, every batch of input is checked and sent under a server
  grab and only if it would reach the guarded process (see :mod:`.x11guard`); otherwise
  :class:`~.x11guard.InputStopped` says how much had been sent.
"""

from __future__ import annotations

import math
import os
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any, Self

from Xlib import X
from Xlib import display as xdisplay
from Xlib import error as xerror
from Xlib.ext import xtest

from deskhand_d.programs.atspi import model, png, x11focus, xlibquirks
from deskhand_d.programs.atspi.x11guard import (
    Echo,
    Guard,
    InputStopped,
    Progress,
    Targets,
    grab_for_release,
    settled_alive,
    ungrab_after_release,
    window_id,
)
from deskhand_d.programs.atspi.x11keys import (
    NO_SYMBOL,
    Keymap,
    KeymapError,
    chunks_by_spares,
    key_ids,
    keysym_for_char,
    parse_key_spec,
    pointer_button,
    rebind,
    runs,
    wheel_button,
)

# One wheel notch scrolls about three lines in GTK and Qt; five notches cover a good part of
# a window without skipping past content the caller has not seen yet.
CLICKS_PER_PAGE = 5
_DRAG_STEPS = 10
# Typing outside an editable text presses a key again no sooner than this after the app read
# its previous press (see the module docstring); a long text shortens the gap so that it
# stays within TYPE_BUDGET_S, under the backend's 30 s per-call limit.
REPEAT_GAP_S = 0.15
TYPE_BUDGET_S = 20.0
# Characters sent under one server grab and one input-target check.
BATCH_KEYS = 64
# How long to wait for an app to answer a ping: ECHO_WAIT_S, plus ECHO_PER_KEY_S for every key
# sent since its last answer (it may still be handling them), at most ECHO_MAX_S.
ECHO_WAIT_S = 0.5
ECHO_PER_KEY_S = 0.01
ECHO_MAX_S = 5.0
# GetImage replies are fetched in bands of about this many bytes: python-xlib grows its
# receive buffer by copying, which turns quadratic on one huge reply.
_BAND_BYTES = 1 << 20


class X11Unavailable(Exception):
    """There is no usable X display: not set, not reachable, lost, or lacking XTEST.

    The message names the display and what to do; the caller should report it and fall
    back (for example to the simulator), not retry in a loop.
    """


class X11Error(Exception):
    """The X server refused a request, or the screen uses a pixel format we cannot read."""


def _pixel_format(conn: Any, screen: Any) -> png.PixelFormat | str:
    """The root window's pixel layout, or why screenshots can't read it."""
    depth = int(screen.root_depth)
    formats = [f for f in conn.display.info.pixmap_formats if int(f.depth) == depth]
    visuals = [
        v for d in screen.allowed_depths for v in d.visuals if v.visual_id == screen.root_visual
    ]
    if not formats or not visuals:
        return f"the X server describes no pixel format for depth {depth}"
    bpp, pad = int(formats[0].bits_per_pixel), int(formats[0].scanline_pad)
    if bpp not in (24, 32):
        return f"the screen is {depth}-bit ({bpp} bits per pixel); run it at depth 24"
    offsets = []
    for mask in (visuals[0].red_mask, visuals[0].green_mask, visuals[0].blue_mask):
        shift = (int(mask) & -int(mask)).bit_length() - 1
        if int(mask) >> shift != 0xFF or shift % 8:
            return f"colour mask {int(mask):#x} is not one whole byte"
        index = shift // 8
        # image_byte_order 0 is LSBFirst: the least significant byte comes first in memory.
        big_endian = int(conn.display.info.image_byte_order) == X.MSBFirst
        offsets.append(bpp // 8 - 1 - index if big_endian else index)
    return png.PixelFormat(bpp // 8, pad // 8, (offsets[0], offsets[1], offsets[2]))


class X11:
    """One connection to an X display, with screenshot and XTEST input methods."""

    #: Seconds a temporary key binding stays after the last key that used it, for an app that
    #: does not answer pings.
    restore_delay = 0.1

    def __init__(self, conn: Any, name: str) -> None:
        """Wrap an open python-xlib ``Display``; use :meth:`open` instead."""
        self.name = name
        self._conn = conn
        self._screen = conn.screen()
        self._root = self._screen.root
        self.width = int(self._screen.width_in_pixels)
        self.height = int(self._screen.height_in_pixels)
        self._format = _pixel_format(conn, self._screen)
        self._targets = Targets(conn, self._root)
        self._lock = threading.Lock()
        self._errors: list[Any] = []
        self._closed = False
        # Errors for requests without a reply arrive later; keep them for the next check.
        conn.set_error_handler(self._on_error)
        xlibquirks.restore_core_errors(conn)

    @classmethod
    def open(cls, display: str | None = None) -> X11:
        """Connect to ``display`` (such as ``":99"``; default ``$DISPLAY``), check for XTEST.

        Raises:
            X11Unavailable: No display given or set, the server can't be reached, or it
                lacks the XTEST extension.
        """
        name = display if display is not None else os.environ.get("DISPLAY", "")
        if not name:
            raise X11Unavailable(
                "no X display: DISPLAY is not set. Start an X server (for example "
                "`Xvfb :99 -screen 0 1280x900x24`) and set DISPLAY=:99"
            )
        try:
            conn = xdisplay.Display(name)
        except (xerror.DisplayError, xerror.ConnectionClosedError, xerror.XauthError) as exc:
            xlibquirks.close_abandoned_sockets(exc)
            raise X11Unavailable(
                f"cannot connect to X display {name!r} ({exc}). Check that an X server runs "
                "there and that DISPLAY (and XAUTHORITY, if it uses one) point at it"
            ) from exc
        if not conn.has_extension("XTEST"):
            conn.close()
            raise X11Unavailable(
                f"X display {name!r} has no XTEST extension, so input can't be synthesised. "
                "Use a server with XTEST enabled (Xvfb and Xorg have it by default)"
            )
        return cls(conn, name)

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    # --- screenshots -------------------------------------------------------------------

    def screenshot_png(self, x: int, y: int, width: int, height: int) -> bytes:
        """A PNG (RGB) of a root-window rectangle, clipped to the screen.

        Raises:
            ValueError: The rectangle is empty or lies wholly off screen.
            X11Error: The screen's pixel format is not 24/32-bit true colour.
        """
        w, h, rgb = self.screenshot_rgb(x, y, width, height)
        return png.encode_rgb(w, h, rgb)

    def screenshot_rgb(self, x: int, y: int, width: int, height: int) -> tuple[int, int, bytes]:
        """Like :meth:`screenshot_png` but returns ``(width, height, packed RGB bytes)``."""
        if width <= 0 or height <= 0:
            raise ValueError(f"screenshot size must be positive, got {width}x{height}")
        left, top = max(x, 0), max(y, 0)
        right, bottom = min(x + width, self.width), min(y + height, self.height)
        if right <= left or bottom <= top:
            raise ValueError(
                f"rectangle {width}x{height} at ({x}, {y}) is outside the "
                f"{self.width}x{self.height} screen"
            )
        fmt = self._format
        if isinstance(fmt, str):
            raise X11Error(f"can't read pixels from X display {self.name!r}: {fmt}")
        w, h = right - left, bottom - top
        band = max(1, _BAND_BYTES // fmt.stride(w))
        raw = bytearray()
        with self._session():
            for row in range(top, bottom, band):
                rows = min(band, bottom - row)
                raw += self._root.get_image(left, row, w, rows, X.ZPixmap, 0xFFFFFFFF).data
        return w, h, png.pack_rgb(raw, w, h, fmt)

    # --- pointer -----------------------------------------------------------------------

    def click(
        self, x: float, y: float, button: str = "left", count: int = 1, guard: Guard | None = None
    ) -> None:
        """Move the pointer to ``(x, y)`` and click ``count`` times (2 = double click).

        Raises:
            ValueError: Unknown button, count below 1, or a point off the screen.
            InputStopped: ``guard`` is set and the point no longer shows its process.
        """
        number = pointer_button(button)
        if count < 1:
            raise ValueError(f"click count must be at least 1, got {count}")
        px, py = self._point(x, y)
        progress = Progress(count, "clicks")
        with self._session():
            for _ in range(count):
                with self._batch(guard, progress, (px, py), "the click"):
                    self._move(px, py)
                    self._fake(X.ButtonPress, number)
                    self._fake(X.ButtonRelease, number)

    def press_in_window(
        self,
        size: tuple[int, int],
        rect: tuple[int, int, int, int],
        guard: Guard,
        sending: threading.Event,
    ) -> bool:
        """Click the left button at the centre of ``rect`` (pixels of the guarded app's
        window of ``size``), only where that is provably the element a person would press;
        False, with nothing sent, anywhere else. ``sending`` is set just before the events go.

        Checked and sent under one server grab: the app has exactly one viewable top-level
        window of that size (its position comes from the X server, so window-relative
        rectangles such as GTK 4's land right under a window manager too; the X window may be
        larger than ``size``, by an invisible border, never smaller); ``rect`` lies
        wholly inside it and on the screen, and the point lies on it wherever the toolkit
        placed its content in the X window (:func:`~.model.sure_point`); that window is the
        top-most one at the point
        (no other window, not even one of the app's own popups, covers the point); the
        window the click would reach belongs to the guarded process; and no client holds a
        pointer grab (an open menu or popover would take the click instead).
        """
        if guard.stop.is_set():
            raise Progress(1, "clicks").stopped("cancelled", "the call was cancelled")
        with self._session():
            self._conn.grab_server()
            try:
                point = self._press_point(size, rect, guard)
                if point is None:
                    return False
                sending.set()
                self._move(*point)
                self._fake(X.ButtonPress, 1)
                self._fake(X.ButtonRelease, 1)
                self._conn.sync()
                return True
            finally:
                self._conn.ungrab_server()
                self._conn.flush()

    def _press_point(
        self, size: tuple[int, int], rect: tuple[int, int, int, int], guard: Guard
    ) -> tuple[int, int] | None:
        """Where :meth:`press_in_window` may click, or None (see there). Under the grab."""
        try:
            windows = self._targets.windows_of(guard.pid, size)
            if len(windows) != 1:
                return None  # none, or two the rectangle cannot tell apart
            window, frame = windows[0]
            fx, fy, fw, fh = frame
            if fx < 0 or fy < 0 or fx + fw > self.width or fy + fh > self.height:
                return None  # partly off screen
            point = model.sure_point(rect, size, frame)
            if point is None:
                return None
            chain = self._targets.chain_at(*point)
            if window not in chain:
                return None
            if self._targets.check(guard.pid, chain[-1], "the click") is not None:
                return None
            if self._targets.pointer_grabbed():
                return None
        except xerror.XError:  # a window went away while we looked: not provably safe
            return None
        return point

    def drag(self, x1: float, y1: float, x2: float, y2: float, guard: Guard | None = None) -> None:
        """Press the left button at ``(x1, y1)``, move in steps to ``(x2, y2)``, release.

        Intermediate motion matters: toolkits start a drag only after the pointer has moved
        a few pixels with the button down, and some ignore a single jump. While the button is
        down, X sends motion and the release to the window that took the press, so later
        steps check that this window is still there and still the guarded process's.
        """
        start, end = self._point(x1, y1), self._point(x2, y2)
        progress = Progress(_DRAG_STEPS + 2, "drag steps")
        with self._session():
            with self._batch(guard, progress, start, "the drag") as pressed_on:
                self._move(*start)
                self._fake(X.ButtonPress, 1)
            held = True
            try:
                for step in range(1, _DRAG_STEPS + 1):
                    t = step / _DRAG_STEPS
                    point = (
                        round(start[0] + (end[0] - start[0]) * t),
                        round(start[1] + (end[1] - start[1]) * t),
                    )
                    with self._batch(guard, progress, None, "the drag", grab=pressed_on):
                        self._move(*point)
                with self._batch(guard, progress, None, "the drag", grab=pressed_on):
                    self._fake(X.ButtonRelease, 1)
                    held = False
            finally:
                if held:
                    self._release_privately(buttons=(1,))

    def scroll(
        self, x: float, y: float, direction: str, pages: float = 1.0, guard: Guard | None = None
    ) -> None:
        """Scroll with the wheel at ``(x, y)``: ``CLICKS_PER_PAGE`` notches per page.

        Raises:
            ValueError: Unknown direction, non-positive pages, or a point off the screen.
        """
        number = wheel_button(direction)
        if not pages > 0 or math.isinf(pages):
            raise ValueError(f"pages must be a positive number, got {pages}")
        px, py = self._point(x, y)
        notches = max(1, round(pages * CLICKS_PER_PAGE))
        progress = Progress(notches, "wheel steps")
        with self._session():
            for _ in range(notches):
                with self._batch(guard, progress, (px, py), "the scroll"):
                    self._move(px, py)
                    self._fake(X.ButtonPress, number)
                    self._fake(X.ButtonRelease, number)

    # --- keyboard ----------------------------------------------------------------------

    def press_key(self, spec: str, guard: Guard | None = None) -> None:
        """Press a key or chord such as ``Return``, ``ctrl+a`` or ``ctrl+shift+t``.

        Raises:
            ValueError: The spec names an unknown key (see ``x11keys.parse_key_spec``).
        """
        chord = parse_key_spec(spec)
        progress = Progress(1, "keys")
        with self._session(), self._bound([*chord.held, chord.key], guard) as keymap:
            held: list[int] = []
            for keysym in chord.held:
                held += [c for c in keymap.codes_for(keysym) if c not in held]
            with self._batch(guard, progress, None, "the key"):
                for keycode in held:
                    self._fake(X.KeyPress, keycode)
                self._tap(keymap.codes_for(chord.key), held)
                for keycode in reversed(held):
                    self._fake(X.KeyRelease, keycode)

    def type_text(self, text: str, guard: Guard | None = None, *, into_field: bool = False) -> None:
        """Type ``text`` as key presses; any Unicode, newlines as Return, tabs as Tab.

        ``into_field``: the keys go into an editable text, which takes them as fast as they
        come; otherwise a key is pressed again only ``REPEAT_GAP_S`` after the app read its
        previous press (see the module docstring).

        Raises:
            ValueError: The text holds a control character other than newline or tab.
            InputStopped: ``guard`` is set and a batch would reach another process; ``done``
                counts the characters sent before it.
        """
        keysyms = [keysym_for_char(c) for c in text.replace("\r\n", "\n")]
        progress = Progress(len(keysyms), "characters")
        with self._session(), self._focus_held(guard):
            keymap = self._current_keymap()
            spares = keymap.spare_keycodes()
            keys = key_ids(keysyms, keymap)
            gap = 0.0
            if not into_field:
                steps = sum(1 for _ in runs(keys, BATCH_KEYS, distinct=True)) - 1
                gap = min(REPEAT_GAP_S, TYPE_BUDGET_S / max(1, steps))
            reader = _Reader(self, guard)
            current = keymap
            bound: dict[int, int] = {}  # spare keycode -> the keysym it types now
            again: dict[int, float] = {}  # key -> when it may be pressed again
            start = 0
            try:
                for chunk in chunks_by_spares(keysyms, keymap, max(1, len(spares))):
                    foreign = (k for k in chunk if keymap.locate(k) is None)
                    changes = rebind(bound, spares, foreign)
                    if any(code in bound for code in changes):
                        reader.wait()  # every key typed with those keycodes has been read
                    if changes:
                        current = self._rebind(keymap, changes)
                        bound.update(changes)
                    piece = keys[start : start + len(chunk)]
                    for a, b in runs(piece, BATCH_KEYS, distinct=not into_field):
                        batch = range(start + a, start + b)
                        if gap:
                            ready = max(again.get(keys[i], 0.0) for i in batch)
                            time.sleep(max(0.0, ready - time.monotonic()))
                        try:
                            with self._batch(
                                guard, progress, None, "the typed text", count=b - a
                            ) as window:
                                for n, i in enumerate(batch):
                                    if n and guard is not None and self._moved(window):
                                        raise _Cut(n)
                                    self._tap(current.codes_for(keysyms[i]), [])
                        except _Cut as cut:
                            assert guard is not None
                            progress.done += cut.sent
                            reader.sent(cut.sent)
                            raise self._cut_short(guard, progress) from None
                        reader.sent(b - a)
                        # Never more than one batch ahead of the app: keys it has not read
                        # when the focus moves may be dropped (GTK 3 drops them), and the
                        # count of what was sent must be what the app holds.
                        read = reader.wait(settle=False)
                        if gap:
                            again.update((keys[i], read + gap) for i in batch)
                    start += len(chunk)
            finally:
                # Typing ends once the app has read its keys (so the reply can show them all),
                # and only then are the borrowed keycodes given back.
                reader.wait(settle=bool(bound))
                if bound:
                    self._rebind(keymap, dict.fromkeys(bound, NO_SYMBOL))

    @contextmanager
    def _focus_held(self, guard: Guard | None) -> Iterator[None]:
        """While keys are typed, the focus window falls back to nothing if it is destroyed.

        A focus window that goes away passes the focus on as its owner asked (its parent,
        the root, or the window under the pointer), and keys still on their way would reach
        whatever that is: an app killed while typed into handed its last keys to the window
        under the pointer, even with every key checked just before it was sent (the check and
        the key are two requests, and a client's death can come between them). So the focus is
        set again to the very window that has it, to revert to nothing (X sends no focus
        events for that), and given its own fallback back at the end while it still has it."""
        if guard is None:
            yield
            return
        focus = self._conn.get_input_focus()
        window = focus.focus
        held = not isinstance(window, int) and window_id(window) not in (
            X.NONE,
            X.PointerRoot,
            self._root.id,
        )
        if held:
            window.set_input_focus(X.RevertToNone, X.CurrentTime)
            self._conn.sync()
        try:
            yield
        finally:
            if held:
                try:
                    if window_id(self._conn.get_input_focus().focus) == window_id(window):
                        window.set_input_focus(focus.revert_to, X.CurrentTime)
                        self._conn.flush()
                except xerror.XError:
                    pass  # the window is gone: nothing to give back

    def _moved(self, window: int) -> bool:
        """Whether keys would now reach another window than ``window``, the one the batch was
        checked for. The server grab keeps every other client's requests out, but not its
        death: an app killed mid-batch loses its windows, the focus falls back (to the window
        under the pointer when it reverts to the root) and the rest of the batch would go
        there. One round trip, answered after the keys before it were handled."""
        return self._targets.key_window() != window

    def _cut_short(self, guard: Guard, progress: Progress) -> InputStopped:
        if settled_alive(guard.pid):
            return progress.stopped(
                "target_changed",
                "the keyboard focus moved to another window while the text was typed",
            )
        return progress.stopped("target_gone", f"the app (pid {guard.pid}) has quit")

    @contextmanager
    def _batch(
        self,
        guard: Guard | None,
        progress: Progress,
        point: tuple[int, int] | None,
        what: str,
        *,
        grab: int = 0,
        count: int = 1,
    ) -> Iterator[int]:
        """One batch of input, ``count`` units of ``progress``: checked and sent under a
        server grab when guarded, so that it is sent whole or not at all.

        Yields the window the input goes to (0 when unguarded). ``point``: pointer input
        there; None: keys (or, with ``grab``, pointer input held by the window that took the
        button press).
        """
        if guard is None:
            yield 0
            progress.done += count
            return
        if guard.stop.is_set():
            raise progress.stopped("cancelled", "the call was cancelled")
        self._conn.grab_server()
        try:
            if grab:
                window = grab
            elif point is not None:
                window = self._targets.window_at(*point)
            else:
                window = self._targets.key_window()
            refusal = self._targets.check(guard.pid, window, what)
            keys = point is None
            if refusal is None and not grab and self._targets.grabbed_elsewhere(guard.pid, keys):
                device = "keyboard" if keys else "pointer"
                refusal = (
                    "target_changed",
                    f"another program holds the {device} (an open menu or a screen lock, say), "
                    f"so {what} would have gone to it",
                )
            if refusal is None:
                guard.sending.set()
                yield window
                self._conn.sync()  # the server handles the events while it is still ours
        finally:
            self._conn.ungrab_server()
            self._conn.flush()
        if refusal is not None:
            if refusal[0] == "target_changed" and not settled_alive(guard.pid):
                # A killed app closes its X connection a moment before it leaves the process
                # table, so its windows can vanish first: then it has quit.
                refusal = ("target_gone", f"the app (pid {guard.pid}) has quit")
            raise progress.stopped(*refusal)
        progress.done += count

    def _release_privately(self, buttons: Sequence[int] = (), keys: Sequence[int] = ()) -> None:
        """Release what is still down while our client holds the pointer and keyboard, so
        no app receives the release (and the person's pointer is not left pressed)."""
        try:
            grab_for_release(self._conn, self._root)
            for number in buttons:
                self._fake(X.ButtonRelease, number)
            for keycode in keys:
                self._fake(X.KeyRelease, keycode)
            self._conn.sync()
        finally:
            ungrab_after_release(self._conn)
            self._conn.flush()

    # --- windows -----------------------------------------------------------------------

    def popup_origin(self, pid: int, width: int) -> tuple[int, int] | None:
        """The root position of ``pid``'s popup window (viewable, override-redirect) that is
        ``width`` pixels wide, or None when it shows none such."""
        with self._session():
            return self._targets.popup_at(pid, width)

    def activate_pid(self, pid: int, *, focus: bool) -> bool:
        """Raise the top window of process ``pid`` (and, with ``focus``, give it the
        keyboard); see :mod:`.x11focus`. False when that process shows no window."""
        with self._session():
            windows = x11focus.windows_of(self._conn, self._root, pid)
            if windows:
                x11focus.activate(self._conn, self._root, windows[-1], focus=focus)
            return bool(windows)

    # --- lifetime ----------------------------------------------------------------------

    def close(self) -> None:
        """Close the connection; calling it twice is harmless."""
        with self._lock:
            if not self._closed:
                self._closed = True
                try:
                    self._conn.close()
                except xerror.ConnectionClosedError:
                    pass

    # --- internals ---------------------------------------------------------------------

    @contextmanager
    def _session(self) -> Iterator[None]:
        """Hold the lock, map python-xlib failures to ours, and end with a round trip."""
        with self._lock:
            if self._closed:
                raise X11Unavailable(f"the connection to X display {self.name!r} is closed")
            try:
                self._drain_events()
                yield
                self._conn.sync()
            except xerror.ConnectionClosedError as exc:
                raise X11Unavailable(
                    f"lost the connection to X display {self.name!r} ({exc})"
                ) from exc
            except xerror.XError as exc:
                raise X11Error(f"X display {self.name!r} refused a request: {exc}") from exc
            except KeymapError as exc:
                raise X11Error(f"X display {self.name!r}: {exc}") from exc
            if self._errors:
                errors, self._errors[:] = list(self._errors), []
                raise X11Error(f"X display {self.name!r} refused a request: {errors[0]}")

    def _on_error(self, error: Any, request: Any) -> None:
        self._errors.append(error)

    def _drain_events(self) -> None:
        # We select no input, but every client gets MappingNotify; read them so they don't
        # pile up in python-xlib's queue. The keymap is re-read when needed anyway.
        while self._conn.pending_events():
            self._conn.next_event()

    def _point(self, x: float, y: float) -> tuple[int, int]:
        if not (math.isfinite(x) and math.isfinite(y)):
            raise ValueError(f"coordinates must be finite numbers, got ({x}, {y})")
        px, py = round(x), round(y)
        if not (0 <= px < self.width and 0 <= py < self.height):
            raise ValueError(f"point ({x}, {y}) is outside the {self.width}x{self.height} screen")
        return px, py

    def _move(self, x: int, y: int) -> None:
        self._fake(X.MotionNotify, 0, x=x, y=y)

    def _fake(self, event_type: int, detail: int, x: int = 0, y: int = 0) -> None:
        xtest.fake_input(self._conn, event_type, detail, root=self._root, x=x, y=y)

    def _current_keymap(self) -> Keymap:
        info = self._conn.display.info
        first, last = int(info.min_keycode), int(info.max_keycode)
        rows = self._conn.get_keyboard_mapping(first, last - first + 1)
        modifiers = [code for codes in self._conn.get_modifier_mapping() for code in codes]
        return Keymap(first, [list(row) for row in rows], (c for c in modifiers if c))

    @contextmanager
    def _bound(self, keysyms: Sequence[int], guard: Guard | None) -> Iterator[Keymap]:
        """Bind keysyms the keymap lacks to spare keycodes while the block runs.

        Yields the keymap with the temporary bindings in it. On the way out, once the app has
        read the keys (see the module docstring), the borrowed keycodes are emptied again.
        """
        keymap = self._current_keymap()
        missing = [k for k in keysyms if keymap.locate(k) is None]
        if not missing:
            yield keymap
            return
        reader = _Reader(self, guard)
        borrowed = rebind({}, keymap.spare_keycodes(), missing)
        try:
            yield self._rebind(keymap, borrowed)
            reader.sent(1)
        finally:
            reader.wait()
            self._rebind(keymap, dict.fromkeys(borrowed, NO_SYMBOL))

    def _rebind(self, keymap: Keymap, changes: Mapping[int, int]) -> Keymap:
        """Bind each keycode of ``changes`` to its keysym (``NO_SYMBOL``: to nothing), in one
        request per run of adjacent keycodes; returns the keymap as it is then."""
        codes = sorted(changes)
        while codes:
            first = last = codes.pop(0)
            while codes and codes[0] == last + 1:
                last = codes.pop(0)
            rows = [
                keymap.temporary_row(changes[code]) if changes[code] else keymap.empty_row()
                for code in range(first, last + 1)
            ]
            self._conn.change_keyboard_mapping(first, rows)
        return self._current_keymap()

    def _tap(self, codes: Sequence[int], held: Sequence[int]) -> None:
        """Press ``codes`` in order (Shift, then the key) and release them in reverse."""
        down = [code for code in codes if code not in held]
        for code in down:
            self._fake(X.KeyPress, code)
        for code in reversed(down):
            self._fake(X.KeyRelease, code)


class _Cut(Exception):
    """A batch of keys stopped part-way: ``sent`` of its keys went out before."""

    def __init__(self, sent: int) -> None:
        super().__init__(sent)
        self.sent = sent


class _Reader:
    """Knows when the app has read the keys sent to it: through its :class:`~.x11guard.Echo`
    when it answers pings, else by waiting ``restore_delay`` seconds. Under the X11 lock."""

    def __init__(self, x11: X11, guard: Guard | None) -> None:
        targets = x11._targets
        pid = guard.pid if guard is not None else None
        self._echo = Echo.find(targets, targets.key_window(), pid)
        self._conn = x11._conn
        self._delay = x11.restore_delay
        self._stop = guard.stop if guard is not None else None
        self._unread = 0

    def sent(self, keys: int) -> None:
        """``keys`` more keys went out."""
        self._unread += keys

    def wait(self, *, settle: bool = True) -> float:
        """Wait until the app has read every key sent so far; returns the time it had.

        Without an echo that time is unknown: ``settle`` waits ``restore_delay`` seconds
        after the last key instead, without it this returns at once.
        """
        if not self._unread:
            return time.monotonic()
        if self._echo is not None:
            timeout = min(ECHO_MAX_S, ECHO_WAIT_S + ECHO_PER_KEY_S * self._unread)
            self._echo.wait(timeout, self._stop)
            self._unread = 0
        elif settle:
            self._conn.sync()
            time.sleep(self._delay)
            self._unread = 0
        return time.monotonic()
