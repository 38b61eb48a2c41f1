"""Which running processes belong to this desktop: the rule behind ``instance_ages``.

The AT-SPI backend must not wait for an app that runs on another display or session bus (it
would wait for a window that never reaches its accessibility bus). The pure rule is checked on
values; ``instance_ages`` on real processes started here with chosen environments.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from deskhand_d.programs.atspi.apps import environ_of, instance_ages, same_desktop
from deskhand_d.programs.atspi.catalog import DesktopApp

BUS = "unix:path=/tmp/dhbus-test/bus"
HERE = {"DISPLAY": ":7", "DBUS_SESSION_BUS_ADDRESS": BUS}


def test_same_display_and_bus_is_this_desktop() -> None:
    assert same_desktop(dict(HERE), HERE)
    # a screen number and the bus's guid do not make it another desktop
    assert same_desktop({"DISPLAY": ":7.0", "DBUS_SESSION_BUS_ADDRESS": BUS + ",guid=1f"}, HERE)
    assert same_desktop({}, {})


@pytest.mark.parametrize(
    "theirs",
    [
        {"DISPLAY": ":8", "DBUS_SESSION_BUS_ADDRESS": BUS},  # another X display
        {"DISPLAY": ":7", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/tmp/other/bus"},  # other bus
        {"DISPLAY": ":7"},  # no session bus at all
        {"DBUS_SESSION_BUS_ADDRESS": BUS},  # no display
        {**HERE, "WAYLAND_DISPLAY": "wayland-0"},  # a Wayland session we are not in
        {"DISPLAY": "otherhost:7", "DBUS_SESSION_BUS_ADDRESS": BUS},  # a remote display
    ],
)
def test_any_other_display_or_bus_is_another_desktop(theirs: dict[str, str]) -> None:
    assert not same_desktop(theirs, HERE)


def test_wayland_must_match_too() -> None:
    ours = {**HERE, "WAYLAND_DISPLAY": "wayland-0"}
    assert same_desktop({**HERE, "WAYLAND_DISPLAY": "wayland-0"}, ours)
    assert not same_desktop({**HERE, "WAYLAND_DISPLAY": "wayland-1"}, ours)


def _wait_for_exec(pid: int, cmdline: bytes) -> None:
    """Wait until the child has exec'd: between fork and exec its /proc entry still shows
    the parent's command line and environment, which is not what the test is about."""
    path = Path(f"/proc/{pid}/cmdline")
    deadline = time.monotonic() + 10
    while path.read_bytes() != cmdline:
        if time.monotonic() > deadline:
            raise AssertionError(f"pid {pid} never became {cmdline!r}")
        time.sleep(0.005)


@pytest.fixture
def sleeper(tmp_path: Path) -> Iterator[tuple[subprocess.Popen[bytes], dict[str, str]]]:
    """A real ``sleep`` process started with a desktop of its own (a display and bus address
    no other process on this machine uses)."""
    env = {
        "PATH": os.environ.get("PATH", "/usr/bin:/bin"),
        "DISPLAY": f":{4000 + os.getpid() % 1000}",
        "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/bus,guid=0123",
    }
    proc = subprocess.Popen(["sleep", "60"], env=env)
    try:
        _wait_for_exec(proc.pid, b"sleep\x0060\x00")
        yield proc, env
    finally:
        proc.kill()
        proc.wait(10)


def test_already_started_counts_only_processes_of_this_desktop(
    sleeper: tuple[subprocess.Popen[bytes], dict[str, str]],
) -> None:
    """The same executable counts on its own display and bus, and nowhere else."""
    proc, env = sleeper
    assert shutil.which("sleep", path=env["PATH"])
    entry = DesktopApp(
        desktop_id="sleep.desktop",
        name="Sleep",
        path="/usr/share/applications/sleep.desktop",
        argv=("sleep",),
        names=frozenset({"sleep"}),
    )
    seen = environ_of(f"/proc/{proc.pid}/environ")
    assert seen == {k: env[k] for k in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
    ages = instance_ages(entry, env)
    assert list(ages) == [proc.pid]
    assert 0 <= ages[proc.pid] < 60  # started by this test, seconds ago
    # the bus listed without its guid is the same bus
    same = {**env, "DBUS_SESSION_BUS_ADDRESS": env["DBUS_SESSION_BUS_ADDRESS"].split(",")[0]}
    assert instance_ages(entry, same)
    assert not instance_ages(entry, {**env, "DISPLAY": env["DISPLAY"] + "1"})
    assert not instance_ages(entry, {**env, "DBUS_SESSION_BUS_ADDRESS": "unix:path=/x/bus"})
    proc.kill()
    proc.wait(10)
    assert not instance_ages(entry, env)  # gone: nothing to wait for
