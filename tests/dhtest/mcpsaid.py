"""What a tool result of ``deskhandctl mcp`` says in its text, read back as a host's model reads
it. The tools that return a tree or a screenshot, and every refusal, have no
``structuredContent`` (hosts forward it in place of the text): tests read the facts from the
words, which is what a model gets in every host."""

from __future__ import annotations

import re
from typing import Any


def text_of(result: Any) -> str:
    """The result's text blocks, joined (a result as JSON, or the MCP SDK's CallToolResult)."""
    if not isinstance(result, dict):
        result = result.model_dump()
    return "\n".join(b["text"] for b in result.get("content", []) if b.get("type") == "text")


def said_state_id(result: Any) -> str | None:
    """The stateId the result hands the model (None when it says there is none)."""
    found = re.search(r"^(?:New )?stateId for .+?: (\S+)$", text_of(result), re.MULTILINE)
    return found.group(1) if found else None


def said_code(result: Any) -> str | None:
    """A refusal's stable code, from its first line (``<tool> failed: <code>. ...``)."""
    found = re.match(r"\S+ failed: ([a-z_]+)\.", text_of(result).removeprefix(_RECONNECTED))
    return found.group(1) if found else None


def said_delivery(result: Any) -> str | None:
    """The delivery the words state (``(delivery: X)`` of an action, ``Delivery: X.`` of a
    refusal)."""
    found = re.search(r"[Dd]elivery: (refused|dispatched|partial|unknown)\b", text_of(result))
    return found.group(1) if found else None


_RECONNECTED = (
    "Note: Deskhand's daemon was restarted, so this call ran in a new session; stateIds and "
    "handoffs from before no longer work.\n\n"
)
