"""``python -m deskhandctl`` as a subprocess against the real daemon (``python -m deskhand_d``)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import stat
import subprocess
import sys
import textwrap
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, wait_connectable

NOBODY = 65534
needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root")


def cli(*argv: str, env: dict[str, str], timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=timeout,
        stdin=subprocess.DEVNULL,
    )


def gone(pid: int) -> bool:
    """True once the process has exited (a zombie counts: our init may never reap it)."""
    try:
        with open(f"/proc/{pid}/stat") as handle:
            return handle.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid: int, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not gone(pid):
        assert time.monotonic() < deadline, f"pid {pid} still running"
        time.sleep(0.02)


@pytest.fixture
def fresh_root() -> Iterator[Path]:
    """An empty short directory tree with no daemon; kills any daemon a test autostarted."""
    root = short_tmpdir()
    pids: list[int] = []
    yield root
    for line in (root / "pids").read_text().split() if (root / "pids").exists() else []:
        pids.append(int(line))
    for pid in pids:
        if not gone(pid):
            os.kill(pid, signal.SIGKILL)
    shutil.rmtree(root, ignore_errors=True)


def remember(root: Path, pid: int) -> None:
    with open(root / "pids", "a") as handle:
        handle.write(f"{pid}\n")


@pytest.mark.slow
def test_status_human_and_json(daemon: DaemonProc) -> None:
    """status prints a summary, and with --json the daemon's status object."""
    env = daemon_env(daemon.root)
    human = cli("--socket", str(daemon.socket), "status", env=env)
    assert human.returncode == 0, human.stderr
    assert human.stdout.startswith(f"deskhand-d 0.1.0 is running (pid {daemon.proc.pid}, up ")
    assert f"socket    {daemon.socket}" in human.stdout
    machine = cli("--socket", str(daemon.socket), "--json", "status", env=env)
    assert machine.returncode == 0, machine.stderr
    result = json.loads(machine.stdout)
    assert result["kind"] == "status"
    assert result["pid"] == daemon.proc.pid
    assert result["socket"] == str(daemon.socket)
    assert result["protocol"] == 1
    assert "deskhand.v1.json" in result["subprotocols"]
    assert [c["name"] for c in result["clients"]] == ["deskhandctl"]
    assert result["clients"][0]["kind"] == "cli"
    assert result["ops"]["hello"]["count"] >= 2  # this run's hello and the previous one's


@pytest.mark.slow
def test_ping_finds_the_default_socket(daemon: DaemonProc) -> None:
    """Without --socket the CLI finds the daemon at the per-user default path."""
    env = daemon_env(daemon.root)  # XDG_RUNTIME_DIR points at the daemon's runtime dir
    done = cli("ping", env=env)
    assert done.returncode == 0, done.stderr
    assert done.stdout.startswith(f"pong from deskhand-d 0.1.0 (pid {daemon.proc.pid}) in ")
    machine = cli("--json", "ping", env=env)
    assert json.loads(machine.stdout) == {"kind": "pong", "data": ""}


@pytest.mark.slow
def test_shutdown_stops_the_daemon(daemon: DaemonProc) -> None:
    """shutdown is acknowledged and the daemon process then exits cleanly."""
    done = cli("--socket", str(daemon.socket), "shutdown", env=daemon_env(daemon.root))
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"deskhand-d (pid {daemon.proc.pid}) is shutting down\n"
    assert daemon.proc.wait(10) == 0


@pytest.mark.slow
def test_not_running_without_autostart_exits_69(fresh_root: Path) -> None:
    """With --no-autostart and no daemon, exit 69 and explain how to start one."""
    env = daemon_env(fresh_root)
    done = cli(
        "--no-autostart", "--socket", str(fresh_root / "d" / "deskhand.sock"), "status", env=env
    )
    assert done.returncode == 69
    assert "deskhand-d is not running" in done.stderr
    assert done.stdout == ""


@pytest.mark.slow
def test_autostart_starts_a_daemon_that_shutdown_stops(fresh_root: Path) -> None:
    """No daemon: status starts one in its own session, logging privately; shutdown ends it."""
    env = daemon_env(fresh_root)
    sock = fresh_root / "d" / "deskhand.sock"
    done = cli("--json", "--socket", str(sock), "status", env=env)
    assert done.returncode == 0, done.stderr
    status = json.loads(done.stdout)
    pid = status["pid"]
    remember(fresh_root, pid)
    assert status["socket"] == str(sock)
    assert f"started it (pid {pid}" in done.stderr  # said on stderr, so --json stays clean
    assert os.getsid(pid) == pid  # a session leader: detached from our terminal and signals
    log = fresh_root / "state" / "deskhand" / "daemon.log"
    assert stat.S_IMODE(os.stat(log).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(log.parent).st_mode) == 0o700
    assert "deskhandctl starting deskhand-d" in log.read_text()
    assert os.readlink(f"/proc/{pid}/cwd") == "/"
    again = cli("--json", "--socket", str(sock), "status", env=env)
    assert json.loads(again.stdout)["pid"] == pid  # the same daemon, not a second one
    stop = cli("--socket", str(sock), "shutdown", env=env)
    assert stop.returncode == 0, stop.stderr
    wait_gone(pid)
    after = cli("--no-autostart", "--socket", str(sock), "ping", env=env)
    assert after.returncode == 69


@pytest.mark.slow
def test_two_clients_autostarting_at_once_share_one_daemon(fresh_root: Path) -> None:
    """Two simultaneous autostarts end with one daemon that answers both."""
    env = daemon_env(fresh_root)
    sock = str(fresh_root / "d" / "deskhand.sock")
    argv = [sys.executable, "-m", "deskhandctl", "--json", "--socket", sock, "status"]
    procs = [subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, text=True) for _ in range(2)]
    outputs = [p.communicate(timeout=30)[0] for p in procs]
    assert [p.returncode for p in procs] == [0, 0]
    pids = {json.loads(out)["pid"] for out in outputs}
    for pid in pids:
        remember(fresh_root, pid)
    assert len(pids) == 1
    assert cli("--socket", sock, "shutdown", env=env).returncode == 0
    wait_gone(pids.pop())


@pytest.mark.slow
def test_daemon_that_cannot_start_is_reported(fresh_root: Path) -> None:
    """If the autostarted daemon exits at once, say so with its status and log lines."""
    env = daemon_env(fresh_root)
    sockdir = fresh_root / "d"
    sockdir.mkdir(mode=0o755)
    os.chmod(sockdir, 0o755)  # the daemon refuses a socket directory others can read
    done = cli("--socket", str(sockdir / "deskhand.sock"), "status", env=env)
    assert done.returncode == 69
    assert "exited with status 69" in done.stderr
    assert str(sockdir) in done.stderr  # the daemon's own complaint, from the log


_AS_NOBODY = textwrap.dedent(
    """
    import os, sys
    import _sha1, json, time
    import deskhand_d.paths, deskhandctl.__main__, deskhandctl.wire.connect, deskhandctl.cli.render
    os.setgroups([]); os.setgid(%(uid)d); os.setuid(%(uid)d)
    sys.exit(deskhandctl.__main__.main(sys.argv[1:]))
    """
) % {"uid": NOBODY}


def cli_as_nobody(*argv: str) -> subprocess.CompletedProcess[str]:
    # Modules are imported while still root: our interpreter lives where nobody cannot read.
    return subprocess.run(
        [sys.executable, "-c", _AS_NOBODY, *argv], capture_output=True, text=True, timeout=30
    )


@needs_root
@pytest.mark.slow
def test_other_user_blocked_by_the_private_directory_exits_77(daemon: DaemonProc) -> None:
    """Another uid that cannot even look into the 0700 runtime directory gets EACCES from
    connect: exit 77, no autostart."""
    os.chmod(daemon.root, 0o711)  # run/ stays 0700: nobody cannot see the socket directory
    done = cli_as_nobody("--socket", str(daemon.socket), "status")
    assert done.returncode == 77, done.stderr
    assert "permission denied" in done.stderr


@needs_root
@pytest.mark.slow
def test_other_user_refuses_the_daemon_of_another_user_exits_77(daemon: DaemonProc) -> None:
    """With loose modes another uid's CLI sees that the socket directory is not its own and
    refuses before connecting: exit 77, and the daemon never hears from it. (The daemon's own
    peer check, which would hang up on it, is tested in tests/daemon/test_security.py.)"""
    for path in (daemon.root, daemon.root / "run", daemon.socket.parent):
        os.chmod(path, 0o711)
    os.chmod(daemon.socket, 0o666)
    done = cli_as_nobody("--socket", str(daemon.socket), "status")
    assert done.returncode == 77, done.stderr
    assert "socket_dir_foreign_owner" in done.stderr and str(daemon.socket.parent) in done.stderr
    assert "peer.refused" not in daemon.log_text()  # it did not even connect
    wait_connectable(daemon.socket)  # and the daemon carries on
