"""The contract between the daemon and every backend: Sky's tool surface as Deskhand expects
it (the ten tools, their argument schemas, hints), the ``_meta`` notes Deskhand's own programs
add, and the headers that mark an accessibility text as a diff rather than a whole tree.

Pure data, at the bottom of the package so that both sides import it and neither imports the
other: the backend programs serve the tools (with descriptions written in our own words),
``doctor`` compares a real backend's ``tools/list`` against them, the client's schema
negotiation falls back to them when a backend does not advertise a tool, and the result and
AX text readers use the notes and headers. Property names, types,
enums, ``required`` lists and annotations match Sky's wire behaviour exactly; description texts
do not need to and are ours.
"""

from __future__ import annotations

from typing import Any, Final

TOOL_ORDER: Final = (
    "list_apps",
    "get_app_state",
    "click",
    "perform_secondary_action",
    "set_value",
    "select_text",
    "scroll",
    "drag",
    "press_key",
    "type_text",
)

READ_ONLY_TOOLS: Final = frozenset({"list_apps", "get_app_state"})

#: How Sky begins the header of an accessibility text that is not a whole tree: a diff from
#: the previous tree, no change, or an update listing changed and removed elements. Both the
#: daemon's result reader and the AX text reader must tell such a text from a full tree.
DIFF_MARKERS: Final = (
    "The following is a diff from the previous accessibility tree for Window: ",
    "The following is a cumulative diff from the initial accessibility tree",
    "There has been no change in the accessibility tree for Window: ",
    "Updated elements:",
    "Removed element IDs: ",
)

DELIVERY_META: Final = "deskhand/delivery"
"""A ``_meta`` key Deskhand's own AT-SPI backend adds to a tool result that did not do
all it was asked: ``{"state": "refused" | "partial" | "unknown" | "dispatched", "reason": ...,
"done": n, "total": n, "unit": "characters", ...}`` (counts optional). ``reason`` is
``target_changed`` (the input would have reached another program), ``target_gone`` (the app
quit), ``failed``, ``not_sent`` (an error result given before anything went out to the app:
its text says what went wrong, and the daemon reads it as usual but says ``refused``), or
one of the notes of ``deskhand_d.programs.atspi.notes`` (``app_exited`` with ``exit`` and
``during``, ``not_accessible`` with ``hint``, ``focus_elsewhere``, ``modal_dialog`` with
``dialog``, ``no_effect`` with ``what``: the one note given with state ``dispatched``, for
input that arrived and changed nothing). Sky never sends it; a client that does not know it
still sees an ``isError`` result."""

EFFECT_META: Final = "deskhand/effect"
"""A ``_meta`` key on a successful action result of Deskhand's own AT-SPI backend that read
the element back: ``{"effect": "changed" | "unreadable", "what": "value" | "text" |
"selection"}``. (An unchanged element is an error result with the ``no_effect`` note.)"""

_APP = {"type": "string", "description": "Target app: its name, full .app path or bundle id"}
_APP_SHORT = {"type": "string", "description": "Target app: its name or bundle id"}
_INDEX = {"type": "string", "description": "Index of the element in the latest state"}


def _s(description: str, **extra: Any) -> dict[str, Any]:
    return {"type": "string", "description": description, **extra}


def _n(description: str) -> dict[str, Any]:
    return {"type": "number", "description": description}


_PROPERTIES: Final[dict[str, dict[str, dict[str, Any]]]] = {
    "list_apps": {},
    "get_app_state": {"app": _APP},
    "click": {
        "app": _APP,
        "click_count": {"type": "integer", "description": "How many clicks (1 if omitted)"},
        "element_index": _INDEX,
        "mouse_button": _s("Which button (left if omitted)", enum=["left", "right", "middle"]),
        "x": _n("Horizontal position in screenshot pixels"),
        "y": _n("Vertical position in screenshot pixels"),
    },
    "perform_secondary_action": {
        "action": _s("Name of one of the element's secondary actions"),
        "app": _APP,
        "element_index": _INDEX,
    },
    "set_value": {
        "app": _APP,
        "element_index": _INDEX,
        "value": _s("The new value"),
    },
    "select_text": {
        "app": _APP_SHORT,
        "element_index": _INDEX,
        "prefix": _s("Text just before the target, to pick one of several matches"),
        "selection": _s(
            "Select the text, or put the cursor before or after it (text if omitted)",
            enum=["text", "cursor_before", "cursor_after"],
        ),
        "suffix": _s("Text just after the target, to pick one of several matches"),
        "text": _s("The text to select, exactly as the accessibility tree shows it"),
    },
    "scroll": {
        "app": _APP,
        "direction": _s("up, down, left or right"),
        "element_index": _INDEX,
        "pages": _n("How many pages; fractions allowed (1 if omitted)"),
    },
    "drag": {
        "app": _APP,
        "from_x": _n("Start, horizontal pixel"),
        "from_y": _n("Start, vertical pixel"),
        "to_x": _n("End, horizontal pixel"),
        "to_y": _n("End, vertical pixel"),
    },
    "press_key": {
        "app": _APP,
        "key": _s("A key or chord in xdotool syntax, e.g. Return or super+c"),
    },
    "type_text": {
        "app": _APP,
        "text": _s("The literal text to type"),
    },
}

_REQUIRED: Final[dict[str, list[str]]] = {
    "get_app_state": ["app"],
    "click": ["app"],
    "perform_secondary_action": ["app", "element_index", "action"],
    "set_value": ["app", "element_index", "value"],
    "select_text": ["app", "element_index", "text"],
    "scroll": ["app", "element_index", "direction"],
    "drag": ["app", "from_x", "from_y", "to_x", "to_y"],
    "press_key": ["app", "key"],
    "type_text": ["app", "text"],
}


def input_schema(tool: str) -> dict[str, Any]:
    """The ``inputSchema`` Sky advertises for ``tool`` (our descriptions)."""
    schema: dict[str, Any] = {
        "additionalProperties": False,
        "properties": {k: dict(v) for k, v in _PROPERTIES[tool].items()},
        "type": "object",
    }
    if tool in _REQUIRED:
        schema["required"] = list(_REQUIRED[tool])
    return schema


def tool_annotations(tool: str) -> dict[str, bool]:
    read_only = tool in READ_ONLY_TOOLS
    return {
        "destructiveHint": False,
        "idempotentHint": read_only,
        "openWorldHint": False,
        "readOnlyHint": read_only,
    }


def structural(schema: dict[str, Any]) -> dict[str, Any]:
    """A schema with descriptions removed, for comparing shapes across backends."""
    props = schema.get("properties") or {}
    return {
        "additionalProperties": schema.get("additionalProperties", True),
        "properties": {
            name: {k: v for k, v in sorted(spec.items()) if k != "description"}
            for name, spec in sorted(props.items())
            if isinstance(spec, dict)
        },
        "required": sorted(schema.get("required") or []),
        "type": schema.get("type"),
    }


def tool_objects(descriptions: dict[str, str]) -> list[dict[str, Any]]:
    """The ``tools/list`` answer of a backend serving this surface with ``descriptions`` (one
    per tool, in the backend's own words): Sky's order, schemas and annotations, no ``title``
    and no ``outputSchema``."""
    return [
        {
            "annotations": tool_annotations(name),
            "description": descriptions[name],
            "inputSchema": input_schema(name),
            "name": name,
        }
        for name in TOOL_ORDER
    ]
