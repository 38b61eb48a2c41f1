"""Running out of file descriptors is a busy moment, not a crash.

Reproduces issue #15 item 3: with a low open-files limit, more silent connections than the
daemon has descriptors made ``accept`` fail with EMFILE, which ended the accept loop and the
daemon (socket gone). The daemon here runs with a hard limit of 128, so raising its soft limit
cannot help, and must wait the shortage out.
"""

from __future__ import annotations

import json
import resource
import shutil
import socket
import subprocess
import sys
import time
from pathlib import Path

from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, wait_connectable
from dhtest.wsclient import SyncClient

LIMIT = 128
DESKHANDCTL = [sys.executable, "-m", "deskhandctl"]
UPGRADE = (
    b"GET /v1 HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n"
    b"Sec-WebSocket-Protocol: deskhand.v1.json\r\n\r\n"
)


def _low_limit() -> None:
    resource.setrlimit(resource.RLIMIT_NOFILE, (LIMIT, LIMIT))


def spawn_limited(root: Path) -> DaemonProc:
    config = root / "config.toml"
    config.write_text("[daemon]\nhello_timeout_s = 600\n")
    env = daemon_env(root, {"DESKHAND_CONFIG": str(config)})
    log_path = root / "daemon.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deskhand_d"],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
            preexec_fn=_low_limit,
        )
    d = DaemonProc(
        proc=proc, socket=root / "run/deskhand/deskhand.sock", root=root, log_path=log_path
    )
    wait_connectable(d.socket, proc=proc)
    return d


def events(d: DaemonProc, name: str) -> list[dict[str, object]]:
    found = []
    for line in d.log_text().splitlines():
        if f'"{name}"' in line:
            entry = json.loads(line)
            if entry.get("event") == name:
                found.append(entry)
    return found


def wait_for_event(d: DaemonProc, name: str, timeout: float = 15) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while not (found := events(d, name)):
        assert d.proc.poll() is None, f"the daemon exited with {d.proc.returncode}"
        assert time.monotonic() < deadline, f"no {name} in the log:\n{d.log_text()[-3000:]}"
        time.sleep(0.05)
    return found[-1]


def test_running_out_of_descriptors_does_not_stop_the_daemon() -> None:
    """300 silent connections against 128 descriptors: the daemon logs the shortage (once, not
    per retry), keeps its socket, takes the emergency stop by signal meanwhile, and serves ping
    again once the connections are gone."""
    root = short_tmpdir()
    d = spawn_limited(root)
    hogs: list[socket.socket] = []
    try:
        limit = wait_for_event(d, "rlimit.nofile")
        assert (limit["soft"], limit["hard"]) == (LIMIT, LIMIT)
        turned_away = 0
        for i in range(300):
            if i % 20 == 0:
                time.sleep(0.05)  # let the daemon accept what it can
            s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            s.setblocking(False)
            try:
                s.connect(str(d.socket))
                s.send(UPGRADE)
            except (BlockingIOError, ConnectionRefusedError):  # backlog full, or nobody there
                turned_away += 1
                s.close()
                continue
            hogs.append(s)
        shortage = wait_for_event(d, "accept.out_of_resources")
        assert shortage["error"] == "EMFILE"
        assert len(hogs) > LIMIT, (len(hogs), turned_away)
        time.sleep(2)  # about 20 retries at 0.1 s
        assert d.proc.poll() is None, "the daemon exited"
        assert d.socket.exists()
        assert len(events(d, "accept.out_of_resources")) == 1  # rate-limited, not per retry
        # The emergency stop still gets through: the listen backlog is full (or the handshake
        # never comes), so the CLI falls back to the signal.
        stop = subprocess.run(
            [*DESKHANDCTL, "--timeout", "1", "--socket", str(d.socket), "stop"],
            env=daemon_env(root),
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert stop.returncode == 0, stop.stderr
        assert "sent the emergency stop as a signal instead" in stop.stderr
    finally:
        for s in hogs:
            s.close()
    try:
        recovered = wait_for_event(d, "accept.recovered")
        assert isinstance(recovered["failures"], int) and recovered["failures"] > 5
        print(f"{len(hogs)} connections held, {recovered['failures']} accept retries")
        with SyncClient(d.socket, timeout=15) as c:
            assert c.call("ping", data="back")["result"]["data"] == "back"
            assert c.call("status")["result"]["locked_by"] == "signal SIGUSR1"
        assert d.stop() == 0
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)
