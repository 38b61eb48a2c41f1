"""Several MCP hosts at once: each ``deskhandctl mcp`` is its own daemon session, named after
its host, and all of them share the daemon's one action queue (issue 19, item 5)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio
from dhtest.clidaemon import CliDaemon
from dhtest.mcpsaid import said_delivery, said_state_id, text_of
from facade_rig import index_of, sdk_host

pytestmark = pytest.mark.slow


async def test_two_hosts_share_one_queue_as_two_sessions(
    desks: Callable[..., CliDaemon],
) -> None:
    """While one host's slow click runs, the other host's status names that host's session as
    the one holding the desktop, and its own click waits in the queue behind it."""
    desk = desks({"preapproved": ["*"], "delay_ms": {"click": 1500}}, TYPESAFE_API_KEY="")
    async with sdk_host(desk) as first, sdk_host(desk) as second:
        one = (await first.call_tool("status", {})).structuredContent["session"]
        two = (await second.call_tool("status", {})).structuredContent["session"]
        assert one != two and one.startswith("mcp-") and two.startswith("mcp-")

        seen = await first.call_tool("get_app_state", {"app": "Calculator"})
        other = await second.call_tool("get_app_state", {"app": "Calculator"})
        results: dict[str, Any] = {}

        async def click(host: Any, name: str, observed: Any) -> None:
            results[name] = await host.call_tool(
                "click",
                {
                    "app": "Calculator",
                    "state_id": said_state_id(observed),
                    "element_index": index_of(text_of(observed), "ID: Seven"),
                },
            )

        async with trio.open_nursery() as nursery:
            nursery.start_soon(click, first, "first", seen)
            with trio.fail_after(20):  # until the first click holds the desktop
                while one not in (
                    held := (await second.call_tool("status", {})).structuredContent
                ).get("desktop_holder", ""):
                    await trio.sleep(0.05)
            nursery.start_soon(click, second, "second", other)
            with trio.fail_after(20):  # the second click queued behind the first
                while held.get("queue_depth", 0) < 1:
                    await trio.sleep(0.05)
                    held = (await second.call_tool("status", {})).structuredContent
            assert one in held["desktop_holder"]
            assert held["sessions"] >= 2 and len(held["clients"]) >= 2
        for name in ("first", "second"):
            assert not results[name].isError, results[name]
            assert said_delivery(results[name]) == "dispatched"
    assert desk.received("click") == 2
