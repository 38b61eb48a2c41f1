"""A GTK 3 app for lifecycle tests that can stop answering on command.

Run with the system Python that has PyGObject (``/usr/bin/python3 tests/peers/freezer.py``).
It opens a window titled "Deskhand Freezer" with a text entry and a button. On SIGUSR1 its
main loop blocks for 30 seconds: every accessibility call to it then waits, as it would on an
app that is busy or about to crash, and a test can end the process at a moment it chooses
while Deskhand is in the middle of reading it. It writes its pid to the file named by
``FREEZER_PID_FILE`` once its window is mapped.

Standard library plus GI only; it is a peer for the tests, never imported by Deskhand.
"""

from __future__ import annotations

import os
import signal
import time

import gi

gi.require_version("Gtk", "3.0")
from gi.repository import GLib, Gtk  # noqa: E402


def main() -> int:
    window = Gtk.Window(title="Deskhand Freezer")
    window.set_default_size(320, 120)
    box = Gtk.Box(orientation=Gtk.Orientation.VERTICAL, spacing=6)
    entry = Gtk.Entry()
    entry.set_text("freezer")
    box.pack_start(entry, False, False, 0)
    box.pack_start(Gtk.Button(label="Nothing"), False, False, 0)
    window.add(box)
    window.connect("destroy", Gtk.main_quit)

    def freeze() -> bool:
        time.sleep(30)  # the whole main loop, and with it every accessibility answer, waits
        return False

    def on_usr1() -> bool:
        GLib.idle_add(freeze)
        return True

    GLib.unix_signal_add(GLib.PRIORITY_HIGH, signal.SIGUSR1, on_usr1)

    def mapped(_widget: Gtk.Widget, _event: object) -> bool:
        path = os.environ.get("FREEZER_PID_FILE")
        if path:
            with open(path, "w") as f:
                f.write(str(os.getpid()))
        return False

    window.connect("map-event", mapped)
    window.show_all()
    Gtk.main()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
