"""Which process synthesized input would reach right now, and the rule that stops it otherwise.

What this owns: the input-target rule of the Linux backend. Before each batch of synthesized
input (a run of typed characters, one key chord, one button press with its release, one wheel
step, one step of a drag) the X server is grabbed, the window that would receive the events is
found, its owning process is compared with the process the person allowed, and only on a match
are the events sent, still under the grab. The grab makes the check and the events one step: no
other client's request (a window raised, the focus moved, an app exiting) is processed in
between, so input can never slip into another app through the gap.

* Keys go to the focus window (or, when the focus is the root or PointerRoot, the window under
  the pointer); pointer events go to the deepest window under the point.
* A window's process is the X client that created it, from the X-Resource extension (the
  server's own knowledge, not a property a client could set); without X-Resource,
  ``_NET_WM_PID`` of its top-level window.
* A button or key that is down when input stops is released while our own client holds the
  pointer or keyboard grab, so the release reaches no app and nothing stays stuck.
* A click by index that stands in for a GTK button's delayed action (see :mod:`.actions`) asks
  more, under the same grab: which of the process's top-level windows holds the element
  (:meth:`Targets.windows_of`), whether that window is the top-most one at the point
  (:meth:`Targets.chain_at`), and whether any client holds a pointer grab
  (:meth:`Targets.pointer_grabbed`); if any answer is wrong, nothing is sent.
* Whether the app has read the keys sent to it so far, which the X server cannot say: the app
  is asked with a ``_NET_WM_PING`` (:class:`Echo`). Typing waits for the answer before a
  borrowed keycode changes its meaning.

:class:`InputStopped` says how far input got: ``done`` of ``total`` units (characters, keys,
clicks, wheel steps, drag steps) and why it stopped (``target_changed``: another app's window
would have received it; ``target_gone``: the allowed process is gone; ``cancelled``).
"""

from __future__ import annotations

import os
import select
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

from Xlib import X, Xatom
from Xlib import error as xerror
from Xlib.protocol import event

StopReason = Literal["target_changed", "target_gone", "cancelled"]


@dataclass(frozen=True, slots=True)
class Guard:
    """The process that must receive the input, and a flag that stops it between batches.

    On Wayland (see :mod:`.wlscreen`) the compositor cannot name a window's process, so the
    guard also carries what the focused window must look like: the sizes of the app's own
    windows, those of every other app's (a focused window one of them could be proves
    nothing), and the screen origin the toolkit gives the app's windows (points arrive
    measured from it)."""

    pid: int
    stop: threading.Event = field(default_factory=threading.Event)
    #: Set by the seat just before the first event of the action goes out: until then, a
    #: failure left the app untouched (the reply says ``refused``, never ``dispatched``).
    sending: threading.Event = field(default_factory=threading.Event)
    window_sizes: frozenset[tuple[int, int]] = frozenset()
    other_sizes: frozenset[tuple[int, int]] = frozenset()
    origin: tuple[int, int] = (0, 0)


class InputStopped(Exception):
    """Input stopped before a batch: ``done`` of ``total`` ``unit`` had been sent."""

    def __init__(self, reason: StopReason, done: int, total: int, unit: str, detail: str) -> None:
        super().__init__(detail)
        self.reason: StopReason = reason
        self.done = done
        self.total = total
        self.unit = unit
        self.detail = detail


class Progress:
    """Counts the batches of one input action for :class:`InputStopped`."""

    def __init__(self, total: int, unit: str) -> None:
        self.done = 0
        self.total = total
        self.unit = unit

    def stopped(self, reason: StopReason, detail: str) -> InputStopped:
        return InputStopped(reason, self.done, self.total, self.unit, detail)


def window_id(window: Any) -> int:
    return window if isinstance(window, int) else int(window.id)


def process_alive(pid: int) -> bool:
    """Whether ``pid`` exists and is not a zombie (Linux ``/proc``; elsewhere ``kill 0``)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rsplit(b")", 1)[1].split()[0]
        return state not in (b"Z", b"X")
    except FileNotFoundError:
        return False
    except (OSError, IndexError):
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        except PermissionError:
            return True
        return True


def settled_alive(pid: int, wait: float = 0.1) -> bool:
    """:func:`process_alive` after ``wait`` seconds: a process that is being killed closes
    its descriptors (its X connection among them) just before it leaves the process table."""
    time.sleep(wait)
    return process_alive(pid)


class Targets:
    """Asks one python-xlib connection where input would go. Called under the X11 lock."""

    def __init__(self, conn: Any, root: Any) -> None:
        self.conn = conn
        self.root = root
        self._xres = bool(conn.has_extension("X-Resource"))

    def owner(self, window: Any) -> int | None:
        """The pid of the process that created ``window``, or None when nobody can tell."""
        wid = window_id(window)
        if wid in (X.NONE, X.PointerRoot, self.root.id):
            return None
        if self._xres:
            from Xlib.ext import res

            reply = self.conn.res_query_client_ids(
                [{"client": wid, "mask": res.LocalClientPIDMask}]
            )
            for value in reply.ids:
                if value.spec.mask & res.LocalClientPIDMask and value.value:
                    return int(value.value[0])
            return None
        return self._wm_pid(wid)

    def _wm_pid(self, wid: int) -> int | None:
        """``_NET_WM_PID`` of the top-level window holding ``wid`` (or of a window manager
        frame's client)."""
        atom = int(self.conn.intern_atom("_NET_WM_PID"))
        window = self.conn.create_resource_object("window", wid)
        while True:
            prop = window.get_full_property(atom, Xatom.CARDINAL)
            if prop is not None and prop.value:
                return int(prop.value[0])
            tree = window.query_tree()
            if tree.parent == X.NONE or window_id(tree.parent) == self.root.id:
                for child in reversed(tree.children):  # a frame: its client is inside
                    prop = child.get_full_property(atom, Xatom.CARDINAL)
                    if prop is not None and prop.value:
                        return int(prop.value[0])
                return None
            window = tree.parent

    def window_at(self, x: int, y: int) -> int:
        """The deepest mapped window containing root point ``(x, y)`` (0: only the root)."""
        found = 0
        child = self.root.translate_coords(self.root, x, y).child
        while child and window_id(child) != X.NONE:
            found = window_id(child)
            child = child.translate_coords(self.root, x, y).child
        return found

    def chain_at(self, x: int, y: int) -> list[int]:
        """The mapped windows containing root point ``(x, y)``, top-level first, each the
        top-most child of the one before it (the last is :meth:`window_at`'s)."""
        found: list[int] = []
        child = self.root.translate_coords(self.root, x, y).child
        while child and window_id(child) != X.NONE:
            found.append(window_id(child))
            child = child.translate_coords(self.root, x, y).child
        return found

    def windows_of(
        self, pid: int, size: tuple[int, int]
    ) -> list[tuple[int, tuple[int, int, int, int]]]:
        """``(window, (x, y, width, height))`` in root pixels for each viewable top-level
        window of ``pid`` (by its ``_NET_WM_PID``; under a window manager, the client inside
        a frame) at least ``size`` large, and less than twice as large each way (a toolkit's
        invisible border is a few pixels)."""
        atom = int(self.conn.intern_atom("_NET_WM_PID"))
        found: list[tuple[int, tuple[int, int, int, int]]] = []
        for top in self.root.query_tree().children:
            if top.get_attributes().map_state != X.IsViewable:
                continue
            for window in (top, *top.query_tree().children):
                prop = window.get_full_property(atom, Xatom.CARDINAL)
                if prop is None or not prop.value or int(prop.value[0]) != pid:
                    continue
                geometry = window.get_geometry()
                w, h = int(geometry.width), int(geometry.height)
                if size[0] <= w < 2 * size[0] and size[1] <= h < 2 * size[1]:
                    at = self.root.translate_coords(window, 0, 0)
                    found.append((window_id(window), (int(at.x), int(at.y), w, h)))
                break  # a frame holds one client
        return found

    def pointer_grabbed(self) -> bool:
        """Whether some client holds an active pointer grab (an open menu or popover does):
        then X sends pointer events to that client wherever the pointer is. Asked by trying
        to grab the pointer ourselves and letting it go at once (call it under the server
        grab, so that no other client can grab in between)."""
        status = self.root.grab_pointer(
            False, 0, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime
        )
        if status != X.GrabSuccess:
            return True
        self.conn.ungrab_pointer(X.CurrentTime)
        return False

    def keyboard_grabbed(self) -> bool:
        """Whether some client holds an active keyboard grab (an open menu, a screen lock):
        then X sends key events to that client whatever has the focus. Asked like
        :meth:`pointer_grabbed`, under the server grab."""
        status = self.root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)
        if status != X.GrabSuccess:
            return True
        self.conn.ungrab_keyboard(X.CurrentTime)
        return False

    def _popups(self, pid: int) -> Iterator[Any]:
        """``pid``'s popups: viewable override-redirect top-level windows, as menus and
        popovers are."""
        for top in self.root.query_tree().children:
            attributes = top.get_attributes()
            popup = attributes.map_state == X.IsViewable and attributes.override_redirect
            if popup and self.owner(top) == pid:
                yield top

    def has_popup(self, pid: int) -> bool:
        """Whether ``pid`` shows a popup: an app's own open menu holds the pointer and
        keyboard while it is open, and input to that app is meant for it."""
        return next(self._popups(pid), None) is not None

    def popup_at(self, pid: int, width: int) -> tuple[int, int] | None:
        """The root position of ``pid``'s popup that is ``width`` pixels wide, if any."""
        for top in self._popups(pid):
            if int(top.get_geometry().width) == width:
                at = self.root.translate_coords(top, 0, 0)
                return int(at.x), int(at.y)
        return None

    def grabbed_elsewhere(self, pid: int, keys: bool) -> bool:
        """Whether an active grab (of the keyboard with ``keys``, else of the pointer) would
        take the input away from ``pid``: one is held and ``pid`` shows no popup of its own."""
        held = self.keyboard_grabbed() if keys else self.pointer_grabbed()
        return held and not self.has_popup(pid)

    def key_window(self) -> int:
        """The window key events would reach now (0: none)."""
        focus = window_id(self.conn.get_input_focus().focus)
        if focus == X.NONE:
            return 0
        if focus in (X.PointerRoot, self.root.id):
            pointer = self.root.query_pointer()
            return self.window_at(pointer.root_x, pointer.root_y)
        return focus

    def check(self, pid: int, window: int, what: str) -> tuple[StopReason, str] | None:
        """None when ``window`` belongs to ``pid``; else why input must stop there."""
        if not process_alive(pid):
            return "target_gone", f"the app (pid {pid}) has quit"
        try:
            owner = self.owner(window) if window else None
        except xerror.XError:  # the window vanished while we looked: nothing to send to
            owner = None
        if owner == pid:
            return None
        if owner is None:
            return "target_changed", f"{what} would reach no window of the app (pid {pid})"
        return "target_changed", f"{what} would reach another program's window (pid {owner})"


class Echo:
    """Proof that an app's X client has read the events sent to it so far.

    X delivers events to a client in the order the server generated them, but a round trip
    of our own says nothing about when the app reads them. So the app is asked: an EWMH
    ``_NET_WM_PING`` client message is sent to its top-level window, and toolkits that list
    ``_NET_WM_PING`` in ``WM_PROTOCOLS`` (GTK 3 and 4, Qt, ...) answer it on the root window
    as they read it from their event queue, that is after every event before it. GTK 3 does
    so only once it has dispatched those events (it reads the next X event when its own queue
    is empty); every toolkit has at least looked the keys up in its keymap by then, which is
    what a borrowed keycode must outlive. Called under the X11 lock.
    """

    def __init__(self, conn: Any, root: Any, window: Any, pid: int | None) -> None:
        self._conn = conn
        self._root = root
        self._window = window
        self._pid = pid
        self._protocols = int(conn.intern_atom("WM_PROTOCOLS"))
        self._ping = int(conn.intern_atom("_NET_WM_PING"))
        self._serial = 0

    @classmethod
    def find(cls, targets: Targets, window: int, pid: int | None) -> Echo | None:
        """The echo of the client behind ``window`` (a window keys would reach), through its
        top-level window or the client window inside a window manager's frame; None when
        that window does not answer pings (or, with ``pid``, belongs to another process)."""
        conn, root = targets.conn, targets.root
        if window in (X.NONE, X.PointerRoot, root.id):
            return None
        try:
            top = conn.create_resource_object("window", window)
            while True:
                tree = top.query_tree()
                if tree.parent == X.NONE or window_id(tree.parent) == root.id:
                    break
                top = tree.parent
            protocols = int(conn.intern_atom("WM_PROTOCOLS"))
            ping = int(conn.intern_atom("_NET_WM_PING"))
            for candidate in (top, *reversed(top.query_tree().children)):
                prop = candidate.get_full_property(protocols, Xatom.ATOM)
                if prop is not None and ping in prop.value:
                    if pid is not None and targets.owner(candidate) != pid:
                        return None
                    return cls(conn, root, candidate, pid)
        except xerror.XError:  # the window went away while we looked
            return None
        return None

    def wait(self, timeout: float, stop: threading.Event | None = None) -> bool:
        """Ping the app and wait for its answer: True once it came (the app has read every
        event sent before this call), False after ``timeout`` seconds, when ``stop`` is set,
        or when the app's process is gone."""
        self._serial = self._serial % 0xFFFFFFF + 1
        stamp = self._serial
        ignore = xerror.CatchError(xerror.BadWindow)
        self._root.change_attributes(event_mask=X.SubstructureNotifyMask)
        try:
            ping = event.ClientMessage(
                window=self._window,
                client_type=self._protocols,
                data=(32, [self._ping, stamp, self._window.id, 0, 0]),
            )
            self._window.send_event(ping, event_mask=0, onerror=ignore)
            self._conn.flush()
            deadline = time.monotonic() + timeout
            checked = time.monotonic()
            while True:
                while self._conn.pending_events():
                    answer = self._conn.next_event()
                    if answer.type == X.ClientMessage and self._is_answer(answer, stamp):
                        return True
                now = time.monotonic()
                if now >= deadline or (stop is not None and stop.is_set()):
                    return False
                if self._pid is not None and now - checked > 0.1:
                    checked = now
                    if not process_alive(self._pid):
                        return False
                select.select([self._conn], [], [], min(deadline - now, 0.01))
        finally:
            self._root.change_attributes(event_mask=X.NoEventMask)
            self._conn.flush()

    def _is_answer(self, message: Any, stamp: int) -> bool:
        if int(message.client_type) != self._protocols:
            return False
        _, values = message.data
        return len(values) >= 3 and int(values[0]) == self._ping and int(values[1]) == stamp


def grab_for_release(conn: Any, root: Any) -> None:
    """Take the pointer and keyboard for our own client, so releases reach no app."""
    mask = X.ButtonPressMask | X.ButtonReleaseMask | X.PointerMotionMask
    root.grab_pointer(False, mask, X.GrabModeAsync, X.GrabModeAsync, X.NONE, X.NONE, X.CurrentTime)
    root.grab_keyboard(False, X.GrabModeAsync, X.GrabModeAsync, X.CurrentTime)


def ungrab_after_release(conn: Any) -> None:
    conn.ungrab_pointer(X.CurrentTime)
    conn.ungrab_keyboard(X.CurrentTime)
