"""Apps that end, crash or stay silent while the Linux backend uses them.

On one private desktop: an app of our own (``tests/peers/freezer.py``) that stops answering on
SIGUSR1 is started through the backend (so the backend is its parent and reaper), observed,
frozen and killed mid-read; killed again while text is typed into it; and a GTK 3 app started
without its accessibility bridge is observed. Each reply must name what happened (the app
exited, with its signal; the app cannot be read and needs a restart), never a missing window,
the dead app must not linger as a zombie, and a running app must not be started a second time.
"""

from __future__ import annotations

import os
import signal
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import ToolResult
from mcpclient import Server, serving

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
FREEZER = ROOT / "tests" / "peers" / "freezer.py"
DELIVERY = "deskhand/delivery"


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("galculator",)) as desk:
        if not Path("/usr/bin/python3").exists():
            pytest.skip("the freezer app needs /usr/bin/python3 with PyGObject")
        yield desk


@pytest.fixture(scope="module")
def silent(desktop: Desktop) -> subprocess.Popen[bytes]:
    """Galculator started by the person with its accessibility bridge off: it runs, but it
    never joins the bus. Started first, so that it is long past its start when asked for."""
    env = {**desktop.env, "NO_AT_BRIDGE": "1"}
    with open(desktop.log("silent-galculator"), "ab") as log:
        proc = subprocess.Popen(["galculator"], env=env, stdout=log, stderr=log)
    desktop.procs.append(proc)
    return proc


@pytest.fixture(scope="module")
def server(desktop: Desktop, silent: subprocess.Popen[bytes]) -> Iterator[Server]:
    data = desktop.root / "data"
    (data / "applications").mkdir(parents=True)
    (data / "applications" / "dh-freezer.desktop").write_text(
        f"[Desktop Entry]\nType=Application\nName=Freezer\nExec=/usr/bin/python3 {FREEZER}\n"
    )
    env = {
        **desktop.env,
        "XDG_DATA_HOME": str(data),
        "FREEZER_PID_FILE": str(desktop.root / "freezer.pid"),
    }
    with serving(env, desktop.root) as s:
        yield s


def note_of(result: ToolResult) -> dict[str, Any]:
    note: dict[str, Any] | None = (result.raw.get("_meta") or {}).get(DELIVERY)
    assert result.is_error and note is not None, result.text
    return note


def start_freezer(desktop: Desktop, server: Server) -> int:
    """Observe the freezer (the backend starts it) and return its pid."""
    pid_file = desktop.root / "freezer.pid"
    pid_file.unlink(missing_ok=True)
    result = server.call("get_app_state", 90, app="Freezer")
    assert not result.is_error, result.text
    assert "Deskhand Freezer" in result.text
    return int(pid_file.read_text())


def wait_reaped(pid: int) -> None:
    """The process is gone from the process table: reaped, not left a zombie."""
    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        if not os.path.exists(f"/proc/{pid}"):
            return
        time.sleep(0.05)
    state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    raise AssertionError(f"process {pid} still in the table (state {state})")


def in_background(server: Server, tool: str, **args: Any) -> tuple[threading.Thread, list[Any]]:
    box: list[Any] = []
    thread = threading.Thread(target=lambda: box.append(server.call(tool, 90, **args)))
    thread.start()
    return thread, box


def test_an_app_that_crashes_while_it_is_read_is_named_with_its_signal(
    desktop: Desktop, server: Server
) -> None:
    pid = start_freezer(desktop, server)
    os.kill(pid, signal.SIGUSR1)  # it stops answering: the next read waits on it
    time.sleep(0.3)
    thread, box = in_background(server, "get_app_state", app="Freezer")
    time.sleep(1.0)
    assert thread.is_alive(), "the read should be waiting on the frozen app"
    os.kill(pid, signal.SIGSEGV)
    thread.join(60)
    result: ToolResult = box[0]
    note = note_of(result)
    assert (note["reason"], note["state"]) == ("app_exited", "refused"), note
    assert note["exit"] == "signal 11 (SIGSEGV)" and note["during"] == "reading", note
    assert "Freezer exited (signal 11 (SIGSEGV)) while its window was being read" in result.text
    assert "noWindowsAvailable" not in result.text
    wait_reaped(pid)


def test_an_app_killed_while_text_is_typed_says_how_much_went_out(
    desktop: Desktop, server: Server
) -> None:
    pid = start_freezer(desktop, server)
    text = "abcdefghij " * 600  # long enough to be cut off part-way
    thread, box = in_background(server, "type_text", app="Freezer", text=text)
    time.sleep(0.8)
    os.kill(pid, signal.SIGKILL)
    thread.join(90)
    result: ToolResult = box[0]
    note = note_of(result)
    assert note["reason"] == "app_exited" and note["exit"] == "signal 9 (SIGKILL)", note
    assert note["during"] == "acting", note
    # some input may have reached it before it died: what it did with it is unknown
    assert note["state"] in ("unknown", "refused"), note
    if "done" in note:
        assert note["unit"] == "characters" and note["done"] < note["total"] == len(text)
    assert "Freezer exited (signal 9 (SIGKILL)) while input was being sent to it" in result.text
    wait_reaped(pid)


def test_an_app_that_never_joins_the_bus_is_refused_and_not_started_again(
    desktop: Desktop, server: Server, silent: subprocess.Popen[bytes]
) -> None:
    before = _pids("galculator")
    assert silent.pid in before
    result = server.call("get_app_state", 90, app="Galculator")
    note = note_of(result)
    assert (note["reason"], note["state"], note["hint"]) == ("not_accessible", "refused", "restart")
    assert "has not joined the accessibility bus" in result.text
    assert "noWindowsAvailable" not in result.text
    assert _pids("galculator") == before  # never a second copy
    assert silent.poll() is None  # and the person's copy is untouched


def test_the_backend_leaves_no_zombies(desktop: Desktop, server: Server) -> None:
    """Every app the backend started and that ended was reaped."""
    out = subprocess.run(
        ["ps", "--ppid", str(server.proc.pid), "-o", "pid=,stat="],
        capture_output=True,
        text=True,
        check=False,
    ).stdout
    zombies = [line for line in out.splitlines() if line.split()[1].startswith("Z")]
    assert zombies == [], out


def _pids(name: str) -> set[int]:
    out = subprocess.run(["pgrep", "-x", name], capture_output=True, text=True).stdout
    return {int(p) for p in out.split()}
