"""A private desktop ends everything that ran in it, also programs that wipe their environment.

The sweep at :meth:`Desktop.close` finds processes by a marker in their environment. Chromium
writes over its environment when it sets its process title, so a Chromium that a backend
started in the session survived it (its GPU process then spun on both cores for the rest of a
test run, and slowed the tests after it). The sweep now also ends any process whose command line
names the session's directory, as a browser's profile directory does. Here a stand-in with an
empty environment plays that browser.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from dhtest.desktop import desktop_or_skip


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as f:
            return f.read().rpartition(")")[2].split()[0] != "Z"
    except OSError:
        return False


def test_a_program_without_the_marker_that_names_the_session_is_ended() -> None:
    with desktop_or_skip() as desk:
        profile = desk.root / "profiles" / "browser"
        # Started the way a backend starts an app (not through Desktop.spawn), in a session of
        # its own, with an empty environment: only its command line ties it to the desktop.
        stray = subprocess.Popen(
            ["env", "-i", sys.executable, "-c", "import time; time.sleep(120)", str(profile)],
            stdin=subprocess.DEVNULL,
            start_new_session=True,
        )
        deadline = time.monotonic() + 10
        while not Path(f"/proc/{stray.pid}/cmdline").read_bytes().startswith(b"/"):
            assert time.monotonic() < deadline  # env has exec'd the stand-in
            time.sleep(0.01)
        assert Path(f"/proc/{stray.pid}/environ").read_bytes() == b""
        unrelated = subprocess.Popen(
            [sys.executable, "-c", "import time; time.sleep(120)", "/tmp/elsewhere"],
            stdin=subprocess.DEVNULL,
        )
    try:
        stray.wait(10)  # ended by the desktop's close (and reaped here, its parent)
        assert not _alive(stray.pid)
        assert unrelated.poll() is None, "a process of no desktop was ended"
    finally:
        for proc in (stray, unrelated):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
