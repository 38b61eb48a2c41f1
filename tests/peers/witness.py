"""A witness app for input-target tests: a GTK 3 window that records every input it receives.

Run with the system Python that has PyGObject (``/usr/bin/python3 tests/peers/witness.py
RECORD X Y W H [grab]``). It opens an undecorated window at ``(X, Y)`` of size ``W x H`` titled
"Deskhand Witness" with a text view filling it, and appends one JSON line to RECORD for every
key press or release, button press or release and scroll event that reaches it, and a
``{"event": "ready", "xid": N, "pid": N}`` line once its window is mapped (``xid`` 0 on
Wayland, where it has no X window and the compositor decides where it goes). With ``grab``
it holds an active grab of the keyboard once mapped, as an open menu or a screen lock does. A test that sends
input to another app reads RECORD afterwards: any input line means input landed here.

Standard library plus GI only; it is a peer for the tests, never imported by Deskhand.
"""

from __future__ import annotations

import json
import os
import sys

import gi

gi.require_version("Gtk", "3.0")
gi.require_version("GdkX11", "3.0")
from gi.repository import Gdk, GdkX11, GLib, Gtk  # noqa: E402

_KINDS = {
    Gdk.EventType.KEY_PRESS: "key_press",
    Gdk.EventType.KEY_RELEASE: "key_release",
    Gdk.EventType.BUTTON_PRESS: "button_press",
    Gdk.EventType.BUTTON_RELEASE: "button_release",
    Gdk.EventType.SCROLL: "scroll",
    Gdk.EventType._2BUTTON_PRESS: "button_press",
    Gdk.EventType._3BUTTON_PRESS: "button_press",
}


def main() -> int:
    record_path = sys.argv[1]
    x, y, w, h = (int(v) for v in sys.argv[2:6])
    record = open(record_path, "a", buffering=1)  # noqa: SIM115 - lives as long as the app

    def write(**fields: object) -> None:
        record.write(json.dumps(fields) + "\n")

    window = Gtk.Window(title="Deskhand Witness")
    window.set_decorated(False)
    window.set_default_size(w, h)
    window.move(x, y)
    view = Gtk.TextView()
    view.get_buffer().set_text("witness: any input here is a failure\n")
    window.add(view)

    def on_event(_widget: Gtk.Widget, event: Gdk.Event) -> bool:
        kind = _KINDS.get(event.type)
        if kind is not None:
            fields: dict[str, object] = {"event": kind}
            if kind.startswith("key"):
                fields["keyval"] = Gdk.keyval_name(event.keyval)
            else:
                fields["x"], fields["y"] = round(event.x_root), round(event.y_root)
            write(**fields)
        return False  # let the text view see it too, as a real app would

    window.connect("event", on_event)
    window.connect("destroy", Gtk.main_quit)

    def on_map(_widget: Gtk.Widget, _event: Gdk.Event) -> bool:
        gdk_window = window.get_window()
        xid = gdk_window.get_xid() if isinstance(gdk_window, GdkX11.X11Window) else 0
        write(event="ready", xid=xid, pid=os.getpid())
        return False

    window.connect("map-event", on_map)
    if sys.argv[6:7] == ["grab"]:

        def grab_keyboard(_widget: Gtk.Widget, _event: Gdk.Event) -> bool:
            seat = window.get_display().get_default_seat()
            status = seat.grab(
                window.get_window(), Gdk.SeatCapabilities.KEYBOARD, False, None, None, None
            )
            write(event="grabbed", status=int(status))
            return False

        window.connect("map-event", grab_keyboard)
    window.show_all()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, 15, Gtk.main_quit)  # SIGTERM: leave cleanly
    Gtk.main()
    return 0


if __name__ == "__main__":
    sys.exit(main())
