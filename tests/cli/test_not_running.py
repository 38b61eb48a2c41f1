"""No daemon on the socket: exit 69 and the advice, and when autostart may or may not spawn."""

from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest
from deskhandctl.__main__ import main
from deskhandctl.wire.autostart import service_manager_hint
from deskhandctl.wire.connect import autostart_allowed, resolve_socket

from deskhand_d import paths


@pytest.fixture
def home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty HOME and XDG tree, so no real unit files or state leak into the test."""
    for name in ("XDG_CONFIG_HOME", "XDG_STATE_HOME", "XDG_RUNTIME_DIR", "DESKHAND_SOCKET"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.delenv("DESKHAND_NO_AUTOSTART", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path))
    return tmp_path


def test_missing_socket_with_no_autostart_exits_69(
    home: Path, short_dir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """Nothing at the path and --no-autostart: 69, with how to start the daemon."""
    assert main(["--no-autostart", "--socket", f"{short_dir}/none.sock", "status"]) == 69
    err = capsys.readouterr().err
    assert "deskhand-d is not running" in err and f"{short_dir}/none.sock" in err
    assert "systemctl --user start deskhand.socket" in err and "'deskhand-d'" in err
    assert not (home / ".local" / "state" / "deskhand").exists()  # nothing was started


def test_stale_socket_file_counts_as_not_running(
    home: Path, short_dir: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """A socket file left behind by a dead daemon (ECONNREFUSED) is 'not running'."""
    path = f"{short_dir}/stale.sock"
    leftover = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    leftover.bind(path)
    leftover.close()
    assert os.path.exists(path)
    assert main(["--no-autostart", "--socket", path, "ping"]) == 69
    assert "not running" in capsys.readouterr().err


def test_env_turns_autostart_off(
    home: Path, short_dir: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """DESKHAND_NO_AUTOSTART=1 has the effect of --no-autostart."""
    monkeypatch.setenv("DESKHAND_NO_AUTOSTART", "1")
    assert main(["--socket", f"{short_dir}/none.sock", "status"]) == 69
    assert "not running" in capsys.readouterr().err
    assert not (home / ".local" / "state" / "deskhand" / "daemon.log").exists()


@pytest.mark.parametrize(
    ("flag", "env", "allowed"),
    [
        (False, {}, True),
        (True, {}, False),
        (False, {"DESKHAND_NO_AUTOSTART": "1"}, False),
        (False, {"DESKHAND_NO_AUTOSTART": "yes"}, False),
        (False, {"DESKHAND_NO_AUTOSTART": "0"}, True),
        (False, {"DESKHAND_NO_AUTOSTART": ""}, True),
    ],
)
def test_autostart_switches(flag: bool, env: dict[str, str], allowed: bool) -> None:
    """The flag always wins; the variable turns autostart off unless it is empty or 0/false."""
    assert autostart_allowed(flag, env) is allowed


def test_shutdown_never_autostarts(home: Path, short_dir: str) -> None:
    """shutdown with no daemon reports 69 instead of starting one just to stop it."""
    assert main(["--socket", f"{short_dir}/none.sock", "shutdown"]) == 69
    assert not (home / ".local" / "state" / "deskhand" / "daemon.log").exists()


def answering(home: Path, monkeypatch: pytest.MonkeyPatch, tool: str, status: int) -> None:
    """Put a ``tool`` that exits ``status`` alone on PATH: a service manager that answers (0)
    or one that does not."""
    bin_dir = home / "bin"
    bin_dir.mkdir(exist_ok=True)
    exe = bin_dir / tool
    exe.write_text(f"#!/bin/sh\nexit {status}\n")
    exe.chmod(0o755)
    monkeypatch.setenv("PATH", str(bin_dir))


@pytest.mark.parametrize("unit", [paths.SYSTEMD_SOCKET, paths.SYSTEMD_SERVICE])
def test_systemd_managed_daemon_is_not_spawned(
    home: Path,
    short_dir: str,
    unit: str,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """With a systemd user unit installed and systemd answering, autostart defers to systemd."""
    answering(home, monkeypatch, "systemctl", 0)
    unit_dir = home / ".config" / "systemd" / "user"
    unit_dir.mkdir(parents=True)
    (unit_dir / unit).write_text("[Unit]\n")
    assert main(["--socket", f"{short_dir}/none.sock", "status"]) == 69
    err = capsys.readouterr().err
    assert f"systemctl --user start {unit}" in err
    assert not (home / ".local" / "state" / "deskhand" / "daemon.log").exists()


@pytest.mark.parametrize("status", [1, None], ids=["manager-fails", "no-systemctl"])
def test_units_without_a_manager_give_no_hint(
    home: Path, monkeypatch: pytest.MonkeyPatch, status: int | None
) -> None:
    """Installed units that no systemd user instance reads do not stop autostart."""
    if status is None:
        monkeypatch.setenv("PATH", str(home / "empty"))
    else:
        answering(home, monkeypatch, "systemctl", status)
    unit_dir = home / ".config" / "systemd" / "user"
    unit_dir.mkdir(parents=True)
    (unit_dir / paths.SYSTEMD_SOCKET).write_text("[Unit]\n")
    assert service_manager_hint() is None


def test_launchd_hint_on_macos(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """On macOS an installed LaunchAgent plist means launchctl, not a spawn."""
    monkeypatch.setattr(paths, "is_macos", lambda: True)
    answering(home, monkeypatch, "launchctl", 0)
    assert service_manager_hint() is None
    agents = home / "Library" / "LaunchAgents"
    agents.mkdir(parents=True)
    (agents / f"{paths.LAUNCHD_LABEL}.plist").write_text("<plist/>")
    hint = service_manager_hint()
    assert hint is not None
    assert f"launchctl kickstart gui/{os.getuid()}/{paths.LAUNCHD_LABEL}" in hint
    answering(home, monkeypatch, "launchctl", 1)  # no GUI login, e.g. over ssh
    assert service_manager_hint() is None


def test_no_units_means_no_hint(home: Path) -> None:
    """Without unit files nobody manages the daemon, so autostart may spawn it."""
    assert service_manager_hint() is None


def test_socket_resolution_order(home: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """--socket beats DESKHAND_SOCKET, which beats the platform default."""
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/4242")
    assert resolve_socket(None) == str(paths.default_socket())
    assert resolve_socket(None) == "/run/user/4242/deskhand/deskhand.sock"
    monkeypatch.setenv("DESKHAND_SOCKET", "/tmp/from-env.sock")
    assert resolve_socket(None) == "/tmp/from-env.sock"
    assert resolve_socket("/tmp/from-flag.sock") == "/tmp/from-flag.sock"


def test_overlong_socket_path_is_a_usage_error(
    home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A path beyond the AF_UNIX limit exits 2 and says to pick a shorter one."""
    assert main(["--no-autostart", "--socket", "/tmp/" + "x" * 200, "status"]) == 2
    assert "too long" in capsys.readouterr().err
