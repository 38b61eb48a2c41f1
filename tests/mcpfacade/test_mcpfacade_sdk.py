"""The official MCP Python SDK as the host, against ``deskhandctl mcp`` on a real daemon with the
simulated desktop: the handshake, the tool list, the Calculator worked through native tools,
consent answered through elicitation, and a host that cannot answer."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import mcp.types as types
import pytest
from dhtest.clidaemon import CliDaemon
from dhtest.mcpsaid import said_code, said_delivery, said_state_id
from facade_rig import display, index_of, sdk_host, text_of

pytestmark = pytest.mark.slow


async def test_handshake_tools_and_the_calculator(desks: Callable[..., CliDaemon]) -> None:
    """2025-11-25, fifteen tools with input and output schemas; observe, click 7 by index, type
    ``*6=``: the display shows 42, every result validated by the SDK against its schema."""
    desk = desks({"preapproved": ["*"]}, TYPESAFE_API_KEY="")
    async with sdk_host(desk) as host:
        listed = await host.list_tools()
        names = [t.name for t in listed.tools]
        assert len(names) == 15 and {"get_app_state", "click", "run", "stop"} <= set(names)
        click = next(t for t in listed.tools if t.name == "click")
        assert click.inputSchema["required"] == ["app", "state_id"]
        assert click.outputSchema is None and click.annotations is not None  # text and image only
        assert click.annotations.destructiveHint is True

        seen = await host.call_tool("get_app_state", {"app": "Calculator"})
        assert not seen.isError
        state = said_state_id(seen)
        assert f"stateId for Calculator: {state}" in text_of(seen)
        assert any(c.type == "image" and c.data for c in seen.content)
        seven = index_of(text_of(seen), "ID: Seven")

        clicked = await host.call_tool(
            "click", {"app": "Calculator", "state_id": state, "element_index": seven}
        )
        assert not clicked.isError and said_delivery(clicked) == "dispatched"
        next_state = said_state_id(clicked)
        assert next_state and next_state != state

        typed = await host.call_tool(
            "type_text", {"app": "Calculator", "state_id": next_state, "text": "*6="}
        )
        assert not typed.isError, text_of(typed)
        assert display(text_of(typed)) == "42"

        again = await host.call_tool(
            "click", {"app": "Calculator", "state_id": state, "element_index": seven}
        )
        assert again.isError and said_code(again) == "state_consumed"
        assert "get_app_state" in text_of(again)

        status = await host.call_tool("status", {})
        session = status.structuredContent["session"]
        assert session.startswith("mcp-") and session in text_of(status)
    assert desk.received("type_text") == 1


async def test_wrong_argument_types_are_tool_errors(desks: Callable[..., CliDaemon]) -> None:
    desk = desks({"preapproved": ["*"]}, TYPESAFE_API_KEY="")
    async with sdk_host(desk) as host:
        bad = await host.call_tool("click", {"app": "Calculator", "state_id": 5})
        assert bad.isError and "arguments.state_id must be a string" in text_of(bad)
        assert said_code(bad) == "invalid_arguments"
        with pytest.raises(Exception, match="Unknown tool"):
            await host.call_tool("format_disk", {})
        ok = await host.call_tool("list_apps", {})
        assert not ok.isError and "Calculator" in text_of(ok)
    assert desk.received("click") == 0


def _answering(action: str, choice: str | None, asked: list[Any]) -> Any:
    async def elicit(context: Any, params: types.ElicitRequestParams) -> types.ElicitResult:
        asked.append(params)
        content = {"choice": choice} if choice is not None else None
        return types.ElicitResult(action=action, content=content)  # type: ignore[arg-type]

    return elicit


@pytest.mark.parametrize(
    ("action", "choice", "allowed"),
    [
        ("accept", "once", True),
        ("accept", "deny", False),
        ("decline", None, False),
        ("cancel", None, False),
    ],
)
async def test_consent_through_elicitation(
    desks: Callable[..., CliDaemon], action: str, choice: str | None, allowed: bool
) -> None:
    """Deskhand's consent question reaches the host as a form; its answer is mapped exactly."""
    desk = desks({"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="")
    asked: list[Any] = []
    async with sdk_host(desk, elicitation=_answering(action, choice, asked)) as host:
        result = await host.call_tool("get_app_state", {"app": "Calculator"})
    assert len(asked) == 1
    schema = asked[0].requestedSchema
    assert set(schema) == {"type", "properties", "required"}
    consts = [o["const"] for o in schema["properties"]["choice"]["oneOf"]]
    assert consts == ["once", "always", "deny"]
    assert "> " in asked[0].message and "Calculator" in asked[0].message
    if allowed:
        assert not result.isError and said_state_id(result)
    else:
        assert result.isError
        assert said_code(result) == "consent_denied"
        assert said_delivery(result) == "refused"
    assert desk.received("get_app_state") == (1 if allowed else 0)
    grants = desk.root / "config" / "deskhand" / "grants.json"
    assert not grants.exists() or json.loads(grants.read_text()).get("grants", []) == []


async def test_a_host_without_elicitation_is_refused_with_a_code(
    desks: Callable[..., CliDaemon],
) -> None:
    desk = desks({"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="")
    async with sdk_host(desk) as host:
        result = await host.call_tool("get_app_state", {"app": "Calculator"})
    assert result.isError
    code = said_code(result)
    assert code == "consent_denied" and said_delivery(result) == "refused"
    assert "Next step" in text_of(result)
    assert desk.received("get_app_state") == 0
