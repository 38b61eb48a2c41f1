"""``deskhandctl`` end to end against a scripted fake daemon: output, events and exit codes.

The fake speaks the protocol through trio-websocket on a real Unix socket; ``main()`` runs in a
worker thread with the real socket code, so everything but the daemon's logic is real.
"""

from __future__ import annotations

import errno
import json
from collections.abc import Awaitable, Callable
from typing import Any

import pytest
import trio
import trio_websocket
from deskhandctl.__main__ import main
from deskhandctl.wire.session import Session
from fake_daemon import STATUS, WELCOME, WsStart, fake_daemon, run_cli, standard, with_overrides


async def test_status_human_output(ws_server: WsStart, capsys: pytest.CaptureFixture[str]) -> None:
    """status prints version, pid, uptime, socket, clients and the per-op table."""
    path = await ws_server(fake_daemon(standard))
    assert await run_cli("--socket", path, "status") == 0
    out = capsys.readouterr().out
    assert out.splitlines()[0] == "deskhand-d 9.9.9 is running (pid 4242, up 1h 02m)"
    assert "socket    /run/user/1/deskhand/deskhand.sock" in out
    assert "clients   1 connected" in out
    assert "deskhandctl 0.1.0 (cli)  pid 77  uid 1000" in out
    assert [line.split() for line in out.splitlines() if line.strip().startswith("hello")] == [
        ["hello", "3", "0", "0.40", "0.90", "1.25"]
    ]


async def test_status_json_is_the_result_object(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """--json prints the daemon's result object, unchanged, as one line of JSON."""
    path = await ws_server(fake_daemon(standard))
    assert await run_cli("--json", "--socket", path, "status") == 0
    out = capsys.readouterr().out
    assert out.count("\n") == 1
    assert json.loads(out) == STATUS


async def test_requests_carry_hello_then_increasing_ids(ws_server: WsStart) -> None:
    """The first request is hello with our identity; ids then count up from 1."""
    received: list[dict[str, Any]] = []
    path = await ws_server(fake_daemon(standard, received))
    assert await run_cli("--socket", path, "ping") == 0
    hello, ping = received
    assert hello == {
        "op": "hello",
        "id": 1,
        "protocol": 1,
        "client": {"name": "deskhandctl", "version": "0.1.0", "kind": "cli"},
        "can_answer_questions": False,
    }
    assert ping == {"op": "ping", "id": 2}


async def test_ping_and_shutdown_output(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """ping reports who answered and how fast; shutdown acknowledges; --json shows results."""
    path = await ws_server(fake_daemon(standard))
    assert await run_cli("--socket", path, "ping") == 0
    assert capsys.readouterr().out.startswith("pong from deskhand-d 9.9.9 (pid 4242) in ")
    assert await run_cli("--socket", path, "ping", "--json") == 0
    assert json.loads(capsys.readouterr().out) == {"kind": "pong", "data": ""}
    assert await run_cli("--socket", path, "shutdown") == 0
    assert capsys.readouterr().out == "deskhand-d (pid 4242) is shutting down\n"


async def test_events_before_the_reply_go_to_the_hook(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """Events interleaved with replies reach the hook; notices print, unknown kinds do not."""

    def events_first(rid: int) -> list[dict[str, Any]]:
        return [
            {"type": "event", "event": {"kind": "notice", "code": "c", "message": "heads up"}},
            {"type": "event", "event": {"kind": "question", "text": "from the future"}},
            {"type": "result", "id": rid, "result": {"kind": "pong", "data": ""}},
        ]

    path = await ws_server(fake_daemon(with_overrides(ping=events_first)))
    assert await run_cli("--socket", path, "ping") == 0
    captured = capsys.readouterr()
    assert captured.err == "deskhand-d: heads up\n"
    assert captured.out.startswith("pong from")


async def test_session_hook_sees_every_event(ws_server: WsStart) -> None:
    """The Session passes every event object to on_event, in arrival order."""
    events = [{"kind": "notice", "message": "a"}, {"kind": "later", "x": 1}]

    def with_events(rid: int) -> list[dict[str, Any]]:
        pushed = [{"type": "event", "event": e} for e in events]
        return [*pushed, {"type": "result", "id": rid, "result": {"kind": "pong"}}]

    path = await ws_server(fake_daemon(with_overrides(ping=with_events)))

    def client() -> list[dict[str, Any]]:
        from deskhandctl.wire.connect import open_session

        seen: list[dict[str, Any]] = []
        session: Session = open_session(
            path, timeout=5, autostart=False, client_version="t", on_event=seen.append
        )
        assert session.request("ping") == {"kind": "pong"}
        session.close()
        return seen

    with trio.fail_after(20):
        assert await trio.to_thread.run_sync(client) == events


async def test_error_reply_exits_1_with_code_and_message(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error reply exits 1 and prints 'code: message'; --json also prints the error object."""
    error = {"code": "too_many_requests", "message": "slow down", "data": {"limit": 8}}
    script = with_overrides(status=lambda rid: [{"type": "error", "id": rid, "error": error}])
    path = await ws_server(fake_daemon(script))
    assert await run_cli("--socket", path, "status") == 1
    assert capsys.readouterr().err == "deskhandctl: too_many_requests: slow down\n"
    assert await run_cli("--socket", path, "--json", "status") == 1
    captured = capsys.readouterr()
    assert json.loads(captured.out) == {"error": error}
    assert "too_many_requests: slow down" in captured.err


async def test_error_with_null_id_is_still_ours(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """An error reply with id null (the daemon could not read the id) fails the request."""
    error = {"code": "bad_request", "message": "unreadable", "data": {}}
    script = with_overrides(status=[{"type": "error", "id": None, "error": error}])
    path = await ws_server(fake_daemon(script))
    assert await run_cli("--socket", path, "status") == 1
    assert "bad_request: unreadable" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("hello_reply", "needle"),
    [
        (
            lambda rid: [{"type": "result", "id": rid, "result": {**WELCOME, "protocol": 2}}],
            "version 2",
        ),
        (
            lambda rid: [
                {
                    "type": "error",
                    "id": rid,
                    "error": {"code": "protocol_mismatch", "message": "speak 3", "data": {}},
                }
            ],
            "speak 3",
        ),
        (lambda rid: [{"type": "result", "id": rid + 7, "result": WELCOME}], "never sent"),
        (lambda rid: [{"type": "mystery", "id": rid}], "unknown type"),
        (lambda rid: [{"type": "result", "id": rid, "result": {"kind": "pong"}}], "answered hello"),
    ],
)
async def test_protocol_mismatch_exits_76(
    ws_server: WsStart,
    capsys: pytest.CaptureFixture[str],
    hello_reply: Callable[[int], list[dict[str, Any]]],
    needle: str,
) -> None:
    """A welcome for another version, a refused hello or a reply that makes no sense: 76."""
    path = await ws_server(fake_daemon(with_overrides(hello=hello_reply)))
    assert await run_cli("--socket", path, "status") == 76
    assert needle in capsys.readouterr().err


async def test_non_json_and_binary_replies_exit_76(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text that is not JSON, or a binary frame on a JSON connection, is a protocol failure."""
    for payload, needle in (("{oops", "not JSON"), (b"\x81\xa2", "binary message")):

        async def handler(ws: trio_websocket.WebSocketConnection, payload: Any = payload) -> None:
            await ws.get_message()
            await ws.send_message(payload)
            await ws.get_message()

        path = await ws_server(handler)
        assert await run_cli("--socket", path, "status") == 76
        assert needle in capsys.readouterr().err


async def test_rejected_handshake_exits_76_with_the_reason(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """An HTTP refusal of the Upgrade shows its status and body, and exits 76."""
    path = await ws_server(lambda ws: trio.sleep(0), reject=(426, b"upgrade deskhandctl"))
    assert await run_cli("--socket", path, "status") == 76
    err = capsys.readouterr().err
    assert "HTTP 426" in err and "upgrade deskhandctl" in err


async def test_server_without_our_subprotocol_exits_76(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """A WebSocket server that does not pick deskhand.v1.json is not our daemon: 76."""
    path = await ws_server(lambda ws: trio.sleep(1), subprotocol=None)
    assert await run_cli("--socket", path, "status") == 76
    assert "deskhand.v1.json" in capsys.readouterr().err


async def test_hangup_before_handshake_exits_77(
    unix_server: Callable[..., Awaitable[str]], capsys: pytest.CaptureFixture[str]
) -> None:
    """The daemon closing before it answers (its answer to a foreign uid) means 77."""

    async def refuse(stream: trio.SocketStream) -> None:
        await stream.aclose()

    path = await unix_server(refuse)
    assert await run_cli("--socket", path, "status") == 77
    err = capsys.readouterr().err
    assert "hung up without answering the handshake" in err and "other users" in err


def test_eacces_on_connect_exits_77(
    short_dir: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """A permission error from connect() maps to 77 and names the socket."""

    def refused(path: str, *, timeout: float | None) -> Any:
        raise PermissionError(errno.EACCES, "Permission denied", path)

    monkeypatch.setattr("deskhandctl.wire.connect.connect_unix", refused)
    assert main(["--socket", f"{short_dir}/x.sock", "status"]) == 77
    err = capsys.readouterr().err
    assert "permission denied" in err and f"{short_dir}/x.sock" in err


@pytest.mark.slow
async def test_silent_daemon_exits_75(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """No answer to hello within --timeout: exit 75 and say so."""
    path = await ws_server(lambda ws: trio.sleep(10))
    assert await run_cli("--socket", path, "--timeout", "0.3", "status") == 75
    assert "did not answer 'hello' in time" in capsys.readouterr().err


async def test_daemon_closing_mid_request_exits_69(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """A close frame instead of a reply (say, the daemon stopping) means not running: 69."""

    async def going_away(ws: trio_websocket.WebSocketConnection) -> None:
        request = json.loads(await ws.get_message())
        await ws.send_message(json.dumps(standard(request)[0]))
        await ws.get_message()
        await ws.aclose(code=1001, reason="daemon stopping")

    path = await ws_server(going_away)
    assert await run_cli("--socket", path, "status") == 69
    assert "daemon stopping" in capsys.readouterr().err


async def test_daemon_closing_with_protocol_error_exits_76(
    ws_server: WsStart, capsys: pytest.CaptureFixture[str]
) -> None:
    """A close with 1002 (the daemon did not understand us) is a protocol failure: 76."""

    async def confused(ws: trio_websocket.WebSocketConnection) -> None:
        await ws.get_message()
        await ws.aclose(code=1002, reason="what was that")

    path = await ws_server(confused)
    assert await run_cli("--socket", path, "status") == 76
    assert "what was that" in capsys.readouterr().err
