"""Argument shapes shared by several commands: targets, indices, points, and their checks."""

from __future__ import annotations

from deskhandctl import convert as c
from deskhandctl.argspec import Param


def click_target(params: dict[str, object]) -> str | None:
    has_index = params.get("element_index") is not None
    has_x, has_y = params.get("x") is not None, params.get("y") is not None
    if has_index and (has_x or has_y):
        return "give either --index or --x and --y, not both"
    if has_x != has_y:
        return "--x and --y go together"
    if not (has_index or has_x):
        return "say what to click: --index N, or --x X --y Y"
    return None


def target(*extra: Param) -> tuple[Param, ...]:
    """``--app`` and ``--state``, the action's own params, then ``--handoff``."""
    return (
        Param("--app", "app", "the app, as observed", metavar="APP", required=True),
        Param(
            "--state", "state_id", "the observed state id (single use)", metavar="ID", required=True
        ),
        *extra,
        Param(
            "--handoff",
            "handoff",
            "in jev mode: the token of Jev's planner handoff for this app",
            metavar="TOKEN",
        ),
    )


def index_param(help_text: str) -> Param:
    return Param(
        "--index", "element_index", help_text, convert=c.parse_index, metavar="N", required=True
    )


def point_param(flag: str, dest: str, help_text: str) -> Param:
    """A required ``X,Y`` option; the request gets ``<dest>_x`` and ``<dest>_y``."""
    return Param(flag, dest, help_text, convert=c.parse_point, metavar="X,Y", required=True)


SHOT = "save the screenshot to this file (mode 0600)"
BUTTONS = ("left", "right", "middle")
WAYS = ("up", "down", "left", "right")
SELECTIONS = ("text", "cursor_before", "cursor_after")


def verify_pair(params: dict[str, object]) -> str | None:
    if (params.get("verify_role") is None) != (params.get("verify_label") is None):
        return "--verify-role and --verify-label go together"
    return None


def steps(text: str) -> int:
    value = c.parse_index(text)
    if not 1 <= value <= 20:
        raise ValueError("must be between 1 and 20")
    return value
