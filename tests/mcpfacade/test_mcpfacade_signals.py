"""How ``deskhandctl mcp`` ends when its host stops it, and how it starts when it cannot work.

Hosts stop their MCP servers with signals: Claude Code sends SIGINT, then SIGTERM 100 ms later
and SIGKILL soon after; Codex sends SIGTERM to the server's process group, then closes stdin
(both measured with Claude Code 2.1.332 and Codex 0.171.0). The facade must end on the first
signal, cleanly (exit 0, no interpreter abort), with a call in flight cancelled at the daemon
and its delivery recorded honestly. And a facade that can reach no daemon and may start none
refuses ``initialize``, so the host shows it as failed rather than connected.
"""

from __future__ import annotations

import signal
import subprocess
import sys
import time
from collections.abc import Callable

import pytest
from dhtest.clidaemon import CliDaemon
from dhtest.daemon import short_tmpdir
from dhtest.mcpsaid import said_state_id
from facade_rig import RawHost

pytestmark = pytest.mark.slow


def ended(host: RawHost) -> tuple[int, str]:
    """The exit status once the process ended by itself (a generous bound: a hang fails), and
    what it wrote to stderr, read up to its last line ("stopped by ...")."""
    try:
        code = host.proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        pytest.fail("deskhandctl mcp did not end after the stop signal")
    deadline = time.monotonic() + 5  # the reader thread drains what the pipe still holds
    while "stopped by" not in "".join(host.stderr) and time.monotonic() < deadline:
        time.sleep(0.01)
    return code, "".join(host.stderr)


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_stop_signal_ends_an_idle_server_cleanly(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost], signum: int
) -> None:
    desk = desks(TYPESAFE_API_KEY="")
    host = hosts(desk)
    host.initialize()
    host.request(1, "ping")
    assert host.reply(1)["result"] == {}
    host.proc.send_signal(signum)
    code, log = ended(host)
    assert code == 0, log
    assert "Fatal Python error" not in log and "Traceback" not in log, log
    assert f"stopped by {signal.Signals(signum).name}" in log


def test_a_stop_signal_cancels_the_call_in_flight_with_its_delivery(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    """SIGINT while a click is at the backend: the daemon is told to cancel, the log says the
    outcome is unknown (it had reached the app), the audit says the same, and the process
    ends cleanly; SIGTERM right behind it (as Claude Code sends) changes nothing."""
    desk = desks({"preapproved": ["*"], "delay_ms": {"click": 3000}}, TYPESAFE_API_KEY="")
    host = hosts(desk)
    host.initialize()
    host.call(1, "get_app_state", {"app": "Calculator"})
    state = said_state_id(host.reply(1)["result"])
    host.call(2, "click", {"app": "Calculator", "state_id": state, "element_index": 17})
    deadline = time.monotonic() + 20
    while desk.received("click") == 0:  # the click has reached the backend
        assert time.monotonic() < deadline
        time.sleep(0.05)
    host.proc.send_signal(signal.SIGINT)
    time.sleep(0.1)
    if host.proc.poll() is None:
        host.proc.send_signal(signal.SIGTERM)
    code, log = ended(host)
    assert code == 0, log
    assert "Fatal Python error" not in log and "Traceback" not in log, log
    assert "click (request 2) was cancelled; ended as:" in log, log
    assert "(delivery unknown)" in log, log
    audit = [r for r in desk.audit() if r.get("tool") == "click"]
    assert audit and audit[-1].get("delivery") in ("unknown", "dispatched"), audit


def test_with_no_daemon_and_no_autostart_initialize_fails_and_says_why() -> None:
    """What `claude mcp list` shows as "Failed to connect", with the reason and the fix."""
    missing = short_tmpdir() / "no-daemon.sock"
    proc = subprocess.run(
        [sys.executable, "-m", "deskhandctl", "--no-autostart", "--socket", str(missing), "mcp"],
        input=(
            b'{"jsonrpc":"2.0","id":1,"method":"initialize","params":{"protocolVersion":'
            b'"2025-06-18","capabilities":{},"clientInfo":{"name":"h","version":"1"}}}\n'
        ),
        capture_output=True,
        timeout=30,
    )
    assert proc.returncode == 0
    reply = proc.stdout.decode()
    assert '"code":-32000' in reply and "not reachable at " + str(missing) in reply
    assert "autostart is off" in reply and "systemctl --user start deskhand.socket" in reply


def test_with_a_daemon_and_no_autostart_initialize_succeeds(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    desk = desks(TYPESAFE_API_KEY="")
    assert desk.env.get("DESKHAND_NO_AUTOSTART") == "1"  # as the hosts' tests run it
    host = hosts(desk)
    assert host.initialize()["serverInfo"]["name"] == "deskhand"
