"""Reference full dump of one app's window with Debian's libatspi (python3-gi), for bench/atspi.py.

Run with the system Python (``/usr/bin/python3``, which has ``gi``), inside the private
desktop's environment: ``atspi_reference.py APP RUNS``. It finds the application named APP on
the accessibility bus, walks its first showing window depth first and reads for every node what
the AT-SPI backend renders (role, name, states, action names, the text or value), ``RUNS`` times
after one warm-up walk, and prints one JSON object: per-walk milliseconds and the node count.
"""

import json
import sys
import time
import warnings

import gi

gi.require_version("Atspi", "2.0")
from gi.repository import Atspi  # noqa: E402

warnings.simplefilter("ignore", DeprecationWarning)  # Action.get_action_name, see the spec notes


def node(acc, out):
    role = acc.get_role()
    name = acc.get_name()
    states = acc.get_state_set().get_states()
    ifaces = acc.get_interfaces()
    actions = []
    if "Action" in ifaces:
        actions = [
            Atspi.Action.get_action_name(acc, i) for i in range(Atspi.Action.get_n_actions(acc))
        ]
    value = None
    if "Text" in ifaces:
        value = Atspi.Text.get_text(acc, 0, Atspi.Text.get_character_count(acc))
    elif "Value" in ifaces:
        value = Atspi.Value.get_current_value(acc)
    out.append((role, name, len(states), actions, value))
    for i in range(acc.get_child_count()):
        child = acc.get_child_at_index(i)
        if child is not None:
            node(child, out)


def window(app_name):
    desktop = Atspi.get_desktop(0)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        for i in range(desktop.get_child_count()):
            app = desktop.get_child_at_index(i)
            if app is not None and app.get_name() == app_name and app.get_child_count():
                return app.get_child_at_index(0)
        time.sleep(0.2)
    raise SystemExit(f"{app_name} is not on the accessibility bus")


def main():
    app_name, runs = sys.argv[1], int(sys.argv[2])
    win = window(app_name)
    out = []
    node(win, out)  # warm-up: GTK4 creates its accessibles on the first walk
    times = []
    for _ in range(runs):
        out = []
        start = time.perf_counter()
        node(win, out)
        times.append((time.perf_counter() - start) * 1000)
    print(json.dumps({"walk_ms": times, "nodes": len(out)}))


main()
