"""The Jev loop's view of the desktop: the native service, minus stateIds.

Every observation and action of a run passes the same gates as a native op (emergency lock,
allowlist, recovery, Deskhand's consent) and the same action queue, approvals and audit. What
differs: no stateIds (the loop re-reads the tree itself before each action) and no handoff
spending (the run's actions are charged to the turn's Jev budget instead).
"""

from __future__ import annotations

from typing import Any

import trio

from deskhand_d import errors as E
from deskhand_d.jev.types import Prepared
from deskhand_d.native.service import Caller, NativeService, refused_if_raised
from deskhand_d.words import action

WAIT_S = 0.5


def tool_for(p: Prepared) -> tuple[str, dict[str, Any]]:
    """The backend tool and arguments for a prepared action (coordinates never get here)."""
    if p.kind == "click_element" and p.index is not None:
        return "click", {"element_index": p.index}
    if p.kind == "set_value" and p.index is not None and p.text is not None:
        return "set_value", {"element_index": p.index, "value": p.text}
    if p.kind == "type_text" and p.text:
        return "type_text", {"text": p.text}
    if p.kind == "press_key" and p.key:
        return "press_key", {"key": p.key}
    if p.kind == "scroll" and p.index is not None and p.direction is not None:
        return "scroll", {"element_index": p.index, "direction": p.direction, "pages": 1}
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
        tool, args = tool_for(prepared)
        service, caller, app = self.service, self.caller, self.app
        with refused_if_raised():
            service.check_unlocked()
            service.check_app(app)
            service.check_recovery(caller.session, app, observing=False)
            await service.admit(caller, app)
        res = await service.dispatch_action(caller, tool, app, args)
        if res.output.is_error:
            raise E.BackendError(
                f"the backend reported an error for {action(tool)}: "
                f"{res.output.text.strip()[:300]}",
                data={"app": app},
                delivery="dispatched",
            )
