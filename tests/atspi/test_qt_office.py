"""Qt 5 apps and LibreOffice Writer end to end, through the Linux backend.

On one private desktop: FeatherPad and SpeedCrunch (Qt 5, whose bridge used to die with
SIGSEGV on the first observation) and LibreOffice Writer (which used to be started again,
one more "Untitled" window, on every observation). Each is observed, typed into and read back,
has a menu opened by index and a dialog opened and closed, with the same checks as the GTK
apps: the reply's tree shows the result, and the app is still the same process afterwards.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import ToolResult
from mcpclient import Server, serving
from screenread import index, ok, seen

pytestmark = pytest.mark.slow

EFFECT = "deskhand/effect"


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("featherpad", "speedcrunch", "soffice", "tesseract")) as desk:
        yield desk


@pytest.fixture(scope="module")
def server(desktop: Desktop) -> Iterator[Server]:
    with serving(desktop.env, desktop.root) as s:
        yield s


def pid_of(result: ToolResult) -> int:
    return int(result.text.split("pid ", 1)[1].split(")", 1)[0])


def alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state not in ("Z", "X")


def test_featherpad_type_menu_and_preferences(server: Server) -> None:
    state = ok(server.call("get_app_state", 90, app="FeatherPad"))
    pid = pid_of(state)
    ok(
        server.call(
            "click", 30, app="FeatherPad", element_index=index(state.text, r"text entry area")
        )
    )
    typed = ok(server.call("type_text", 30, app="FeatherPad", text="Hello from Deskhand"))
    assert (typed.raw.get("_meta") or {}).get(EFFECT) == {"effect": "changed", "what": "text"}
    assert "Value: Hello from Deskhand" in typed.text
    options = ok(
        server.call(
            "click",
            30,
            app="FeatherPad",
            element_index=index(typed.text, r"menu bar item Options"),
        )
    )
    assert "menu item Preferences" in options.text
    prefs = ok(
        server.call(
            "click",
            30,
            app="FeatherPad",
            element_index=index(options.text, r"menu item Preferences"),
        )
    )
    assert prefs.text.split("\n0 ", 1)[1].startswith("dialog Preferences"), prefs.text[:400]
    # the dialog is drawn: its first check box is on the screenshot (no title bar without a WM)
    assert "remember window size" in seen(ok(server.call("get_app_state", 90, app="FeatherPad")))
    closed = ok(
        server.call("click", 30, app="FeatherPad", element_index=index(prefs.text, r"button Close"))
    )
    assert "dialog Preferences" not in closed.text
    assert "Hello from Deskhand" in closed.text
    assert alive(pid)


def test_speedcrunch_calculates_by_keys(server: Server) -> None:
    state = ok(server.call("get_app_state", 90, app="SpeedCrunch"))
    pid = pid_of(state)
    ok(server.call("type_text", 30, app="SpeedCrunch", text="6*7"))
    done = ok(server.call("press_key", 30, app="SpeedCrunch", key="Return"))
    assert "= 42" in done.text, done.text
    assert alive(pid)


def _soffice(desktop: Desktop) -> set[int]:
    """LibreOffice's processes on this desktop (another test run may have its own)."""
    out = subprocess.run(["pgrep", "-x", "soffice.bin"], capture_output=True, text=True).stdout
    mine = f"DISPLAY={desktop.env['DISPLAY']}".encode()
    found = set()
    for pid in out.split():
        try:
            with open(f"/proc/{pid}/environ", "rb") as f:
                if mine in f.read().split(b"\0"):
                    found.add(int(pid))
        except OSError:
            continue
    return found


def test_writer_type_menu_dialog_and_never_started_twice(desktop: Desktop, server: Server) -> None:
    state = ok(server.call("get_app_state", 120, app="LibreOffice Writer"))
    pid = pid_of(state)
    if "dialog Tip of the Day" in state.text:
        state = ok(
            server.call(
                "click", 30, app="LibreOffice Writer", element_index=index(state.text, r"button OK")
            )
        )
    assert "dialog" not in state.text.split("\n0 ", 1)[1].split("\n", 1)[0]
    typed = ok(server.call("type_text", 30, app="LibreOffice Writer", text="Hello Writer"))
    assert "Value: Hello Writer" in typed.text
    helpmenu = ok(
        server.call(
            "click",
            30,
            app="LibreOffice Writer",
            element_index=index(typed.text, r"menu bar item Help"),
        )
    )
    about = ok(
        server.call(
            "click",
            30,
            app="LibreOffice Writer",
            element_index=index(helpmenu.text, r"menu item About LibreOffice"),
        )
    )
    assert "dialog About LibreOffice" in about.text, about.text[:600]
    closed = ok(
        server.call(
            "click", 30, app="LibreOffice Writer", element_index=index(about.text, r"button Close")
        )
    )
    assert "dialog About LibreOffice" not in closed.text
    # observed again and again, it is the same process and the same single document
    running = _soffice(desktop)
    for _ in range(3):
        again = ok(server.call("get_app_state", 120, app="LibreOffice Writer"))
        assert pid_of(again) == pid
        assert "Untitled 2" not in again.text
        time.sleep(0.2)
    assert _soffice(desktop) == running and len(running) == 1
    assert "Hello Writer" in again.text
