"""``deskhandctl mcp`` driven line by line (what SDK hosts cannot do on purpose): the 2025-06-18
revision, malformed input, cancelling a running action, a host that never answers a question,
and the daemon restarting mid-session."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest
from dhtest.clidaemon import CliDaemon
from dhtest.mcpsaid import said_code, said_delivery, said_state_id, text_of
from facade_rig import RawHost

pytestmark = pytest.mark.slow


def test_bad_input_is_answered_and_the_server_keeps_serving(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    host = hosts(desks({"preapproved": ["*"]}, TYPESAFE_API_KEY=""))
    host.request(1, "tools/list")
    assert host.reply(1)["error"]["code"] == -32600  # before initialize
    assert host.initialize("2025-06-18")["protocolVersion"] == "2025-06-18"
    host.send(b"{this is not json\n")
    assert host.reply(None)["error"]["code"] == -32700
    # 200,000 nested arrays: deeper than the interpreter's stack, answered as not JSON
    deep = b'{"jsonrpc":"2.0","id":9,"method":"ping","params":'
    host.send(deep + b"[" * 200_000 + b"]" * 200_000 + b"}\n")
    assert host.reply(None)["error"]["code"] == -32700
    host.send(b'[{"jsonrpc":"2.0","id":2,"method":"ping"}]\n')
    assert host.reply(None)["error"]["code"] == -32600
    host.send({"jsonrpc": "1.0", "id": 3, "method": "ping"})
    assert host.reply(3)["error"]["code"] == -32600
    host.request(4, "resources/list")
    assert host.reply(4)["error"]["code"] == -32601
    host.call(5, "no_such_tool", {})
    assert host.reply(5)["error"]["code"] == -32602
    host.call(6, "scroll", {"app": "C", "state_id": "x", "element_index": -1, "direction": "up"})
    bad = host.reply(6)["result"]
    assert (
        bad["isError"] and "arguments.element_index must be at least 0" in bad["content"][0]["text"]
    )
    host.request(7, "initialize", {"protocolVersion": "2025-06-18"})
    assert host.reply(7)["error"]["code"] == -32600
    host.request(8, "ping")
    assert host.reply(8)["result"] == {}
    assert host.close() == 0  # a clean exit at the end of input


def test_the_older_revision_gets_enum_forms(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    """2025-06-18 with ``elicitation: {}``: the consent form uses enum + enumNames and no mode;
    an accept(once) lets the observation through."""
    desk = desks({"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="")
    host = hosts(desk)
    host.initialize("2025-06-18", {"elicitation": {}})
    host.call(1, "get_app_state", {"app": "Calculator"})
    ask = host.method("elicitation/create")
    params = ask["params"]
    assert "mode" not in params
    choice = params["requestedSchema"]["properties"]["choice"]
    assert choice["enum"] == ["once", "always", "deny"] and len(choice["enumNames"]) == 3
    host.send(
        {
            "jsonrpc": "2.0",
            "id": ask["id"],
            "result": {"action": "accept", "content": {"choice": "once"}},
        }
    )
    result = host.reply(1)["result"]
    assert not result["isError"] and "accessibility tree of Calculator" in text_of(result)


def test_cancel_mid_action_sends_no_reply_and_the_delivery_is_honest(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
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
    host.send(
        {
            "jsonrpc": "2.0",
            "method": "notifications/cancelled",
            "params": {"requestId": 2, "reason": "t"},
        }
    )
    with pytest.raises(TimeoutError):
        host.reply(2, timeout=5)  # never a response for a cancelled request
    host.request(3, "ping")
    assert host.reply(3)["result"] == {}
    log = "".join(host.stderr)
    assert "cancelled" in log and "delivery unknown" in log, log
    audit = [r for r in desk.audit() if r.get("tool") == "click"]
    assert audit and audit[-1].get("delivery") in ("unknown", "dispatched"), audit
    # The session still works: observe again and act.
    host.call(4, "get_app_state", {"app": "Calculator"})
    assert not host.reply(4)["result"]["isError"]


def test_a_host_that_never_answers_ends_when_it_cancels_the_call(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    """The question stays unanswered; the host gives up on the call: the facade cancels the
    daemon request, withdraws the elicitation (notifications/cancelled) and never accepts."""
    desk = desks({"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="")
    host = hosts(desk)
    host.initialize("2025-11-25", {"elicitation": {"form": {}}})
    host.call(1, "get_app_state", {"app": "Calculator"})
    ask = host.method("elicitation/create")
    host.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}})
    withdrawn = host.method("notifications/cancelled")
    assert withdrawn["params"]["requestId"] == ask["id"]
    with pytest.raises(TimeoutError):
        host.reply(1, timeout=3)
    # A late answer to the withdrawn question is ignored; nothing was observed.
    host.send(
        {
            "jsonrpc": "2.0",
            "id": ask["id"],
            "result": {"action": "accept", "content": {"choice": "always"}},
        }
    )
    host.request(2, "ping")
    assert host.reply(2)["result"] == {}
    assert desk.received("get_app_state") == 0


def test_the_daemon_restarting_mid_session(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    """An action in flight when the daemon dies ends as outcome_unknown; the next call connects
    to the restarted daemon, in a new session, and says so."""
    desk = desks({"preapproved": ["*"], "delay_ms": {"click": 5000}}, TYPESAFE_API_KEY="")
    host = hosts(desk)
    host.initialize()
    host.call(1, "get_app_state", {"app": "Calculator"})
    first = said_state_id(host.reply(1)["result"])
    host.call(2, "click", {"app": "Calculator", "state_id": first, "element_index": 17})
    deadline = time.monotonic() + 20
    while desk.received("click") == 0:
        assert time.monotonic() < deadline
        time.sleep(0.05)
    desk.daemon.proc.kill()
    desk.daemon.proc.wait(10)
    lost = host.reply(2)["result"]
    assert lost["isError"] and said_code(lost) == "outcome_unknown"
    assert said_delivery(lost) == "unknown"
    assert "may or may not have happened" in lost["content"][0]["text"]
    desk.restart()
    host.call(3, "get_app_state", {"app": "Calculator"})
    again = host.reply(3)["result"]
    assert not again["isError"]
    assert "new session" in again["content"][0]["text"]
    host.call(4, "click", {"app": "Calculator", "state_id": first, "element_index": 17})
    stale = host.reply(4)["result"]
    assert stale["isError"] and said_code(stale).startswith("state_")
