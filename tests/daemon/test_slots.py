"""Connection slots: silent clients are dropped, and the emergency stop always gets through.

Reproduces issue #15 item 2: connections that finish the WebSocket upgrade and never say hello
used to hold all ``max_clients`` slots for ever, so ``ping`` and ``deskhandctl stop`` got 503
(and the CLI blamed a version mismatch). Real daemon, real socket, the real CLI as a process.
"""

from __future__ import annotations

import json
import os
import signal
import stat
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from dhtest.daemon import (
    DaemonProc,
    daemon_env,
    running_daemon,
    short_tmpdir,
    unresponsive_socket,
)
from dhtest.wsclient import Closed, Rejected, SyncClient


@contextmanager
def daemon_with(**daemon_keys: object) -> Iterator[DaemonProc]:
    """A daemon whose ``[daemon]`` config section has ``daemon_keys``."""
    config = short_tmpdir() / "config.toml"
    lines = ["[daemon]", *(f"{key} = {json.dumps(value)}" for key, value in daemon_keys.items())]
    config.write_text("\n".join(lines) + "\n")
    try:
        with running_daemon({"DESKHAND_CONFIG": str(config)}) as d:
            yield d
    finally:
        config.unlink()
        config.parent.rmdir()


def cli(d: DaemonProc, *argv: str) -> tuple[subprocess.CompletedProcess[str], float]:
    """``deskhandctl --socket S ARGV`` as a process; its result and wall-clock seconds."""
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "deskhandctl", "--socket", str(d.socket), *argv],
        env=daemon_env(d.root),
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )
    return done, time.monotonic() - started


def silent(d: DaemonProc, count: int) -> list[SyncClient]:
    """``count`` connections that finish the upgrade and then say nothing."""
    return [SyncClient(d.socket, hello=False) for _ in range(count)]


def close_all(clients: list[SyncClient]) -> None:
    for c in clients:
        c.sock.close()


def closed_by_daemon(c: SyncClient) -> Closed:
    with pytest.raises(Closed) as info:
        c.recv_obj()
    return info.value


@pytest.mark.slow
def test_stop_gets_through_when_every_slot_is_taken() -> None:
    """256 silent connections (all of max_clients) and `deskhandctl stop` still locks within 1 s."""
    with daemon_with(hello_timeout_s=600) as d:  # the deadline must not be what helps here
        hogs = silent(d, 256)
        try:
            done, elapsed = cli(d, "--json", "stop")
            assert done.returncode == 0, done.stderr
            reply = json.loads(done.stdout)
            assert reply["kind"] == "lock" and reply["locked"] is True
            assert reply["by"].startswith("deskhandctl (pid ")
            assert "signal" not in done.stderr  # served by the spare slot, not the fallback
            assert elapsed < 1.0, f"stop took {elapsed:.3f} s"
            print(f"stop under saturation: {elapsed * 1000:.0f} ms")
            # Every ordinary slot is still taken: another client lands in the spare, which
            # refuses anything but stop with a code of its own and closes.
            with SyncClient(d.socket) as c:
                refused = c.call("ping", data="x")
                assert refused["error"]["code"] == "too_many_clients"
                assert "all 256 client slots are taken" in refused["error"]["message"]
                assert closed_by_daemon(c).code == 1013
        finally:
            close_all(hogs)
        status, _ = cli(d, "--json", "status")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["locked_by"].startswith("deskhandctl (pid ")


@pytest.mark.slow
def test_the_503_names_too_many_connections_and_the_spare_frees_itself() -> None:
    """Slots and spare taken: 503 that says so (CLI exit 75, no word of versions); an unused
    spare is closed after its 2 s window, and the spare serves only stop."""
    with daemon_with(max_clients=2, hello_timeout_s=600) as d:
        hogs = silent(d, 2)
        spare = SyncClient(d.socket, hello=False)
        held_at = time.monotonic()
        try:
            with pytest.raises(Rejected) as info:
                SyncClient(d.socket, hello=False)
            assert info.value.status == 503
            assert b"too many connections: all 2 client slots and the spare" in info.value.body
            done, _ = cli(d, "ping")
            assert done.returncode == 75, done.stderr
            assert "too many connections" in done.stderr
            assert "version" not in done.stderr
            gone = closed_by_daemon(spare)
            waited = time.monotonic() - held_at
            assert gone.code == 1013 and "serves only the emergency stop" in gone.reason
            assert 1.5 < waited < 10, waited
            # The spare is free again; it serves hello, then refuses status and closes.
            with SyncClient(d.socket) as c:
                assert c.call("status")["error"]["code"] == "too_many_clients"
                assert closed_by_daemon(c).code == 1013
        finally:
            close_all([*hogs, spare])


def test_silent_connections_are_closed_after_the_hello_deadline() -> None:
    """No hello within hello_timeout_s: close 1008 with a reason; a client that said hello stays."""
    with daemon_with(hello_timeout_s=0.5) as d:
        talker = SyncClient(d.socket)
        started = time.monotonic()
        quiet = silent(d, 3)
        for c in quiet:
            gone = closed_by_daemon(c)
            assert gone.code == 1008
            assert gone.reason == "no hello within 0.5 s of connecting; send hello first"
        assert time.monotonic() - started < 5
        close_all(quiet)
        assert talker.call("ping", data="still here")["result"]["data"] == "still here"
        talker.close()


def test_a_connection_without_a_session_is_closed_when_idle() -> None:
    """After session_close, silence for idle_timeout_s closes the connection; with a session it
    stays open however quiet it is."""
    with daemon_with(idle_timeout_s=0.5) as d:
        keeper = SyncClient(d.socket)
        closer = SyncClient(d.socket)
        assert closer.call("session_close")["type"] == "result"
        started = time.monotonic()
        gone = closed_by_daemon(closer)
        assert gone.code == 1000
        assert gone.reason == "idle for 0.5 s without a session; reconnect to start one"
        assert 0.4 < time.monotonic() - started < 5
        closer.sock.close()
        time.sleep(1.0)
        assert keeper.call("ping", data="kept")["result"]["data"] == "kept"
        keeper.close()


def test_sigusr1_is_the_emergency_stop_not_a_shutdown(daemon: DaemonProc) -> None:
    """The pid file is ours and private; SIGUSR1 locks the daemon and leaves it running."""
    with SyncClient(daemon.socket) as c:  # served: the pid file is written before serving
        assert c.call("status")["result"]["locked_by"] == ""
    pid_file = Path(f"{daemon.socket}.pid")
    st = os.stat(pid_file)
    assert stat.S_IMODE(st.st_mode) == 0o600 and st.st_uid == os.getuid()
    assert pid_file.read_text() == f"{daemon.proc.pid}\n"
    daemon.proc.send_signal(signal.SIGUSR1)
    deadline = time.monotonic() + 10
    with SyncClient(daemon.socket) as c:
        while (locked := c.call("status")["result"]["locked_by"]) == "":
            assert time.monotonic() < deadline, "SIGUSR1 did not lock the daemon"
            time.sleep(0.05)
        assert locked == "signal SIGUSR1"
        assert c.call("get_app_state", app="Calculator")["error"]["code"] == "locked"
    assert daemon.proc.poll() is None
    assert daemon.stop() == 0
    assert not pid_file.exists()


@pytest.mark.slow
def test_stop_falls_back_to_a_signal_when_the_socket_refuses() -> None:
    """Slots and spare taken (503): `deskhandctl stop` signals the verified daemon instead."""
    with daemon_with(max_clients=2, hello_timeout_s=600) as d:
        hogs = silent(d, 3)  # two ordinary slots, then the spare (free again after 2 s)
        try:
            done, elapsed = cli(d, "stop")
            assert done.returncode == 0, done.stderr
            assert "too many connections" in done.stderr
            assert "sent the emergency stop as a signal instead" in done.stderr
            assert done.stdout.startswith(f"deskhand-d (pid {d.proc.pid}) is stopped and locked")
            assert elapsed < 1.0, f"stop took {elapsed:.3f} s"
            print(f"stop by signal fallback: {elapsed * 1000:.0f} ms")
        finally:
            close_all(hogs)
        status, _ = cli(d, "--json", "status")
        assert status.returncode == 0, status.stderr
        assert json.loads(status.stdout)["locked_by"] == "signal SIGUSR1"
        assert d.proc.poll() is None


def cli_at(path: str, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", "--socket", path, "--timeout", "0.5", *argv],
        capture_output=True,
        text=True,
        timeout=30,
        stdin=subprocess.DEVNULL,
    )


def test_the_fallback_signals_only_a_verified_deskhand_process() -> None:
    """A pid file naming a process of ours that is not deskhand-d, or a pid file others could
    have written: nothing is signalled, and stop fails with the reason (exit 75)."""
    bystander = subprocess.Popen(["sleep", "60"])
    try:
        with unresponsive_socket() as (path, _listener):
            pid_file = Path(path + ".pid")
            pid_file.write_text(f"{bystander.pid}\n")
            pid_file.chmod(0o600)
            done = cli_at(path, "stop")
            assert done.returncode == 75, done.stderr
            assert f"process {bystander.pid} is not deskhand-d" in done.stderr
            pid_file.chmod(0o622)
            done = cli_at(path, "stop")
            assert done.returncode == 75, done.stderr
            assert "is writable by others" in done.stderr
            pid_file.unlink()
            done = cli_at(path, "stop")
            assert done.returncode == 75 and "there is no pid file" in done.stderr
            # Other commands never fall back to a signal.
            pid_file.write_text(f"{bystander.pid}\n")
            pid_file.chmod(0o600)
            done = cli_at(path, "status")
            assert done.returncode == 75 and "signal" not in done.stderr
        assert bystander.poll() is None, "the bystander was signalled"
    finally:
        bystander.kill()
        bystander.wait()
