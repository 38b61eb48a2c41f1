"""The desktop checks behind ``auto`` and ``doctor``, against real X servers and buses.

A private desktop (Xvfb, session bus, accessibility bus) passes every check and makes ``auto``
pick the AT-SPI server. Taking one piece away at a time (the session bus, the display, XTEST,
a readable screen) fails exactly that check, with its fix, and ``auto`` refuses instead of
standing in with the simulator. ``doctor`` reports the same through the daemon and the CLI, and
sends no input while it does.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import daemon_env, short_tmpdir, spawn_daemon
from dhtest.desktop import Desktop, desktop_or_skip, require_binaries, start_desktop
from Xlib import display as xdisplay

from deskhand_d import config
from deskhand_d.backends import desktopprobe, launchers
from deskhand_d.errors import DesktopUnreachable

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def desk() -> Iterator[Desktop]:
    with desktop_or_skip() as d:
        yield d


def _statuses(checks: list[Any]) -> dict[str, str]:
    return {c.name: c.status for c in checks}


def _auto() -> config.BackendConfig:
    return config.parse("", source="t", env={}).backend


def test_a_whole_private_desktop_passes_and_auto_picks_atspi(desk: Desktop) -> None:
    checks = desktopprobe.run(desk.env)
    assert _statuses(checks) == {
        "display": "ok",
        "xtest": "ok",
        "screenshot": "ok",
        "accessibility_bus": "ok",
    }, checks
    assert (
        f"X display {desk.display} answers" in checks[0].detail and "1280x900" in checks[0].detail
    )
    spec = launchers.resolve(_auto(), desk.env, platform="linux")
    assert spec.kind == "atspi" and spec.notice.startswith("using AT-SPI: X display")


def _set_switch(desk: Desktop, on: bool) -> None:
    subprocess.run(
        [
            "dbus-send", "--session", "--dest=org.a11y.Bus", "--print-reply", "/org/a11y/bus",
            "org.freedesktop.DBus.Properties.Set", "string:org.a11y.Status", "string:IsEnabled",
            f"variant:boolean:{'true' if on else 'false'}",
        ],
        env=desk.env, check=True, capture_output=True, timeout=10,
    )  # fmt: skip


def test_the_accessibility_switch_and_chromium_are_explained(desk: Desktop) -> None:
    """The bus check says whether the session's switch is on and what that means for apps,
    and what Chromium-family apps need whatever the switch says."""
    _set_switch(desk, False)
    off = next(c for c in desktopprobe.run(desk.env) if c.name == "accessibility_bus")
    assert off.status == "ok"
    assert "accessibility switch (org.a11y.Status IsEnabled) is off" in off.detail
    assert "turns it on while it runs" in off.detail
    assert "--force-renderer-accessibility" in off.detail
    _set_switch(desk, True)
    try:
        on = next(c for c in desktopprobe.run(desk.env) if c.name == "accessibility_bus")
        assert "accessibility switch is on" in on.detail and " is off" not in on.detail
        assert "--force-renderer-accessibility" in on.detail
    finally:
        _set_switch(desk, False)


def test_without_the_session_bus_auto_refuses_with_the_fix(desk: Desktop) -> None:
    """The issue's reproduction: DISPLAY is there, DBUS_SESSION_BUS_ADDRESS is not."""
    env = {k: v for k, v in desk.env.items() if k != "DBUS_SESSION_BUS_ADDRESS"}
    with pytest.raises(DesktopUnreachable) as caught:
        launchers.resolve(_auto(), env, platform="linux")
    err = caught.value
    assert err.code == "desktop_unreachable"
    assert f"(DISPLAY={desk.display})" in err.message
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in err.message
    assert "import-environment DBUS_SESSION_BUS_ADDRESS" in err.message
    assert {c["name"]: c["status"] for c in err.data["checks"]} == {
        "display": "ok",
        "xtest": "ok",
        "accessibility_bus": "failed",
    }


def test_a_wayland_session_without_gnomes_compositor_is_named(desk: Desktop) -> None:
    """WAYLAND_DISPLAY names a compositor that is not GNOME's (this session bus has neither
    Mutter's screen cast nor its remote-desktop interface): the session is named, input and
    screenshots fail with the reason, nothing of X11 is asked for, and auto still picks the
    AT-SPI backend: reading apps and clicks by index need none of it."""
    env = {k: v for k, v in desk.env.items() if k != "DISPLAY"}
    env["WAYLAND_DISPLAY"] = "wayland-9"
    checks = desktopprobe.run(env)
    assert _statuses(checks) == {
        "display": "ok",
        "input": "failed",
        "screenshot": "failed",
        "accessibility_bus": "ok",
    }
    assert "Wayland session (wayland-9)" in checks[0].detail
    assert "screen cast" in checks[1].fix or "portal" in checks[1].fix
    assert "24-bit" not in checks[2].fix
    mutter = desktopprobe.run(env, wayland_input="mutter")
    assert "GNOME remote-desktop interface" in mutter[1].detail and mutter[1].failed
    assert launchers.resolve(_auto(), env, platform="linux").kind == "atspi"


def _xvfb(*extra: str) -> tuple[subprocess.Popen[bytes], str]:
    """A bare Xvfb with ``extra`` arguments, on a display it picks itself."""
    read, write = os.pipe()
    proc = subprocess.Popen(
        ["Xvfb", "-displayfd", str(write), "-nolisten", "tcp", "-noreset", *extra],
        pass_fds=(write,),
        stdin=subprocess.DEVNULL,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    os.close(write)
    number = b""
    try:
        while not number.endswith(b"\n"):
            ready, _, _ = select.select([read], [], [], 20)
            chunk = os.read(read, 16) if ready else b""
            if not chunk:
                proc.kill()
                proc.wait(10)
                pytest.fail(f"Xvfb {' '.join(extra)} did not start")
            number += chunk
    finally:
        os.close(read)
    return proc, ":" + number.decode().strip()


@pytest.fixture
def bare_x() -> Iterator[Any]:
    """A factory for bare Xvfb servers, all ended after the test."""
    require_binaries()
    started: list[subprocess.Popen[bytes]] = []

    def start(*extra: str) -> str:
        proc, name = _xvfb(*extra)
        started.append(proc)
        return name

    yield start
    for proc in started:
        proc.terminate()
        proc.wait(10)


def test_a_display_without_xtest_fails_that_check(desk: Desktop, bare_x: Any) -> None:
    name = bare_x("-screen", "0", "320x240x24", "-extension", "XTEST")
    checks = desktopprobe.run({**desk.env, "DISPLAY": name})
    assert _statuses(checks) == {
        "display": "ok",
        "xtest": "failed",
        "screenshot": "not_checked",
        "accessibility_bus": "ok",
    }
    assert "no XTEST extension" in checks[1].detail and "-extension XTEST" in checks[1].fix


def test_a_screen_that_cannot_be_read_fails_the_screenshot_check(
    desk: Desktop, bare_x: Any
) -> None:
    name = bare_x("-screen", "0", "320x240x16")
    checks = desktopprobe.run({**desk.env, "DISPLAY": name})
    assert _statuses(checks) == {
        "display": "ok",
        "xtest": "ok",
        "screenshot": "failed",
        "accessibility_bus": "ok",
    }
    assert "cannot be read" in checks[2].detail and "24-bit" in checks[2].fix
    # Screenshots are doctor's to check: auto still starts the backend there.
    spec = launchers.resolve(_auto(), {**desk.env, "DISPLAY": name}, platform="linux")
    assert spec.kind == "atspi"


def test_a_display_nobody_serves_fails_and_skips_what_needs_it(desk: Desktop) -> None:
    checks = desktopprobe.run({**desk.env, "DISPLAY": ":4712"})
    assert _statuses(checks) == {
        "display": "failed",
        "xtest": "not_checked",
        "screenshot": "not_checked",
        "accessibility_bus": "ok",
    }
    assert "cannot connect to X display ':4712'" in checks[0].detail
    assert "XAUTHORITY" in checks[0].fix


# ----- doctor through the daemon and the CLI ---------------------------------------------------


def _doctor(env: dict[str, str], sock: Path, *args: str) -> subprocess.CompletedProcess[str]:
    argv = ["--socket", str(sock), "--no-autostart", "doctor", *args]
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", *argv],
        capture_output=True,
        text=True,
        timeout=90,
        env=env,
        cwd=ROOT,
    )


def _pointer(name: str) -> tuple[int, int]:
    conn = xdisplay.Display(name)
    try:
        reply = conn.screen().root.query_pointer()
        return int(reply.root_x), int(reply.root_y)
    finally:
        conn.close()


def _warp(name: str, x: int, y: int) -> None:
    conn = xdisplay.Display(name)
    try:
        conn.screen().root.warp_pointer(x, y)
        conn.sync()
    finally:
        conn.close()


def test_doctor_on_a_whole_desktop_is_healthy_and_sends_no_input(desk: Desktop) -> None:
    """auto -> atspi: handshake, surface and all four checks pass; the pointer has not moved."""
    keep = (
        "DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "GSETTINGS_BACKEND",
        "GDK_BACKEND",
        "GSK_RENDERER",
    )
    root = short_tmpdir()
    try:
        d = spawn_daemon(root, extra_env={k: desk.env[k] for k in keep})
        _warp(desk.display, 17, 23)
        out = _doctor(daemon_env(root), d.socket, "--json")
        assert out.returncode == 0, out.stdout + out.stderr
        result = json.loads(out.stdout)
        assert result["backend"] == "auto -> atspi" and result["handshake_ok"] is True
        assert result["simulated"] is False
        assert [(c["name"], c["status"]) for c in result["checks"]] == [
            ("display", "ok"),
            ("xtest", "ok"),
            ("screenshot", "ok"),
            ("accessibility_bus", "ok"),
        ]
        human = _doctor(daemon_env(root), d.socket)
        assert human.returncode == 0, human.stdout
        assert "desktop checks (read-only: no input was sent):" in human.stdout
        assert "FAILED" not in human.stdout
        assert _pointer(desk.display) == (17, 23)
        assert d.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_doctor_without_display_names_the_failure_and_its_fix(desk: Desktop) -> None:
    """The issue's ``env -u DISPLAY deskhandctl doctor``: no longer healthy. auto refuses with
    desktop_unreachable and the display check says what to do."""
    root = short_tmpdir()
    try:
        env = {"DBUS_SESSION_BUS_ADDRESS": desk.env["DBUS_SESSION_BUS_ADDRESS"]}
        d = spawn_daemon(root, extra_env=env)
        started = time.monotonic()
        out = _doctor(daemon_env(root), d.socket, "--json")
        assert out.returncode == 1, out.stdout + out.stderr
        result = json.loads(out.stdout)
        assert result["handshake_ok"] is False and result["argv"] == []
        assert result["error"]["code"] == "desktop_unreachable"
        assert "DISPLAY is not set" in result["error"]["message"]
        checks = {c["name"]: c for c in result["checks"]}
        assert checks["display"]["status"] == "failed" and "DISPLAY=:0" in checks["display"]["fix"]
        assert checks["xtest"]["status"] == checks["screenshot"]["status"] == "not_checked"
        assert checks["accessibility_bus"]["status"] == "ok"
        human = _doctor(daemon_env(root), d.socket)
        assert human.returncode == 1
        lines = human.stdout.splitlines()
        at = next(i for i, line in enumerate(lines) if "FAILED      display" in line)
        assert "DISPLAY is not set" in lines[at] and "fix: " in lines[at + 1]
        assert "handshake:  FAILED: desktop_unreachable:" in human.stdout
        assert time.monotonic() - started < 30
        assert d.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_depth_16_desktop_doctor_names_the_screenshot_fix() -> None:
    """A whole desktop whose screen cannot be read: the backend starts, doctor is not healthy
    and says how to fix screenshots (not a silent success)."""
    require_binaries()
    desk = start_desktop(size="640x480x16")
    root = short_tmpdir()
    try:
        env = {k: desk.env[k] for k in ("DISPLAY", "DBUS_SESSION_BUS_ADDRESS")}
        d = spawn_daemon(root, extra_env={"DESKHAND_BACKEND": "atspi", **env})
        out = _doctor(daemon_env(root), d.socket, "--json")
        assert out.returncode == 1, out.stdout + out.stderr
        result = json.loads(out.stdout)
        assert result["handshake_ok"] is True and result["backend"] == "atspi"
        shot = next(c for c in result["checks"] if c["name"] == "screenshot")
        assert shot["status"] == "failed" and "24-bit" in shot["fix"]
        assert d.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
        desk.close()
