"""``deskhandctl mcp``'s Link against a fake daemon on a real Unix socket: a call the daemon
never answers is given up after the reply timeout, with a clear error, and the link stays up."""

from __future__ import annotations

import pytest
import trio
from deskhandctl.facade.link import Link, NoAnswer
from fake_daemon import Message, WsStart, fake_daemon, with_overrides


async def test_wait_gives_up_a_call_nothing_arrives_for(ws_server: WsStart) -> None:
    """No reply and no event for the call within reply_timeout_s: NoAnswer (a Lost with sent
    True) that says so, the daemon asked to cancel that call, and the connection kept."""
    received: list[Message] = []
    script = with_overrides(
        click=[],  # silence
        cancel=lambda rid: [{"type": "result", "id": rid, "result": {"kind": "done"}}],
    )
    path = await ws_server(fake_daemon(script, received))

    def client() -> tuple[str, bool, dict[str, object], int]:
        link = Link(
            socket_path=path,
            autostart=False,
            client_name="test",
            client_version="1",
            session_base=lambda serial: f"test-{serial}",
            can_answer_questions=False,
            on_event=lambda event: None,
            reply_timeout_s=0.3,
        )
        link.ensure()
        call = link.start("click", {"app": "X", "state_id": "st-1", "element_index": "1"})
        with pytest.raises(NoAnswer) as gave_up:
            link.wait(call, lambda event: None)
        after = link.request("status", {})  # the same connection still serves
        connections = link.connections
        link.close()
        return str(gave_up.value), gave_up.value.sent, after, connections

    with trio.fail_after(20):
        said, sent, after, connections = await trio.to_thread.run_sync(client)
    assert said == (
        "deskhand-d sent nothing for 0.3 s, so the call was given up (and deskhand-d asked to "
        "cancel it)"
    )
    assert sent is True
    assert after["type"] == "result"
    assert connections == 1
    click = next(m for m in received if m["op"] == "click")
    cancels = [m for m in received if m["op"] == "cancel"]
    assert [m["request_id"] for m in cancels] == [click["id"]]
