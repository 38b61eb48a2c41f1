"""MCP over stdio for the AT-SPI backend: the simulator's server with a real desktop behind it.

What this owns: :class:`AtspiServer`, which reuses everything transport-level from
:class:`deskhand_d.backends.sim.server.Server` (newline-delimited JSON-RPC on stdin/stdout,
Swift-SDK-shaped lifecycle and errors, one task per request, cancellation) and replaces only
what differs: ``tools/call`` goes to :class:`~.engine.Backend`, and ``tools/list`` carries
descriptions written for a Linux desktop. Sky's approval prompt is not sent: on Linux the
daemon's own consent gate is the one that asks.
"""

from __future__ import annotations

from typing import Any, Final

import trio

from .. import surface
from ..sim.jsonrpc import JsonObj
from ..sim.record import Recorder
from ..sim.scenario import Scenario
from ..sim.server import Server, _Call
from .engine import Backend

DESCRIPTIONS: Final = {
    "list_apps": (
        "List the desktop's applications: those running (registered for accessibility) "
        "first, then every installed one, each with its desktop-file id."
    ),
    "get_app_state": (
        "Start using an app (launching it if it is not running) and report its active "
        "window: an indexed accessibility tree plus a screenshot. Call it once per turn "
        "before other actions on that app."
    ),
    "click": (
        "Click an element by its index in the latest state, or at a pixel position in "
        "the latest window screenshot."
    ),
    "perform_secondary_action": (
        "Run one of the accessibility actions an element lists under Secondary Actions."
    ),
    "set_value": "Replace the text or numeric value of an element marked settable.",
    "select_text": (
        "Select text inside a text element, or put the caret just before or after it. "
        "Quote the text as the tree shows it; add prefix or suffix text when it occurs "
        "more than once."
    ),
    "scroll": "Scroll inside an element by a number of pages (fractions allowed).",
    "drag": "Press at one screenshot position, move to another and release.",
    "press_key": (
        "Press one key or key chord, named the way xdotool names them, for example "
        "Return, Tab, Escape, ctrl+a or KP_7."
    ),
    "type_text": "Type the text as keystrokes; a newline acts as Return.",
}


def tool_list() -> list[dict[str, Any]]:
    return surface.tool_objects(DESCRIPTIONS)


class AtspiServer(Server):
    """The simulator's MCP server, answering tool calls from the real desktop."""

    def __init__(self, backend: Backend, *, stdin: int = 0, stdout: int = 1) -> None:
        super().__init__(Scenario(), Recorder(None), stdin=stdin, stdout=stdout)
        self.backend = backend

    async def serve(self) -> None:
        async with trio.open_nursery() as nursery:
            self.backend.attach(nursery)
            try:
                await super().serve()
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(2):
                    await self.backend.aclose()
                nursery.cancel_scope.cancel()

    def _lifecycle(self, rid: object, method: str, params: JsonObj) -> JsonObj:
        if method == "tools/list":
            return self._result(rid, {"tools": tool_list()})
        return super()._lifecycle(rid, method, params)

    async def _tools_call(self, call: _Call) -> tuple[JsonObj, tuple[bytes, ...]]:
        try:
            outcome = await self.backend.call(call.name, call.arguments)
        finally:
            self._in_flight -= 1
        return self._result(call.rid, self._call_result(outcome)), ()
