"""A burst of clients connecting at once: each waits in the listen backlog (the system's
largest) rather than being turned away, and the CLI tries a full backlog again briefly."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import threading
import time

import pytest
from deskhandctl.wire import connect
from dhtest.daemon import DaemonProc, short_tmpdir


def test_three_hundred_clients_connecting_at_once_all_get_in(daemon: DaemonProc) -> None:
    """300 connects while the daemon is busy (stopped for the burst, so it accepts none of
    them meanwhile): with a backlog of 128 the kernel refused the surplus (EAGAIN); now all
    wait, and the daemon takes them once it runs again."""
    held: list[socket.socket] = []
    refused = 0
    os.kill(daemon.proc.pid, signal.SIGSTOP)
    try:
        for _ in range(300):
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.settimeout(5)  # as the CLI connects: a full backlog is EAGAIN at once
            try:
                s.connect(os.fspath(daemon.socket))
            except BlockingIOError:
                refused += 1
                s.close()
                continue
            held.append(s)
        assert refused == 0
    finally:
        os.kill(daemon.proc.pid, signal.SIGCONT)
        for s in held:
            s.close()
    # and it still serves
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(10)
    probe.connect(os.fspath(daemon.socket))
    probe.close()
    assert daemon.proc.poll() is None


@pytest.fixture
def full_listener() -> tuple[socket.socket, str]:
    """A Unix socket listening with a backlog of 1 that nobody accepts on, filled up."""
    root = short_tmpdir()
    path = os.fspath(root / "full.sock")
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(path)
    server.listen(0)
    fillers: list[socket.socket] = []
    while True:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.connect(path)
        except BlockingIOError:
            s.close()
            break
        fillers.append(s)
    yield server, path
    for s in fillers:
        s.close()
    server.close()
    shutil.rmtree(root, ignore_errors=True)


def test_the_cli_waits_for_room_in_a_full_backlog(full_listener: tuple[socket.socket, str]) -> None:
    """The backlog frees up 0.2 s later (the daemon accepts): the CLI's connect gets in."""
    server, path = full_listener

    def accept_later() -> None:
        time.sleep(0.2)
        conn, _ = server.accept()
        conn.close()

    helper = threading.Thread(target=accept_later)
    helper.start()
    sock = connect._connect_when_room(path, timeout=5.0)
    sock.close()
    helper.join()


def test_the_cli_gives_up_on_a_backlog_that_stays_full(
    full_listener: tuple[socket.socket, str],
) -> None:
    _, path = full_listener
    with pytest.raises(BlockingIOError):
        connect._connect_when_room(path, timeout=5.0)
