"""Test peers for the X11 backend: a private Xvfb, and a window that records what it receives.

The window lives on its own Xlib connection, like any app would. A reader thread handles
its events as they arrive and translates key presses with the keymap *at that moment*
(refreshed on every MappingNotify, as real clients do), so text typed through temporarily
bound keycodes can be reconstructed exactly. A peer made with ``answer_pings`` lists
``_NET_WM_PING`` in its ``WM_PROTOCOLS`` and answers pings in event order, as GTK and Qt do;
one made with ``read_delay`` reads each key event only that many seconds after the one before,
like an app busy drawing, so keys typed faster pile up unread.
"""

from __future__ import annotations

import os
import select
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import IO

import pytest
from Xlib import X, Xatom, display
from Xlib.protocol import event

SCREEN = (1280, 900)


def need_xvfb() -> None:
    """Skip the calling test when Xvfb is missing, unless running under CI.

    Under CI (``CI`` set to anything but empty, 0, false or no) a missing Xvfb means the
    machine was set up wrongly, so the test fails instead of quietly skipping.
    """
    if shutil.which("Xvfb"):
        return
    reason = "Xvfb is not installed (apt-get install xvfb)"
    if os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no"):
        pytest.fail(f"{reason}; CI must run the X11 tests")
    pytest.skip(reason)


def _free_display() -> int:
    # A display is taken when its lock file or its socket exists.
    for number in range(90 + os.getpid() % 50, 400):
        if (
            not Path(f"/tmp/.X{number}-lock").exists()
            and not Path(f"/tmp/.X11-unix/X{number}").exists()
        ):
            return number
    raise RuntimeError("no free X display number between 90 and 400")


def _start_xvfb(
    number: int, extra_args: tuple[str, ...], log: IO[bytes]
) -> subprocess.Popen[bytes] | None:
    """Xvfb on display ``number`` once its socket exists, or None if it exited or hung."""
    proc = subprocess.Popen(
        # -noreset: an X server resets when its last client leaves, and a test connecting
        # during that reset gets "connection reset by peer".
        [
            "Xvfb",
            f":{number}",
            "-screen",
            "0",
            f"{SCREEN[0]}x{SCREEN[1]}x24",
            "-nolisten",
            "tcp",
            "-noreset",
            *extra_args,
        ],
        stdout=subprocess.DEVNULL,
        # A file, not a pipe: nobody reads Xvfb's chatter while it runs, and a full pipe
        # would block the server.
        stderr=log,
    )
    socket = Path(f"/tmp/.X11-unix/X{number}")
    deadline = time.monotonic() + 10
    while proc.poll() is None and not socket.exists() and time.monotonic() < deadline:
        time.sleep(0.02)
    if proc.poll() is None and socket.exists():
        return proc
    proc.kill()
    proc.wait()
    return None


@contextmanager
def running_xvfb(*extra_args: str) -> Iterator[str]:
    """Start Xvfb on a free display, yield its name, and stop it by PID afterwards."""
    with tempfile.TemporaryFile() as log:
        for _attempt in range(3):  # another server may take the number first
            number = _free_display()
            proc = _start_xvfb(number, extra_args, log)
            if proc is not None:
                break
        else:
            log.seek(0)
            raise RuntimeError(f"Xvfb did not start: {log.read().decode(errors='replace')}")
        try:
            yield f":{number}"
        finally:
            proc.terminate()
            try:
                proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()


@dataclass(frozen=True)
class Event:
    """What the window saw: the X event type, detail, positions, and keysym for keys."""

    type: int
    detail: int
    x: int
    y: int
    root_x: int
    root_y: int
    state: int
    keysym: int = 0
    time: int = 0  # the X server's timestamp, in milliseconds


class PeerWindow:
    """A mapped, focused window at a known place, recording input events."""

    def __init__(
        self,
        name: str,
        x: int,
        y: int,
        width: int,
        height: int,
        *,
        answer_pings: bool = False,
        read_delay: float = 0.0,
    ) -> None:
        self.d = display.Display(name)
        self.read_delay = read_delay
        self.pings = 0  # pings answered
        self.x, self.y, self.width, self.height = x, y, width, height
        screen = self.d.screen()
        self.window = screen.root.create_window(
            x,
            y,
            width,
            height,
            0,
            screen.root_depth,
            X.InputOutput,
            X.CopyFromParent,
            background_pixel=0x000000,
            # No window manager runs, so nothing would move it; this keeps it that way
            # if one ever does.
            override_redirect=True,
            event_mask=(
                X.KeyPressMask
                | X.KeyReleaseMask
                | X.ButtonPressMask
                | X.ButtonReleaseMask
                | X.PointerMotionMask
                | X.ExposureMask
            ),
        )
        self._protocols = self.d.intern_atom("WM_PROTOCOLS")
        self._ping = self.d.intern_atom("_NET_WM_PING")
        if answer_pings:
            self.window.change_property(self._protocols, Xatom.ATOM, 32, [self._ping])
        self.window.map()
        self._wait_for(X.Expose)
        self.window.set_input_focus(X.RevertToParent, X.CurrentTime)
        self.d.sync()
        self.events: list[Event] = []
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def _wait_for(self, event_type: int) -> None:
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            if self.d.pending_events():
                if self.d.next_event().type == event_type:
                    return
            else:
                time.sleep(0.005)
        raise TimeoutError(f"window never got event type {event_type}")

    def fill(self, x: int, y: int, width: int, height: int, rgb: int) -> None:
        """Paint a rectangle (window coordinates) in a 0xRRGGBB colour; depth 24 TrueColor.

        Drawing goes through a connection of its own: python-xlib deadlocks now and then
        when one thread waits for a reply while another polls the same connection.
        """
        painter = display.Display(self.d.get_display_name())
        try:
            window = painter.create_resource_object("window", self.window.id)
            gc = window.create_gc(foreground=rgb)
            window.fill_rectangle(gc, x, y, width, height)
            gc.free()
            painter.sync()
        finally:
            painter.close()

    def start_recording(self) -> None:
        self._thread = threading.Thread(target=self._read, daemon=True)
        self._thread.start()

    def _read(self) -> None:
        d = self.d
        while not self._stop.is_set():
            if not d.pending_events():
                select.select([d], [], [], 0.02)
                continue
            e = d.next_event()
            if e.type == X.ClientMessage and e.client_type == self._protocols:
                self._answer(e)
                continue
            if e.type == X.MappingNotify:
                # python-xlib re-reads the changed keycodes right now, like XRefreshKeyboardMapping.
                d.refresh_keyboard_mapping(e)
                continue
            if e.type not in (
                X.KeyPress,
                X.KeyRelease,
                X.ButtonPress,
                X.ButtonRelease,
                X.MotionNotify,
            ):
                continue
            keysym = 0
            if e.type in (X.KeyPress, X.KeyRelease):
                time.sleep(self.read_delay)
                # Like XLookupString: the shifted level when Shift is down and it has a
                # keysym, else the plain one (Shift_L itself has no shifted level).
                shifted = d.keycode_to_keysym(e.detail, 1) if e.state & X.ShiftMask else 0
                keysym = shifted or d.keycode_to_keysym(e.detail, 0)
            with self._lock:
                self.events.append(
                    Event(
                        e.type,
                        e.detail,
                        e.event_x,
                        e.event_y,
                        e.root_x,
                        e.root_y,
                        e.state,
                        keysym,
                        int(e.time),
                    )
                )

    def _answer(self, message: event.ClientMessage) -> None:
        """Send a ping back to the root window, as EWMH asks (the ping's data unchanged)."""
        _, values = message.data
        if values[0] != self._ping:
            return
        root = self.d.screen().root
        reply = event.ClientMessage(
            window=root, client_type=self._protocols, data=(32, list(values))
        )
        mask = X.SubstructureNotifyMask | X.SubstructureRedirectMask
        root.send_event(reply, event_mask=mask)
        self.d.flush()
        self.pings += 1

    def wait(self, done: Callable[[list[Event]], bool], timeout: float = 3.0) -> list[Event]:
        """Wait until ``done(events)`` holds; return a copy of the events either way."""
        deadline = time.monotonic() + timeout
        while True:
            with self._lock:
                events = list(self.events)
            if done(events) or time.monotonic() > deadline:
                return events
            time.sleep(0.005)

    def clear(self) -> None:
        with self._lock:
            self.events.clear()

    def keymap(self) -> list[list[int]]:
        """The server's whole keyboard mapping, read through a connection of its own."""
        other = display.Display(self.d.get_display_name())
        try:
            info = other.display.info
            rows = other.get_keyboard_mapping(
                info.min_keycode, info.max_keycode - info.min_keycode + 1
            )
            return [list(row) for row in rows]
        finally:
            other.close()

    def close(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=2)
        self.d.close()


def keysym_to_text(keysym: int) -> str:
    """The character a keysym types: Latin-1, Unicode keysyms, Return and Tab; else ''."""
    if keysym == 0xFF0D:
        return "\n"
    if keysym == 0xFF09:
        return "\t"
    if 0x20 <= keysym <= 0x7E or 0xA0 <= keysym <= 0xFF:
        return chr(keysym)
    if keysym & 0xFF000000 == 0x01000000:
        return chr(keysym - 0x01000000)
    return ""


def typed_text(events: list[Event]) -> str:
    return "".join(keysym_to_text(e.keysym) for e in events if e.type == X.KeyPress)
