"""Bringing an app's window to the front and giving it the keyboard, on a python-xlib display.

What this owns: finding an app's top-level X windows by the ``_NET_WM_PID`` its toolkit sets
(GTK and Qt do), telling whether a window manager runs (``_NET_SUPPORTING_WM_CHECK`` on the
root window), and activating a window the way that fits: with a window manager, the EWMH
``_NET_ACTIVE_WINDOW`` request, so the manager decides and keeps its own bookkeeping; without
one (Xvfb), raising the window and setting the input focus directly, since nothing else will.

Why: XTest key events go to whichever window has the X input focus, and a screenshot of a
screen rectangle shows whatever lies on top. Called by :class:`.x11.X11` under its lock.
"""

from __future__ import annotations

from typing import Any

from Xlib import X, Xatom
from Xlib.protocol import event


def _atom(conn: Any, name: str) -> int:
    return int(conn.intern_atom(name))


def has_window_manager(conn: Any, root: Any) -> bool:
    prop = root.get_full_property(_atom(conn, "_NET_SUPPORTING_WM_CHECK"), Xatom.WINDOW)
    return prop is not None and len(prop.value) > 0


def windows_of(conn: Any, root: Any, pid: int) -> list[Any]:
    """Mapped top-level windows (children of the root, in stacking order, bottom first) whose
    ``_NET_WM_PID`` is ``pid``."""
    wm_pid = _atom(conn, "_NET_WM_PID")
    found = []
    for window in root.query_tree().children:
        try:
            prop = window.get_full_property(wm_pid, Xatom.CARDINAL)
            if prop is None or not prop.value or int(prop.value[0]) != pid:
                continue
            if window.get_attributes().map_state == X.IsViewable:
                found.append(window)
        except Exception:  # the window went away between listing and asking: skip it
            continue
    return found


def activate(conn: Any, root: Any, window: Any, *, focus: bool) -> None:
    """Raise ``window``; with ``focus``, give it the keyboard too (see the module notes)."""
    if has_window_manager(conn, root):
        if not focus:
            return  # never reorder a person's windows just to look at one
        message = event.ClientMessage(
            window=window,
            client_type=_atom(conn, "_NET_ACTIVE_WINDOW"),
            # source 2: a tool acting for the user; timestamp 0: now
            data=(32, [2, X.CurrentTime, 0, 0, 0]),
        )
        mask = X.SubstructureRedirectMask | X.SubstructureNotifyMask
        root.send_event(message, event_mask=mask)
        return
    window.configure(stack_mode=X.Above)
    if focus:
        window.set_input_focus(X.RevertToParent, X.CurrentTime)
