"""The Jev loop's view of the desktop: the native service, minus stateIds.

Every observation and action of a run passes the same gates as a native op (emergency lock,
allowlist, recovery, Deskhand's consent) and the same action queue, approvals and audit. What
differs: no stateIds (the loop re-reads the tree itself before each action) and no handoff
spending (the run's actions are charged to the turn's Jev budget instead).
"""

from __future__ import annotations

import trio

from deskhand_d import errors as E
from deskhand_d.backends.mcpclient.toolcalls import ToolCall, on_element, plain
from deskhand_d.jev.types import Prepared
from deskhand_d.native.service import Caller, NativeService
from deskhand_d.nextsteps import action

WAIT_S = 0.5


def tool_for(p: Prepared) -> ToolCall:
    """The backend call for a prepared action (coordinates never get here), built by the
    same builders as a native action's (:mod:`deskhand_d.backends.mcpclient.toolcalls`)."""
    if p.kind == "click_element" and p.index is not None:
        return on_element("click", p.index)
    if p.kind == "set_value" and p.index is not None and p.text is not None:
        return on_element("set_value", p.index, value=p.text)
    if p.kind == "type_text" and p.text:
        return plain("type_text", text=p.text)
    if p.kind == "press_key" and p.key:
        return plain("press_key", key=p.key)
    if p.kind == "scroll" and p.index is not None and p.direction is not None:
        return on_element("scroll", p.index, direction=p.direction, pages=1)
    raise E.HandoffRequired(
        f"{p.kind} needs the calling agent or the person; Jev runs never dispatch it",
        delivery="refused",
    )


class ServiceDesk:
    def __init__(self, service: NativeService, caller: Caller, app: str) -> None:
        self.service = service
        self.caller = caller
        self.app = app

    async def observe(self) -> str:
        res, _ = await self.service.observe_tree(self.caller, self.app)
        return res.output.text

    async def act(self, prepared: Prepared) -> None:
        if prepared.kind == "wait":
            await trio.sleep(WAIT_S)
            return
        call = tool_for(prepared)
        res = await self.service.run_step(self.caller, self.app, call)
        if res.output.is_error:
            raise E.BackendError(
                f"the backend reported an error for {action(call.tool)}: "
                f"{res.output.text.strip()[:300]}",
                data={"app": self.app},
                delivery="dispatched",
            )
