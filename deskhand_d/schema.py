"""``python -m deskhand_d.schema``: write the schemas generated from the protocol Structs.

What this owns: turning the wire Structs into JSON Schema files that ship or are documented,
so the Structs stay the one source of truth. Two outputs:

* ``docs/protocol.schema.json`` (the default): the whole client protocol;
* ``--mcp-tools [PATH]``: the input schemas of the MCP facade's tools
  (``clients/deskhandctl/facade/mcpschemas.json``), read by ``deskhandctl mcp`` at run time, which
  must not import msgspec. A test fails when either file differs from a fresh generation.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

from deskhand_d.protocol import requests as rq
from deskhand_d.protocol import schema

MCP_TOOLS_PATH = Path("clients/deskhandctl/facade/mcpschemas.json")

# The facade's tools and the request Struct each one sends (the tool name is the op name).
MCP_TOOL_STRUCTS: dict[str, type[Any]] = {
    "list_apps": rq.ListApps,
    "get_app_state": rq.GetAppState,
    "click": rq.Click,
    "drag": rq.Drag,
    "perform_secondary_action": rq.PerformSecondaryAction,
    "press_key": rq.PressKey,
    "scroll": rq.Scroll,
    "select_text": rq.SelectText,
    "set_value": rq.SetValue,
    "type_text": rq.TypeText,
    "run": rq.Run,
    "mode_get": rq.ModeGet,
    "mode_set": rq.ModeSet,
    "status": rq.Status,
    "stop": rq.Stop,
}
# Fields a tool's caller never writes: the tag and the request id belong to the wire.
_WIRE_ONLY = ("op", "id")


def render() -> str:
    return json.dumps(schema(), indent=2, sort_keys=True) + "\n"


def _tidy(node: Any, defs: dict[str, Any]) -> Any:
    """One schema node as a tool's caller should see it: references inlined, an optional
    ``X | None = None`` field as plain ``X`` (leaving it out means the same, and simple schemas
    suit more hosts), string enums typed, titles gone (the facade writes its own words)."""
    if isinstance(node, list):
        return [_tidy(item, defs) for item in node]
    if not isinstance(node, dict):
        return node
    if "$ref" in node:
        return _tidy(defs[node["$ref"].rpartition("/")[2]], defs)
    branches = node.get("anyOf")
    if isinstance(branches, list) and node.get("default", 0) is None:
        kept = [b for b in branches if b != {"type": "null"}]
        if len(kept) == 1:
            return _tidy(kept[0], defs)
    out = {k: _tidy(v, defs) for k, v in node.items() if k not in ("title", "description")}
    if "enum" in out and "type" not in out and all(isinstance(v, str) for v in out["enum"]):
        out["type"] = "string"
    return out


def mcp_tool_schemas() -> dict[str, Any]:
    """Each MCP tool's ``inputSchema``, from its request Struct minus the wire-only fields."""
    import msgspec

    structs = list(MCP_TOOL_STRUCTS.values())
    _, defs = msgspec.json.schema_components(structs, ref_template="#/$defs/{name}")
    tools: dict[str, Any] = {}
    for name, struct in MCP_TOOL_STRUCTS.items():
        component = _tidy(defs[struct.__name__], defs)
        properties = {
            k: v for k, v in component.get("properties", {}).items() if k not in _WIRE_ONLY
        }
        required = [k for k in component.get("required", []) if k not in _WIRE_ONLY]
        input_schema: dict[str, Any] = {"type": "object", "properties": properties}
        if required:
            input_schema["required"] = required
        input_schema["additionalProperties"] = False
        tools[name] = input_schema
    return {"generated_by": "python -m deskhand_d.schema --mcp-tools", "tools": tools}


def render_mcp_tools() -> str:
    return json.dumps(mcp_tool_schemas(), indent=1, sort_keys=True) + "\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    if args[:1] == ["--mcp-tools"]:
        target = Path(args[1]) if len(args) > 1 else MCP_TOOLS_PATH
        target.write_text(render_mcp_tools())
    else:
        target = Path(args[0]) if args else Path("docs/protocol.schema.json")
        target.write_text(render())
    print(f"wrote {target}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
