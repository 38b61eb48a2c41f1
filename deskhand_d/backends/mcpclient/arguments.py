"""Fit a tool call's arguments to the schema the backend advertised. Pure.

Sky's schemas say ``additionalProperties: false``, so an argument it does not list must never
be sent: the client repairs the known spelling differences and refuses the rest before
anything reaches the backend.

* ``element_index`` is a string on Sky's surface; integers are sent as their decimal string.
* ``disableDiff`` / ``disableDiffing`` exist on other Sky layers, not on MCP: dropped when the
  advertised schema lacks them.
* ``selection_type`` is the JavaScript spelling of ``selection``: renamed when the schema has
  ``selection`` only.
"""

from __future__ import annotations

from typing import Any

_DIFF_FLAGS = ("disableDiff", "disableDiffing")


class ArgumentsRefused(Exception):
    """The arguments cannot be sent as they are; the message names what is wrong."""


def negotiate(tool: str, arguments: dict[str, Any], schema: dict[str, Any]) -> dict[str, Any]:
    """Return the arguments to send for ``tool`` given its advertised ``inputSchema``."""
    props = schema.get("properties")
    props = props if isinstance(props, dict) else {}
    out = dict(arguments)
    for flag in _DIFF_FLAGS:
        if flag in out and flag not in props:
            del out[flag]
    if "selection_type" in out and "selection_type" not in props and "selection" in props:
        if "selection" in out:
            raise ArgumentsRefused("give either selection or selection_type, not both")
        out["selection"] = out.pop("selection_type")
    index = out.get("element_index")
    is_int = isinstance(index, int) and not isinstance(index, bool)
    if is_int and _declared_type(props.get("element_index")) in (None, "string"):
        out["element_index"] = str(index)
    if schema.get("additionalProperties") is False:
        unknown = sorted(k for k in out if k not in props)
        if unknown:
            allowed = ", ".join(sorted(props)) or "none"
            raise ArgumentsRefused(
                f"the backend's {tool} does not accept {', '.join(unknown)} "
                f"(it accepts: {allowed}); nothing was sent"
            )
    required = schema.get("required")
    if isinstance(required, list):
        missing = [k for k in required if isinstance(k, str) and k not in out]
        if missing:
            raise ArgumentsRefused(f"{tool} needs {', '.join(missing)}; nothing was sent")
    return out


def _declared_type(spec: object) -> str | None:
    if isinstance(spec, dict):
        t = spec.get("type")
        return t if isinstance(t, str) else None
    return None
