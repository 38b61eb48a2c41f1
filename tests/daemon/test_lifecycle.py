"""Daemon life: readiness, socket activation, graceful stops."""

from __future__ import annotations

import shutil
import signal
import socket
import subprocess
import sys
import time

import pytest
from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, spawn_daemon
from dhtest.wsclient import Closed, SyncClient


def test_sigterm_closes_clients_going_away_and_exits_within_5s(daemon: DaemonProc) -> None:
    """SIGTERM: connected clients get close 1001, the process exits 0 within the 5 s grace."""
    clients = [SyncClient(daemon.socket, name=f"c{i}") for i in range(3)]
    daemon.proc.send_signal(signal.SIGTERM)
    for c in clients:
        with pytest.raises(Closed) as info:
            c.recv_obj()
        assert info.value.code == 1001
        c.sock.close()
    assert daemon.proc.wait(5) == 0
    text = daemon.log_text()
    assert '"daemon.stopping"' in text and '"SIGTERM"' in text and '"daemon.stopped"' in text


def test_sigint_also_stops_gracefully(daemon: DaemonProc) -> None:
    """SIGINT is treated like SIGTERM."""
    assert daemon.stop(signal.SIGINT, timeout=5) == 0
    assert not daemon.socket.exists()


def test_a_stop_as_soon_as_the_socket_exists_is_still_graceful() -> None:
    """From the moment the socket path exists a client may connect, and a service manager may
    stop the daemon: SIGTERM then must already be caught, so the exit is 0 and the socket is
    unlinked, never the default kill (-15) that leaves a stale socket behind."""
    for _ in range(8):
        root = short_tmpdir()
        try:
            d = spawn_daemon(root, wait=False)
            deadline = time.monotonic() + 20
            while not d.socket.exists() and d.proc.poll() is None:
                assert time.monotonic() < deadline, "the socket never appeared"
                time.sleep(0.001)
            assert d.stop(timeout=10) == 0, d.log_text()
            assert not d.socket.exists()
        finally:
            shutil.rmtree(root, ignore_errors=True)


def test_shutdown_op_replies_then_stops(daemon: DaemonProc) -> None:
    """The shutdown op gets its reply before the going-away close, then the process exits."""
    with SyncClient(daemon.socket) as c:
        assert c.call("shutdown")["result"] == {"kind": "shutting_down"}
        with pytest.raises(Closed) as info:
            c.recv_obj()
        assert info.value.code == 1001
    assert daemon.proc.wait(5) == 0


def test_ready_is_notified_only_once_listening() -> None:
    """READY=1 reaches $NOTIFY_SOCKET, and by then the socket already accepts connections."""
    root = short_tmpdir()
    notify_path = root / "notify"
    notify = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
    notify.bind(str(notify_path))
    notify.settimeout(20)
    try:
        d = spawn_daemon(root, extra_env={"NOTIFY_SOCKET": str(notify_path)}, wait=False)
        msg = notify.recv(4096).decode()
        assert "READY=1" in msg.splitlines()
        assert f"MAINPID={d.proc.pid}" in msg.splitlines()
        probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        probe.connect(str(d.socket))  # must not raise: listening before READY
        probe.close()
        d.proc.send_signal(signal.SIGTERM)
        assert notify.recv(4096).decode() == "STOPPING=1"
        assert d.proc.wait(5) == 0
    finally:
        notify.close()
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.skipif(shutil.which("systemd-socket-activate") is None, reason="needs systemd")
def test_systemd_socket_activation() -> None:
    """Under systemd-socket-activate the daemon serves the inherited socket and leaves its file."""
    root = short_tmpdir()
    path = root / "act.sock"
    env = daemon_env(root, {"TYPESAFE_API_KEY": ""})  # no key, for the restart advice below
    log = open(root / "daemon.log", "wb")  # noqa: SIM115 - closed in finally
    proc = subprocess.Popen(
        ["systemd-socket-activate", "-l", str(path), sys.executable, "-m", "deskhand_d"],
        env=env,
        stdout=log,
        stderr=log,
    )
    try:
        deadline = time.monotonic() + 10
        while not path.exists() and time.monotonic() < deadline:
            time.sleep(0.02)
        with SyncClient(path) as c:  # the first connection triggers the daemon's start
            status = c.call("status")["result"]
            # Restart advice fits a daemon systemd runs: systemctl, not deskhandctl shutdown.
            mode = c.call("mode_set", mode="jev")["result"]
        assert mode["reason"] == "missing_jev_key"
        assert "systemctl --user restart deskhand.service" in mode["detail"]
        assert "deskhandctl shutdown" not in mode["detail"]
        assert status["socket"] == str(path)
        assert status["pid"] == proc.pid  # the activator execs the daemon in place
        text = (root / "daemon.log").read_text()
        assert '"socket.inherited"' in text
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0
        assert path.exists()  # the activator owns the file; the daemon must not unlink it
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        log.close()
        shutil.rmtree(root, ignore_errors=True)


def test_listen_pid_for_another_process_is_ignored() -> None:
    """LISTEN_FDS meant for another pid is ignored: the daemon binds its own socket."""
    root = short_tmpdir()
    try:
        d = spawn_daemon(root, extra_env={"LISTEN_PID": "1", "LISTEN_FDS": "1"})
        with SyncClient(d.socket) as c:
            assert c.call("ping")["type"] == "result"
        assert d.stop() == 0
        assert '"socket.inherited"' not in d.log_text()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_version_flag_is_fast_path() -> None:
    """`deskhand-d --version` prints the version without starting anything."""
    out = subprocess.run(
        [sys.executable, "-m", "deskhand_d", "--version"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert out.returncode == 0
    assert out.stdout.strip().startswith("deskhand-d 0.")


def test_the_daemon_starts_without_the_http_client() -> None:
    """httpx (Jev's HTTP client) is imported on the first Jev run, not at start-up: a daemon
    that never runs Jev keeps its time and memory (bench: idle RSS target)."""
    code = (
        "import sys, deskhand_d.app, deskhand_d.__main__; "
        "print(sorted(m for m in ('httpx', 'httpcore') if m in sys.modules))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "[]"
