"""``deskhandctl service`` and autostart where no service manager answers.

Each test runs the real ``python -m deskhandctl`` as a subprocess with HOME and every XDG_*
directory in a fresh short temporary tree and no session bus address, so ``systemctl --user``
cannot reach any user manager, whatever runs on the machine: the situation of a container or
an ssh session outside logind. Two variants: the real ``systemctl`` on PATH, and no
``systemctl`` at all. The daemon that ``status`` starts is stopped with ``deskhandctl
shutdown``; the fixture kills it should a test fail before that.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from deskhandctl.setup import service
from deskhandctl.setup import units as _units
from dhtest.daemon import daemon_env, short_tmpdir

from deskhand_d import paths

pytestmark = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="systemd user units are a Linux matter"
)


def cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def gone(pid: int) -> bool:
    """True once the process has exited (a zombie counts: our init may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


class Home:
    """A private HOME/XDG tree, its environment, and the daemons started in it."""

    def __init__(self, root: Path, env: dict[str, str]) -> None:
        self.root = root
        self.env = env
        self.pids: list[int] = []
        self.unit_dir = root / "config" / "systemd" / "user"

    def snapshot(self) -> set[str]:
        return {str(p.relative_to(self.root)) for p in self.root.rglob("*")}

    def install_units(self) -> list[Path]:
        """The files a successful `service install` in a desktop session leaves behind."""
        self.unit_dir.mkdir(parents=True)
        service_file = self.unit_dir / paths.SYSTEMD_SERVICE
        socket_file = self.unit_dir / paths.SYSTEMD_SOCKET
        service_file.write_text(_units.render_service(service.daemon_command()))
        socket_file.write_text(_units.render_socket())
        wants = self.unit_dir / "sockets.target.wants" / paths.SYSTEMD_SOCKET
        wants.parent.mkdir()
        wants.symlink_to(socket_file)  # what `systemctl --user enable` makes
        return [service_file, socket_file, wants]

    def status_then_shutdown(self) -> subprocess.CompletedProcess[str]:
        """`status` (which must autostart the daemon), then `shutdown` and wait for the exit."""
        done = cli("--json", "status", env=self.env)
        assert done.returncode == 0, done.stderr
        pid = json.loads(done.stdout)["pid"]
        self.pids.append(pid)
        assert f"deskhand-d was not running; started it (pid {pid}" in done.stderr
        stop = cli("shutdown", env=self.env)
        assert stop.returncode == 0, stop.stderr
        deadline = time.monotonic() + 10
        while not gone(pid):
            assert time.monotonic() < deadline, f"deskhand-d (pid {pid}) did not stop"
            time.sleep(0.02)
        return done


@pytest.fixture(params=["systemctl", "no-systemctl"])
def home(request: pytest.FixtureRequest) -> Iterator[Home]:
    root = short_tmpdir()
    env = daemon_env(root)
    env.pop("DBUS_SESSION_BUS_ADDRESS", None)  # systemctl --user would try that bus too
    if request.param == "systemctl":
        if shutil.which("systemctl", path=env.get("PATH")) is None:
            pytest.skip("systemctl is not installed here (the other variant covers that case)")
    else:
        (root / "bin").mkdir()
        env["PATH"] = str(root / "bin")  # the CLI runs as sys.executable; nothing else needed
    box = Home(root, env)
    try:
        yield box
    finally:
        for pid in box.pids:
            if not gone(pid):
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(root, ignore_errors=True)


def reason_for(home: Home) -> str:
    if home.env["PATH"] == str(home.root / "bin"):
        return "(there is no systemctl on PATH)"
    return "('systemctl --user show-environment' failed: "


@pytest.mark.slow
def test_install_writes_nothing_exits_69_and_status_still_starts_the_daemon(
    home: Home,
) -> None:
    """install: exit 69, no file, a message naming on-demand start; then status works."""
    before = home.snapshot()
    done = cli("service", "install", env=home.env)
    assert done.returncode == 69, done.stderr
    assert done.stdout == ""
    err = done.stderr
    assert (
        "deskhandctl service: nothing was installed: the service manager cannot be reached" in err
    )
    assert reason_for(home) in err
    assert "none were written" in err
    assert "deskhandctl starts deskhand-d on demand (try 'deskhandctl status')" in err
    assert "enable --now" not in err and "in place" not in err
    assert home.snapshot() == before
    assert not home.unit_dir.exists()

    started = home.status_then_shutdown()
    assert "installed as a service" not in started.stderr  # nothing installed, nothing to say


@pytest.mark.slow
def test_status_starts_the_daemon_when_units_exist_but_no_manager_runs_them(
    home: Home,
) -> None:
    """Units from a desktop-session install: status starts the daemon itself and says why."""
    units = home.install_units()
    done = home.status_then_shutdown()
    assert (
        f"deskhand-d is installed as a service ({units[1]}), but no service manager answers "
        f"here {reason_for(home)}" in done.stderr
    )
    assert "starting it directly instead" in done.stderr
    assert "systemctl --user start" not in done.stderr
    assert all(os.path.lexists(p) for p in units)  # autostart leaves the installation alone


@pytest.mark.slow
def test_uninstall_removes_the_units_and_says_the_manager_was_not_told(home: Home) -> None:
    """uninstall: exit 0, every file gone, and no line claiming the files are still there."""
    units = home.install_units()
    done = cli("service", "uninstall", env=home.env)
    assert done.returncode == 0, done.stderr
    assert [line for line in done.stdout.splitlines() if line.startswith("removed ")] == [
        f"removed {p}" for p in units
    ]
    assert "Deskhand's systemd units are removed" in done.stdout
    assert reason_for(home) in done.stderr and "so it was not told" in done.stderr
    assert "systemctl --user stop deskhand.socket deskhand.service" in done.stderr
    assert "in place" not in done.stdout + done.stderr
    assert not any(os.path.lexists(p) for p in units)
    assert list(home.unit_dir.rglob("deskhand*")) == []

    again = cli("service", "uninstall", env=home.env)
    assert again.returncode == 0, again.stderr
    assert again.stdout == "Deskhand's service is not installed here; nothing to remove.\n"
