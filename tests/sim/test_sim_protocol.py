"""The simulator's JSON-RPC and MCP lifecycle behaviour (spec §2, §3, §4, §9.1, §10)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys

import pytest
from simclient import ROOT, UUID_UPPER, MakeSim, Sim

from deskhand_d import surface

SKY_HASH = "14e7d17f1f59e77ca541a15071e980628cd08977a4dda111c96e0564d337056b"
PARSE_ERROR = {
    "code": -32700,
    "data": {"detail": "Invalid message format"},
    "message": "Parse error: Invalid JSON: Invalid message format",
}


def test_initialize_echoes_supported_versions_and_falls_back(make_sim: MakeSim) -> None:
    """initialize echoes each supported protocolVersion and answers 2025-11-25 for others."""
    versions = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "1999-01-01"]
    sims = [make_sim(init=False) for _ in versions]
    for sim, version in zip(sims, versions, strict=True):
        reply = sim.initialize(version)
        expected = version if version != "1999-01-01" else "2025-11-25"
        assert reply == {
            "id": 1,
            "jsonrpc": "2.0",
            "result": {
                "capabilities": {"tools": {"listChanged": False}},
                "protocolVersion": expected,
                "serverInfo": {"name": "Computer Use", "version": SKY_HASH},
            },
        }
        assert re.fullmatch(r"[0-9a-f]{64}", reply["result"]["serverInfo"]["version"])


def test_second_initialize_is_an_invalid_request(shared_sim: Sim) -> None:
    """A second initialize on the same connection gets -32600 with the SDK's wording."""
    sim = shared_sim
    rid = sim.request("initialize", {"protocolVersion": "2025-06-18", "capabilities": {}})
    assert sim.response(rid) == {
        "error": {
            "code": -32600,
            "data": {"detail": "Server is already initialized"},
            "message": "Invalid Request: Server is already initialized",
        },
        "id": rid,
        "jsonrpc": "2.0",
    }


def test_output_is_compact_sorted_json_one_object_per_line(shared_sim: Sim) -> None:
    """Every stdout line is one compact, key-sorted JSON object with raw UTF-8."""
    sim = shared_sim
    sim.text("get_app_state", {"app": "Calculator"})
    sim.text("list_apps")
    sim.response(sim.request("tools/list"))
    assert len(sim.raw) >= 5
    for raw in sim.raw:
        assert raw.endswith(b"\n") and raw.count(b"\n") == 1
        parsed = json.loads(raw)
        canonical = json.dumps(parsed, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        assert raw == canonical.encode() + b"\n"


def test_parse_errors_use_a_fresh_uppercase_uuid_or_the_recovered_id(shared_sim: Sim) -> None:
    """Garbage gets -32700 with a random uppercase UUID id; a salvageable id is reused."""
    sim = shared_sim
    sim.send_raw(b"this is not json\n")
    first = sim.next_message()
    assert first["error"] == PARSE_ERROR and first["jsonrpc"] == "2.0"
    assert isinstance(first["id"], str) and UUID_UPPER.match(first["id"])
    sim.send_raw(b'{"jsonrpc":"2.0","id":"abc","params":{}}\n')
    assert sim.next_message() == {"error": PARSE_ERROR, "id": "abc", "jsonrpc": "2.0"}
    sim.send_raw(b'{"id":77,"method":"ping"}\n')  # no jsonrpc member
    assert sim.next_message() == {"error": PARSE_ERROR, "id": 77, "jsonrpc": "2.0"}
    second = (sim.send_raw(b"[1,2\n"), sim.next_message())[1]
    assert UUID_UPPER.match(second["id"]) and second["id"] != first["id"]


def test_content_length_framing_gets_one_parse_error_per_line_then_silence(sim: Sim) -> None:
    """LSP-style framing: the header line is garbage, the body never completes a line."""
    body = json.dumps({"jsonrpc": "2.0", "id": 5, "method": "ping"})
    sim.send_raw(f"Content-Length: {len(body)}\r\n\r\n{body}".encode())
    got = sim.quiet(0.25)
    assert len(got) == 1 and got[0]["error"] == PARSE_ERROR


def test_unknown_methods_are_method_not_found(shared_sim: Sim) -> None:
    """resources/list, prompts/list, logging/setLevel: -32601 "Method not found: Unknown method: m"."""
    sim = shared_sim
    for method in ("resources/list", "prompts/list", "logging/setLevel", "completion/complete"):
        rid = sim.request(method, {})
        assert sim.response(rid)["error"] == {
            "code": -32601,
            "data": {"detail": f"Unknown method: {method}"},
            "message": f"Method not found: Unknown method: {method}",
        }


def test_ping_and_silent_notifications(shared_sim: Sim) -> None:
    """ping answers {}; notifications (known or not) are never answered."""
    sim = shared_sim
    sim.notify("notifications/initialized")
    sim.notify("notifications/whatever", {"x": 1})
    rid = sim.request("ping")
    assert sim.next_message() == {"id": rid, "jsonrpc": "2.0", "result": {}}
    assert sim.quiet(0.2) == []


def test_tools_list_matches_the_surface_exactly(shared_sim: Sim) -> None:
    """Ten tools in Sky's order, with surface.py's schemas and hints, no title or outputSchema."""
    sim = shared_sim
    tools = sim.response(sim.request("tools/list"))["result"]["tools"]
    assert [t["name"] for t in tools] == list(surface.TOOL_ORDER)
    for tool in tools:
        assert set(tool) == {"annotations", "description", "inputSchema", "name"}
        assert tool["inputSchema"] == surface.input_schema(tool["name"])
        assert tool["inputSchema"]["additionalProperties"] is False
        assert tool["annotations"] == surface.tool_annotations(tool["name"])
        assert tool["description"].strip()
        assert "Start an app use session" not in tool["description"]  # ours, not Sky's words
    hints = {t["name"]: t["annotations"]["readOnlyHint"] for t in tools}
    assert {n for n, ro in hints.items() if ro} == {"list_apps", "get_app_state"}
    assert tools[2]["inputSchema"]["properties"]["element_index"]["type"] == "string"


def test_stderr_is_silent_and_exit_is_clean_on_eof(make_sim: MakeSim) -> None:
    """A normal session writes nothing to stderr, and closing stdin ends the process with 0."""
    sim = make_sim({"preapproved": ["*"]})
    sim.text("get_app_state", {"app": "TextEdit"})
    sim.text("type_text", {"app": "TextEdit", "text": "hi"})
    code, err = sim.close()
    assert (code, err) == (0, b"")


def test_piped_one_shot_session_gets_its_answers() -> None:
    """Requests piped in followed by end of file are still answered before the process exits."""
    lines = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": "2025-06-18"},
        },
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "list_apps"}},
        {
            "jsonrpc": "2.0",
            "id": 3,
            "method": "tools/call",
            "params": {"name": "get_app_state", "arguments": {"app": "TextEdit"}},
        },
    ]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    env = {**os.environ, "DESKHAND_SIM_SCENARIO": "{}"}
    cmd = [sys.executable, "-m", "deskhand_d.programs.sim"]
    done = subprocess.run(cmd, input=data, capture_output=True, cwd=ROOT, env=env, timeout=20)
    out = [json.loads(line) for line in done.stdout.splitlines()]
    assert done.returncode == 0 and done.stderr == b""
    assert sorted(m["id"] for m in out if "method" not in m) == [1, 2]  # replies may interleave
    prompts = [m for m in out if m.get("method") == "elicitation/create"]
    assert len(prompts) == 1 and len(out) == 3  # asked, but nobody can answer any more


def test_lines_split_on_lf_only(shared_sim: Sim) -> None:
    """U+2028 and U+2029 inside a JSON string do not split the message."""
    sim = shared_sim
    sim.text("get_app_state", {"app": "TextEdit"})
    tree = sim.text("type_text", {"app": "TextEdit", "text": "a\u2028b\u2029c"})
    assert "Value: a\u2028b\u2029c, ID: First Text View" in tree


def test_cancelled_request_is_never_answered(make_sim: MakeSim) -> None:
    """notifications/cancelled drops the response; other requests keep flowing."""
    sim = make_sim({"hang": [{"tool": "list_apps"}], "delay_ms": {"get_app_state": 200}})
    hung = sim.request("tools/call", {"name": "list_apps", "arguments": {}})
    slow = sim.request("tools/call", {"name": "get_app_state", "arguments": {"app": "Calculator"}})
    sim.notify("notifications/cancelled", {"requestId": hung, "reason": "test"})
    sim.notify("notifications/cancelled", {"requestId": slow, "reason": "test"})
    rid = sim.request("ping")
    assert sim.response(rid)["result"] == {}
    late = sim.quiet(0.35)
    assert [m for m in late if m.get("id") in (hung, slow)] == []


def test_batch_requests_get_one_array_reply(shared_sim: Sim) -> None:
    """A JSON-RPC batch is answered with one array; an empty batch is an invalid request."""
    sim = shared_sim
    sim.send([{"jsonrpc": "2.0", "id": 41, "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}])
    reply = sim.next_message()
    assert reply == [{"id": 41, "jsonrpc": "2.0", "result": {}}]
    sim.send([])
    empty = sim.next_message()
    assert empty["error"]["code"] == -32600
    assert empty["error"]["message"] == "Invalid Request: Batch array must not be empty"


@pytest.mark.parametrize(
    "params", [{"arguments": {}}, {"name": 3}, {"name": "list_apps", "arguments": [1]}]
)
def test_malformed_tools_call_params_are_invalid_params(
    shared_sim: Sim, params: dict[str, object]
) -> None:
    """tools/call without a string name or with non-object arguments: -32602."""
    sim = shared_sim
    reply = sim.response(sim.request("tools/call", params))
    assert reply["error"]["code"] == -32602
    assert reply["error"]["message"].startswith("Invalid params: ")


def test_unknown_tool_and_missing_argument_are_tool_errors(shared_sim: Sim) -> None:
    """Unknown tools and missing required arguments are isError results, not JSON-RPC errors."""
    sim = shared_sim
    bad = sim.call("open_terminal", {})
    assert bad == {
        "content": [{"text": "Unknown tool: open_terminal", "type": "text"}],
        "isError": True,
        "_meta": {"codex/telemetry": {"span": {"did_trigger_server_user_flow": False}}},
    }
    missing = sim.call("get_app_state", {})
    assert missing["content"][0]["text"] == "Missing required argument: app"
    assert missing["isError"] is True
