"""A client that sends and never reads costs a bounded amount, and the emergency stop gets through.

Reproduces issue #24 §1 on a real daemon: one connection says hello, shrinks its receive buffer
to 4 KiB and sends up to 200,000 pings of 1 KB without reading a reply. Before the fix every
reply waited in a task of its own: the daemon's memory grew with the input (1 GB for 200,000
pings), other clients waited seconds for an answer, and `deskhandctl --timeout 2 stop` fell
back to a signal that took effect 13 s later. Now replies wait in a bounded queue per
connection, and a client that lets it fill is closed (1008).
"""

from __future__ import annotations

import json
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.daemon import DaemonProc, daemon_env, running_daemon, unresponsive_socket
from dhtest.wsclient import SyncClient
from wsproto.events import Message

PINGS = 200_000
DATA = "x" * 1000
MiB = 1024 * 1024


def rss(pid: int, key: str = "VmRSS") -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        name, _, value = line.partition(":")
        if name == key:
            return int(value.split()[0]) * 1024
    raise AssertionError(f"no {key} for {pid}")


def flood(d: DaemonProc) -> int:
    """Send up to PINGS pings without reading; how many went out before the daemon hung up."""
    attacker = SyncClient(d.socket, name="never-reads")
    attacker.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    batch = bytearray()
    sent = 0
    try:
        for i in range(PINGS):
            frame = {"op": "ping", "id": 100 + i, "data": DATA}
            batch += attacker.ws.send(Message(data=json.dumps(frame)))
            if len(batch) >= 256 * 1024 or i == PINGS - 1:
                attacker.sock.sendall(batch)
                sent = i + 1
                batch.clear()
    except OSError:
        pass  # closed by the daemon: what the test wants to see
    time.sleep(1)  # as in the report: wait, then close
    attacker.sock.close()
    return sent


def ctl(d: DaemonProc, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", "--socket", str(d.socket), *argv],
        env={**daemon_env(d.root), "DESKHAND_NO_AUTOSTART": "1"},
        capture_output=True,
        text=True,
        timeout=60,
        stdin=subprocess.DEVNULL,
    )


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    with running_daemon({"DESKHAND_BACKEND": "sim"}) as d:
        yield d


def test_a_client_that_never_reads_is_closed_and_the_stop_gets_through(daemon: DaemonProc) -> None:
    pid = daemon.proc.pid
    before = rss(pid)
    sent = flood(daemon)
    # Closed long before the end, and the daemon's memory did not follow the input (208 MB).
    assert sent < PINGS // 10, f"the daemon read {sent} pings from a client that never read"
    assert rss(pid, "VmHWM") - before < 64 * MiB
    assert '"event": "client.not_reading"' in daemon.log_text()
    stop = ctl(daemon, "--timeout", "2", "stop")
    assert stop.returncode == 0, stop.stderr
    # Over the socket, confirmed by the daemon's reply, not by the signal fallback.
    assert "as a signal" not in stop.stderr, stop.stderr
    assert "stopped and locked" in stop.stdout, stop.stdout
    with SyncClient(daemon.socket, name="bystander") as other:
        assert other.call("ping", data="here")["result"]["data"] == "here"
        assert other.call("status")["result"]["locked_by"].startswith("deskhandctl")


def test_many_readers_that_stop_reading_leave_others_served(daemon: DaemonProc) -> None:
    """Twenty clients that stop reading at once: each is closed, and a bystander that reads
    is answered throughout."""
    quiet = []
    for n in range(20):
        c = SyncClient(daemon.socket, name=f"quiet{n}")
        c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        quiet.append(c)
    bystander = SyncClient(daemon.socket, name="bystander")
    frames = [
        b"".join(
            c.ws.send(Message(data=json.dumps({"op": "ping", "id": 10 + i, "data": DATA})))
            for i in range(2000)
        )
        for c in quiet
    ]
    closed = 0
    for c, data in zip(quiet, frames, strict=True):
        try:
            c.sock.sendall(data)
            c.sock.sendall(data)  # the second batch finds the connection closed
        except OSError:
            closed += 1
        assert bystander.call("ping", data="still")["result"]["data"] == "still"
    time.sleep(0.5)
    log = daemon.log_text()
    assert log.count('"event": "client.not_reading"') == 20, closed
    assert closed == 20
    for c in quiet:
        c.sock.close()
    assert bystander.call("ping", data="end")["result"]["data"] == "end"
    bystander.close()


FAKE_DAEMON = """\
import os, signal, sys, time
stops = sys.argv[1]  # "" never confirms; else the stops file to write as the daemon does
count = 0

def confirm(*_):
    global count
    if stops:
        count += 1
        with open(stops + ".tmp", "w") as f:
            f.write(f"{os.getpid()} {count}\\n")
        os.chmod(stops + ".tmp", 0o600)
        os.replace(stops + ".tmp", stops)

signal.signal(signal.SIGUSR1, confirm)
print("ready", flush=True)
time.sleep(120)
"""


@pytest.mark.parametrize("confirms", [False, True])
def test_a_signalled_stop_is_reported_only_once_the_daemon_confirms_it(confirms: bool) -> None:
    """The socket does not answer, so `stop` signals the process the pid file names. One that
    takes SIGUSR1 but never confirms the lock gets exit 75 and words that say so; one that
    confirms (its count grows, as deskhand-d's does) gets success."""
    with unresponsive_socket() as (path, _listener):
        _signal_stop(path, confirms)


def _signal_stop(path: str, confirms: bool) -> None:
    root = Path(path).parent
    script = root / "deskhand-d"  # a command line the pid check accepts as deskhand-d
    script.write_text(FAKE_DAEMON)
    stops = path + ".stops" if confirms else ""
    fake = subprocess.Popen([sys.executable, str(script), stops], stdout=subprocess.PIPE, text=True)
    try:
        assert fake.stdout is not None and fake.stdout.readline() == "ready\n"
        pid_file = Path(path + ".pid")
        pid_file.write_text(f"{fake.pid}\n")
        pid_file.chmod(0o600)
        for _ in range(2):  # the second stop must see a count newer than the first's
            done = subprocess.run(
                [sys.executable, "-m", "deskhandctl", "--socket", path, "--timeout", "0.5",
                 "stop"],
                capture_output=True, text=True, timeout=30, stdin=subprocess.DEVNULL,
            )  # fmt: skip
            assert "sent the emergency stop as a signal instead" in done.stderr
            assert fake.poll() is None  # it took the signal (its default would have killed it)
            if confirms:
                assert done.returncode == 0, (done.stdout, done.stderr)
                assert f"deskhand-d (pid {fake.pid}) is stopped and locked" in done.stdout
            else:
                assert done.returncode == 75, (done.stdout, done.stderr)
                assert f"sent SIGUSR1 to deskhand-d (pid {fake.pid}), but it has not confirmed" in (
                    done.stderr
                )
                assert "stopped and locked" not in done.stdout
    finally:
        fake.send_signal(signal.SIGKILL)
        fake.wait(10)
        if fake.stdout is not None:
            fake.stdout.close()
