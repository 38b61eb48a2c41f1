"""Which backend tool a client's action request calls, with which arguments. Pure.

What this owns: :class:`ToolCall`, an action as the backend will receive it (the tool, its
arguments without the app and without the stateId, which never leaves the daemon) together
with what the stateId rules need to know of it (the element it names, the points it touches);
its builders (:func:`on_element`, :func:`plain`), which every caller uses (Jev's loop too,
``deskhand_d.jev.desk``); and :func:`for_request`, the one mapping from the client protocol's
action requests to it.
The arguments are then fitted to the backend's advertised schema by :mod:`.arguments`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from deskhand_d.errors import BadRequest
from deskhand_d.protocol import (
    Action,
    Click,
    Drag,
    PerformSecondaryAction,
    PressKey,
    Scroll,
    SelectText,
    TypeText,
)

Point = tuple[float, float]


class ToolCall(msgspec.Struct, frozen=True, kw_only=True):
    tool: str
    args: dict[str, Any]
    element_index: int | None = None  # the element it acts on, if it names one
    points: tuple[Point, ...] = ()  # where it acts by coordinates: a click's point, a drag's ends


def on_element(tool: str, index: int, /, **args: Any) -> ToolCall:
    """A call acting on element ``index``: its arguments are the index, then ``args``."""
    return ToolCall(tool=tool, args={"element_index": index, **args}, element_index=index)


def plain(tool: str, /, **args: Any) -> ToolCall:
    """A call that names no element and no point (keys, text)."""
    return ToolCall(tool=tool, args=args)


def check_click_target(element_index: int | None, x: float | None, y: float | None) -> None:
    """Validate click's target rule: exactly one of element_index or the pair x/y."""
    has_xy = x is not None or y is not None
    if (element_index is None) == (not has_xy):
        raise BadRequest("give exactly one click target: element_index, or both x and y")
    if has_xy and (x is None or y is None):
        raise BadRequest("a coordinate click needs both x and y")


def _given(req: Action, *names: str) -> dict[str, Any]:
    """The optional fields the client set (unset ones are not sent: the backend's defaults)."""
    return {n: getattr(req, n) for n in names if getattr(req, n) is not None}


def for_request(req: Action) -> ToolCall:
    """The backend call an action request makes (:class:`BadRequest` for an invalid target)."""
    if isinstance(req, Click):
        check_click_target(req.element_index, req.x, req.y)
        extra = _given(req, "click_count", "mouse_button")
        if req.element_index is not None:
            return on_element("click", req.element_index, **extra)
        assert req.x is not None and req.y is not None  # check_click_target made sure
        args = {"x": req.x, "y": req.y, **extra}
        return ToolCall(tool="click", args=args, points=((req.x, req.y),))
    if isinstance(req, Drag):
        args = {"from_x": req.from_x, "from_y": req.from_y, "to_x": req.to_x, "to_y": req.to_y}
        ends = ((req.from_x, req.from_y), (req.to_x, req.to_y))
        return ToolCall(tool="drag", args=args, points=ends)
    if isinstance(req, PressKey):
        return plain("press_key", key=req.key)
    if isinstance(req, TypeText):
        return plain("type_text", text=req.text)
    index = req.element_index
    if isinstance(req, PerformSecondaryAction):
        return on_element("perform_secondary_action", index, action=req.action)
    if isinstance(req, Scroll):
        return on_element("scroll", index, direction=req.direction, **_given(req, "pages"))
    if isinstance(req, SelectText):
        extra = _given(req, "prefix", "suffix", "selection")
        return on_element("select_text", index, text=req.text, **extra)
    return on_element("set_value", index, value=req.value)
