"""The AT-SPI backend's part of the stdio server: the real desktop's tools.

What this owns: :class:`AtspiTools`, what this backend plugs into the server core
(:mod:`deskhand_d.programs.core.server`, which owns the wire: framing, lifecycle, one task
per request, cancellation): ``tools/list`` with descriptions written for a Linux desktop,
``tools/call`` handed to :class:`~.engine.Backend`, and the backend's long-lived tasks (the bus
connection's receiver, in a nursery of its own) with their cleanup. Sky's approval prompt is
not sent: on Linux the daemon's own consent gate is the one that asks, so the client is never
asked anything. Results carry Sky's telemetry span like Sky's, and the ``deskhand/delivery``
note where an action did not do all it was asked (:data:`~deskhand_d.surface.
DELIVERY_META`, set by the engine).
"""

from __future__ import annotations

from typing import Any, Final

import trio

from deskhand_d import surface

from ..core import texts
from ..core.jsonrpc import JsonObj
from ..core.tools import Outcome, ToolCall
from .engine import Backend

_CLOSE_WITHIN: Final = 2.0  # seconds the backend gets to close its connections at the end

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


class AtspiTools:
    """The Linux desktop's tools, for the server core's ``StdioServer``."""

    server_version: Final = texts.DEFAULT_SERVER_VERSION
    telemetry: Final = True

    def __init__(self, backend: Backend) -> None:
        self.backend = backend

    def tool_list(self) -> list[JsonObj]:
        return tool_list()

    def response(self, message: JsonObj) -> None:
        pass  # this server sends the client no requests, so an answer answers nothing

    async def call(self, call: ToolCall) -> Outcome:
        return await self.backend.call(call.name, call.arguments)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        async with trio.open_nursery() as nursery:
            self.backend.attach(nursery)
            await nursery.start(self.backend.reaper.serve)
            task_status.started()
            try:
                await trio.sleep_forever()
            finally:
                with trio.CancelScope(shield=True), trio.move_on_after(_CLOSE_WITHIN):
                    await self.backend.aclose()
