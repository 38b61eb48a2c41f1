"""The checks ``deskhandctl stop`` makes before it signals a pid (deskhand_d/pidfile.py)."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from deskhand_d import pidfile


@pytest.mark.parametrize(
    "argv",
    [
        ["/venv/bin/python", "/venv/bin/deskhand-d"],
        ["/venv/bin/python", "-P", "-m", "deskhand_d"],
        ["python3", "-X", "dev", "-m", "deskhand_d", "--socket", "/x"],
        ["/opt/deskhand/deskhand-d", "--log-level", "debug"],
    ],
)
def test_deskhand_command_lines_are_recognised(argv: list[str]) -> None:
    assert pidfile.is_deskhand(argv)


@pytest.mark.parametrize(
    "argv",
    [
        [],
        ["sleep", "60"],
        ["python3", "-m", "deskhandctl", "stop"],
        ["python3", "other.py", "-m", "deskhand_d"],
        ["python3", "-c", "print()", "deskhand-d"],
        ["vim", "deskhand-d"],
        ["python3", "-m"],
    ],
)
def test_other_command_lines_are_not(argv: list[str]) -> None:
    assert not pidfile.is_deskhand(argv)


def test_proc_and_ps_agree_about_a_process() -> None:
    """The ps path (macOS) reads the same uids and arguments as /proc does on Linux."""
    if not sys.platform.startswith("linux"):
        pytest.skip("compares against /proc, which only Linux has")
    child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(30)", "deskhand-d"])
    try:
        # Popen returns as the exec happens; the kernel fills in the new command line a moment
        # later (an empty /proc/PID/cmdline until then).
        deadline = time.monotonic() + 10
        while not (facts := pidfile.process_facts(child.pid))[1]:
            assert time.monotonic() < deadline
            time.sleep(0.01)
        uids, argv = facts
        assert uids == (os.getuid(), os.geteuid())
        assert argv == [sys.executable, "-c", "import time; time.sleep(30)", "deskhand-d"]
        ps_uids, ps_argv = pidfile._ps_facts(child.pid)
        assert ps_uids == uids
        assert ps_argv == [sys.executable, "-c", "import", "time;", "time.sleep(30)", "deskhand-d"]
    finally:
        child.kill()
        child.wait()
    with pytest.raises(ProcessLookupError):
        pidfile.process_facts(child.pid)
    with pytest.raises(ProcessLookupError):
        pidfile._ps_facts(child.pid)
