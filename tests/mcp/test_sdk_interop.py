"""Interop: Deskhand's backend client against a server built on the official MCP SDK (1.x)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import Literal

import pytest
import trio

from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient.connection import LaunchSpec, open_backend

PEER = Path(__file__).resolve().parents[1] / "peers" / "sdk_server.py"
SPEC = LaunchSpec(kind="command", argv=(sys.executable, str(PEER)), env={"PATH": "/usr/bin:/bin"})


def _answer(value: Literal["accept", "decline"]):  # type: ignore[no-untyped-def]
    seen: list[ap.Confirmation] = []

    async def on_approval(req: ap.Confirmation) -> Literal["accept", "decline"]:
        seen.append(req)
        return value

    return on_approval, seen


@pytest.mark.parametrize("choice", ["accept", "decline"])
async def test_sdk_peer_person_decides(choice: Literal["accept", "decline"]) -> None:
    """The SDK server's integer-id elicitation reaches the person; their answer goes back."""
    handler, seen = _answer(choice)
    async with open_backend(SPEC, call_timeout_s=20) as conn:
        info = await conn.handshake()
        assert {t["name"] for t in info.tools} >= {"get_app_state", "list_apps"}
        res = await conn.call_tool("get_app_state", {"app": "Calculator"}, on_approval=handler)
    assert res.output.text == f"elicit -> {choice}"
    assert res.approval_reason == ("user_accepted" if choice == "accept" else "user_declined")
    assert [r.message for r in seen] == ["Allow ChatGPT to use Calculator?"]


async def test_sdk_peer_without_handler_gets_cancel() -> None:
    """With nobody to ask, the client answers cancel (never accept) and says why."""
    async with open_backend(SPEC, call_timeout_s=20) as conn:
        res = await conn.call_tool("get_app_state", {"app": "Calculator"})
        assert res.output.text == "elicit -> cancel"
        assert res.approval_reason == "handler_unavailable"
        again = await conn.call_tool("list_apps", {})
        assert "Calculator" in again.output.text and again.approval_reason is None


async def test_sdk_peer_handler_error_is_cancel() -> None:
    """A failing approval handler ends in cancel with reason handler_error."""

    async def broken(req: ap.Confirmation) -> Literal["accept", "decline"]:
        raise RuntimeError("ui crashed")

    async with open_backend(SPEC, call_timeout_s=20) as conn:
        res = await conn.call_tool("get_app_state", {"app": "Calculator"}, on_approval=broken)
    assert res.output.text == "elicit -> cancel"
    assert res.approval_reason == "handler_error"


async def test_sdk_peer_caller_cancel_while_deciding() -> None:
    """Cancelling the caller while the person decides sends cancel and leaves the peer usable."""
    started = trio.Event()

    async def slow(req: ap.Confirmation) -> Literal["accept", "decline"]:
        started.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with open_backend(SPEC, call_timeout_s=20) as conn:
        with trio.move_on_after(10) as outer:
            async with trio.open_nursery() as nursery:

                async def run() -> None:
                    await conn.call_tool("get_app_state", {"app": "Calculator"}, on_approval=slow)

                nursery.start_soon(run)
                await started.wait()
                nursery.cancel_scope.cancel()
        assert not outer.cancelled_caught
        res = await conn.call_tool("list_apps", {})
        assert "Calculator" in res.output.text
        assert conn.processes_started == 1
