"""Backend client edge cases driven by a scripted MCP server (a real child process)."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Literal

import trio

from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient.connection import LaunchSpec, open_backend

PEER = Path(__file__).resolve().parents[1] / "peers" / "scripted_server.py"
SPEC = LaunchSpec(kind="command", argv=(sys.executable, str(PEER)), env={"PATH": "/usr/bin:/bin"})
CONFIRM = {
    "message": "Allow ChatGPT to use Calculator?",
    "requestedSchema": {"type": "object", "properties": {}},
}


def _elicit(rid: object) -> dict[str, object]:
    return {"id": rid, "method": "elicitation/create", "params": CONFIRM}


async def _probe(requests: list[dict[str, object]], handler=None, **extra):  # type: ignore[no-untyped-def]
    async with open_backend(SPEC, call_timeout_s=10) as conn:
        res = await conn.call_tool("probe", {"requests": requests, **extra}, on_approval=handler)
        return res, conn


async def test_unknown_server_method_gets_32601_and_ping_gets_empty_result() -> None:
    """Unknown server requests are refused with -32601 (never silence); ping answers {}."""
    res, _ = await _probe([{"id": 7, "method": "roots/list"}, {"id": "p-1", "method": "ping"}])
    replies = {json.dumps(r["id"]): r for r in json.loads(res.output.text)}
    assert replies["7"]["error"]["code"] == -32601
    assert replies['"p-1"'] == {"jsonrpc": "2.0", "id": "p-1", "result": {}}


async def test_concurrent_approvals_cancel_and_late_accept_cannot_overturn() -> None:
    """Two approvals at once: the second is cancelled unasked, the first's accept turns to cancel."""
    asked: list[str] = []

    async def slow_yes(req: ap.Confirmation) -> Literal["accept", "decline"]:
        asked.append(req.message)
        await trio.sleep(0.3)  # the second request arrives while we are deciding
        return "accept"

    res, _ = await _probe([_elicit("A"), _elicit(0)], slow_yes)
    replies = {json.dumps(r["id"]): r["result"] for r in json.loads(res.output.text)}
    assert replies["0"] == {"action": "cancel"}
    assert replies['"A"'] == {"action": "cancel"}
    assert asked == ["Allow ChatGPT to use Calculator?"]
    assert res.approval_reason == "concurrent_request"


async def test_result_overtaking_a_pending_approval_is_not_usable() -> None:
    """A tool result that arrives while the person still decides is not a usable observation."""

    async def never(req: ap.Confirmation) -> Literal["accept", "decline"]:
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    with trio.fail_after(10):
        res, _ = await _probe([_elicit("B")], never, answer_first=True)
    assert res.output.text == "answered first"
    assert res.usable is False
    assert res.approval_reason == "incomplete_request"


async def test_ids_echo_with_original_types() -> None:
    """String, zero and large numeric server ids come back exactly as sent."""

    async def yes(req: ap.Confirmation) -> Literal["accept", "decline"]:
        return "accept"

    res, _ = await _probe(
        [
            {"id": "7A1C-UUID", "method": "ping"},
            {"id": 0, "method": "ping"},
            {"id": 2**40, "method": "ping"},
        ],
        yes,
    )
    ids = [r["id"] for r in json.loads(res.output.text)]
    assert sorted(map(json.dumps, ids)) == sorted(map(json.dumps, ["7A1C-UUID", 0, 2**40]))


async def test_start_timeouts_name_their_phase() -> None:
    """A backend that never answers initialize gives backend_timeout with phase initialize."""
    from deskhand_d.errors import BackendTimeout, BackendUnavailable

    silent = LaunchSpec(
        kind="command", argv=(sys.executable, "-c", "import time; time.sleep(60)"), env={}
    )
    async with open_backend(silent, start_timeout_s=0.5) as conn:
        try:
            await conn.handshake()
        except BackendTimeout as exc:
            assert exc.data == {"phase": "initialize"}
        else:
            raise AssertionError("no timeout")
        assert conn.running_pid is None
    missing = LaunchSpec(kind="command", argv=("/nonexistent/backend",), env={})
    async with open_backend(missing) as conn:
        try:
            await conn.handshake()
        except BackendUnavailable as exc:
            assert "cannot start" in exc.message
        else:
            raise AssertionError("started a missing binary")
