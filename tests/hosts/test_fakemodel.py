"""The scripted fake model (tests/dhtest/fakemodel.py) on both wires, without a real host."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

from dhtest.fakemodel import Call, FakeModel, Request, tool_results


def post(url: str, body: dict[str, Any]) -> tuple[str, str]:
    req = urllib.request.Request(
        url, json.dumps(body).encode(), {"Content-Type": "application/json"}, method="POST"
    )
    with urllib.request.urlopen(req, timeout=10) as r:
        return r.headers["Content-Type"], r.read().decode()


def sse(text: str) -> list[dict[str, Any]]:
    return [json.loads(line[6:]) for line in text.splitlines() if line.startswith("data: ")]


def test_anthropic_turns_side_requests_and_tool_search() -> None:
    def second(req: Request) -> Call:
        (result,) = tool_results(req)
        return Call("snap", {"index": 3, "seen": result["content"]})

    script = [Call("look", {"app": "Calculator"}), second, "done"]
    with FakeModel(script) as fake:
        # A side request (no tools) takes no turn.
        _, body = post(fake.url + "/v1/messages", {"model": "m", "messages": [], "max_tokens": 1})
        assert json.loads(body)["content"] == [{"type": "text", "text": "Probe"}]
        # Claude Code's deferred MCP tools: the fake loads them with ToolSearch first.
        deferred = {
            "model": "m",
            "stream": True,
            "system": "available via ToolSearch:\nmcp__srv__look\nmcp__srv__snap\n",
            "messages": [{"role": "user", "content": "go"}],
            "tools": [{"name": "ToolSearch"}],
        }
        ctype, body = post(fake.url + "/v1/messages?beta=true", deferred)
        assert ctype == "text/event-stream"
        events = sse(body)
        assert [e["type"] for e in events][:2] == ["message_start", "content_block_start"]
        block = events[1]["content_block"]
        assert block["name"] == "ToolSearch"
        assert json.loads(events[2]["delta"]["partial_json"]) == {
            "query": "select:mcp__srv__look",  # the tools the script names (not a callable's)
            "max_results": 1,
        }
        tools = [{"name": "ToolSearch"}, {"name": "mcp__srv__look"}, {"name": "mcp__srv__snap"}]
        base = {"model": "m", "stream": True, "tools": tools}
        events = sse(post(fake.url + "/v1/messages", {**base, "messages": []})[1])
        assert events[1]["content_block"]["name"] == "mcp__srv__look"
        assert events[-2]["delta"]["stop_reason"] == "tool_use"
        messages = [
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1",
                                          "content": "TREE", "is_error": False}]}
        ]  # fmt: skip
        events = sse(post(fake.url + "/v1/messages", {**base, "messages": messages})[1])
        assert json.loads(events[2]["delta"]["partial_json"]) == {"index": 3, "seen": "TREE"}
        events = sse(post(fake.url + "/v1/messages", {**base, "messages": []})[1])
        assert events[2]["delta"] == {"type": "text_delta", "text": "done"}
        assert [r.turn for r in fake.main_requests()] == [None, 0, 1, 2]
        assert fake.errors == []


def test_responses_namespaced_tools_and_models() -> None:
    with FakeModel([Call("look", {"app": "Calc"}), "bye"]) as fake:
        tools = [
            {"type": "function", "name": "exec_command"},
            {
                "type": "namespace",
                "name": "mcp__srv",
                "tools": [{"type": "function", "name": "look"}],
            },
        ]
        events = sse(
            post(fake.url + "/v1/responses", {"model": "m", "tools": tools, "input": []})[1]
        )
        assert events[0]["type"] == "response.created"
        assert events[-1]["type"] == "response.completed"
        (done,) = [e for e in events if e["type"] == "response.output_item.done"]
        assert done["item"]["namespace"] == "mcp__srv"
        assert done["item"]["name"] == "look"
        assert json.loads(done["item"]["arguments"]) == {"app": "Calc"}
        output = {"type": "function_call_output", "call_id": done["item"]["call_id"], "output": "x"}
        body = {"model": "m", "tools": tools, "input": [output]}
        events = sse(post(fake.url + "/v1/responses", body)[1])
        assert events[-1]["response"]["output"][0]["content"][0]["text"] == "bye"
        assert tool_results(fake.requests[-1]) == [
            {"id": done["item"]["call_id"], "content": "x", "is_error": None}
        ]
        with urllib.request.urlopen(fake.url + "/v1/models", timeout=10) as r:
            assert json.loads(r.read())["data"][0]["id"] == "fake-model"
