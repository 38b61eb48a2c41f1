"""The words of a Jev refusal: what to do without a key, for whoever runs the daemon, and the
cause of a failed exchange, without a secret. Pure; the daemon and the real CLI are exercised in
tests/cli/test_cli_jev_words.py.
"""

from __future__ import annotations

import errno
import socket

import httpx
import pytest

from deskhand_d.jev.access import missing_key_help
from deskhand_d.jev.client import network_cause
from deskhand_d.nextsteps import Words

PI = Words("pi")


def test_network_cause_finds_the_system_reason_inside_groups() -> None:
    refused = ConnectionRefusedError(errno.ECONNREFUSED, "Error connecting to ('127.0.0.1', 9)")
    try:
        try:
            try:
                raise ExceptionGroup("all attempts failed", [refused])
            except ExceptionGroup as group:
                raise OSError("all attempts to connect failed") from group
        except OSError as exc:
            raise httpx.ConnectError("all attempts to connect failed") from exc
    except httpx.ConnectError as top:
        assert network_cause(top) == "connection refused"
    try:
        raise httpx.ConnectError("x") from socket.gaierror(-2, "Name or service not known")
    except httpx.ConnectError as top:
        assert (
            network_cause(top) == "the host name could not be resolved (Name or service not known)"
        )
    bare = httpx.RemoteProtocolError("server sent tsk-secret-1 back")
    assert network_cause(bare, "tsk-secret-1") == "RemoteProtocolError: server sent [REDACTED] back"


@pytest.mark.parametrize(
    ("managed_by", "restart", "not_said"),
    [
        ("", "`deskhandctl shutdown`", "systemctl"),
        ("systemd", "`systemctl --user restart deskhand.service`", "deskhandctl shutdown"),
        ("launchd", "`launchctl bootstrap gui/$UID", "deskhandctl shutdown"),
    ],
)
def test_the_missing_key_advice_fits_whoever_runs_the_daemon(
    managed_by: str, restart: str, not_said: str
) -> None:
    text = missing_key_help("", PI.set_mode("jev"), managed_by)
    assert "TYPESAFE_API_KEY" in text and restart in text and not_said not in text
    assert text.endswith("then switch with /cua-mode jev")
