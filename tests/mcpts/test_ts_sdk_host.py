"""The official MCP TypeScript SDK client as the host of ``deskhandctl mcp``.

A second peer no one here wrote (besides the Python SDK in tests/mcpfacade): the scripted host
in tests/peers/mcp-ts/host.mjs, on Node 22 with ``@modelcontextprotocol/sdk`` from the npm
registry, starts the facade over stdio against a real daemon on the simulated desktop and
works the core path: initialize, the tool list, observe, click by index, type, and Deskhand's
consent question answered through the SDK's elicitation handler. The SDK checks the
``structuredContent`` of every tool that declares an ``outputSchema`` itself; a mismatch fails
the step.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, cli_daemons
from dhtest.mcpsaid import said_code, said_delivery, said_state_id

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
NODE = ROOT / ".ci" / ".node" / "node_modules" / "node" / "bin" / "node"
HOST = ROOT / "tests" / "peers" / "mcp-ts" / "host.mjs"
SDK = ROOT / "tests" / "peers" / "mcp-ts" / "node_modules" / "@modelcontextprotocol" / "sdk"

if not (NODE.exists() and SDK.exists()):  # .ci/setup-node.sh installs both
    pytest.skip("Node 22 and the MCP TypeScript SDK are not installed", allow_module_level=True)


@pytest.fixture
def desks() -> Iterator[Callable[..., CliDaemon]]:
    with cli_daemons() as make:
        yield make


def run_host(desk: CliDaemon, tmp_path: Path, steps: list[Any], **plan: Any) -> list[Any]:
    """Run the TypeScript host with this plan; its output lines, parsed."""
    path = tmp_path / "plan.json"
    path.write_text(
        json.dumps(
            {
                "command": sys.executable,
                "args": ["-m", "deskhandctl", "--socket", str(desk.daemon.socket), "mcp"],
                "env": desk.env,
                "steps": steps,
                **plan,
            }
        )
    )
    done = subprocess.run(
        [str(NODE), str(HOST), str(path)],
        capture_output=True,
        text=True,
        timeout=120,
        cwd=HOST.parent,
    )
    assert done.returncode == 0, done.stderr[-3000:]
    return [json.loads(line) for line in done.stdout.splitlines()]


def texts(result: dict[str, Any]) -> str:
    return "\n".join(c["text"] for c in result["content"] if c["type"] == "text")


def display(tree: str) -> str:
    values = re.findall(r"\d+ text \u200e?(\S+)", tree)
    assert values, tree
    return str(values[-1])


def test_the_calculator_through_the_typescript_sdk(
    desks: Callable[..., CliDaemon], tmp_path: Path
) -> None:
    """Initialize, list, observe, click 7 by index, type ``*6=``: 42 on the display; a stateId
    spent once is refused with its code."""
    desk = desks({"preapproved": ["*"]}, TYPESAFE_API_KEY="")
    state = {"$state": True}
    lines = run_host(
        desk,
        tmp_path,
        [
            {"list_tools": True},
            {"tool": "get_app_state", "arguments": {"app": "Calculator"}},
            {
                "tool": "click",
                "arguments": {
                    "app": "Calculator",
                    "state_id": state,
                    "element_index": {"$index": "ID: Seven"},
                },
            },
            {
                "tool": "type_text",
                "arguments": {"app": "Calculator", "state_id": state, "text": "*6="},
            },
            {
                "tool": "type_text",
                "arguments": {"app": "Calculator", "state_id": "0" * 32, "text": "1"},
            },
        ],
    )
    init, listed, seen, clicked, typed, stale = lines
    assert init["ok"] and init["result"]["capabilities"]["tools"]["listChanged"] is True
    assert all(line["ok"] for line in lines), lines
    names = {t["name"] for t in listed["result"]["tools"]}
    assert {"get_app_state", "click", "type_text", "run", "mode_set", "status", "stop"} <= names
    schemas = {t["name"]: "outputSchema" in t for t in listed["result"]["tools"]}
    assert schemas["run"] and schemas["status"] and schemas["mode_set"]  # checked by the SDK
    assert not schemas["get_app_state"] and not schemas["click"]  # text and image only

    observation = seen["result"]
    assert not observation.get("isError") and "structuredContent" not in observation
    assert any(c["type"] == "image" and c["data"] and c["mimeType"] for c in observation["content"])
    assert said_state_id(observation)

    assert said_delivery(clicked["result"]) == "dispatched"
    assert display(texts(typed["result"])) == "42"
    refusal = stale["result"]
    assert refusal["isError"] and said_code(refusal) == "state_unknown"
    assert desk.received("click") == 1 and desk.received("type_text") == 1


@pytest.mark.parametrize(
    ("answer", "allowed"),
    [
        ({"action": "accept", "content": {"choice": "once"}}, "allowed"),
        ({"action": "decline", "delay_ms": 1200}, "declined"),  # a person's no takes a while
        ({"action": "cancel", "delay_ms": 1200}, "declined"),
        ({"action": "decline"}, "nobody"),  # at once: the host's own answer, not a person's
    ],
)
def test_consent_answered_through_the_typescript_sdk(
    desks: Callable[..., CliDaemon], tmp_path: Path, answer: dict[str, Any], allowed: str
) -> None:
    """The consent question arrives as a form the SDK accepts; its answer decides, exactly. A
    refusal that comes back faster than a person could answer is the host's own: the refusal
    says nobody was asked, never that the person said no."""
    desk = desks({"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="")
    lines = run_host(
        desk,
        tmp_path,
        [{"tool": "get_app_state", "arguments": {"app": "Calculator"}}],
        elicitation=[answer],
    )
    asked = [line["elicitation"] for line in lines if "elicitation" in line]
    assert len(asked) == 1 and "Calculator" in asked[0]["message"]
    assert "choice" in asked[0]["requestedSchema"]["properties"]
    (result,) = [line["result"] for line in lines if line.get("step") == 0]
    if allowed == "allowed":
        assert not result.get("isError") and said_state_id(result)
    else:
        assert result["isError"] and said_code(result) == "consent_denied"
        assert said_delivery(result) == "refused"
        said_no = "the person said no" in texts(result)
        assert said_no is (allowed == "declined"), texts(result)
        assert ("nobody was asked" in texts(result)) is (allowed == "nobody")
    assert desk.received("get_app_state") == (1 if allowed == "allowed" else 0)
