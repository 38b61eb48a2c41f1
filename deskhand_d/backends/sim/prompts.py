"""Approval prompts: ``elicitation/create`` requests to the client and their answers.

What this owns: building the prompt (Sky's confirm-only form, or the form/URL variants the
scenario asks for), sending it with a fresh upper-case UUID string id, matching the client's
response by that id, and turning it into ``accept``, ``decline``, ``cancel`` or ``error``.

Theory of operation: each prompt runs in a task of its own, so a tool call waiting for it can be
cancelled without losing the answer, and further calls for the same app share the prompt that
is already open. ``waiting`` counts calls parked on a prompt that has gone out; the server uses
it to tell "still working" from "stuck until the client answers" when input ends.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import trio

from . import texts
from .catalog import AppEntry
from .jsonrpc import JsonObj, random_id
from .record import Recorder
from .scenario import Scenario


@dataclass(slots=True)
class _Prompt:
    """One prompt in flight: ``sent`` once it is on the wire, ``done`` once answered."""

    sent: trio.Event = field(default_factory=trio.Event)
    done: trio.Event = field(default_factory=trio.Event)
    answer: str = "error"


class Prompts:
    def __init__(
        self,
        scenario: Scenario,
        record: Recorder,
        send: Callable[..., Awaitable[None]],
        spawn: Callable[..., None],
        changed: Callable[[], None],
    ) -> None:
        self.scenario = scenario
        self.record = record
        self._send = send
        self._spawn = spawn
        self._changed = changed
        self._by_id: dict[str, _Prompt] = {}
        self._pending_apps: dict[str, _Prompt] = {}
        self.waiting = 0

    def response(self, msg: JsonObj) -> None:
        """A client response; answers the prompt with that id (other ids are ignored)."""
        rid: Any = msg["id"]
        prompt = self._by_id.pop(rid, None) if isinstance(rid, str) else None
        if prompt is None:
            return
        result = msg.get("result")
        action = result.get("action") if isinstance(result, dict) and "error" not in msg else None
        prompt.answer = action if action in ("accept", "decline", "cancel") else "error"
        prompt.done.set()

    async def approve(self, entry: AppEntry) -> str:
        """Ask the client about ``entry`` (sharing a prompt already in flight for it)."""
        prompt = self._pending_apps.get(entry.bundle_id)
        if prompt is None:
            prompt = _Prompt()
            self._pending_apps[entry.bundle_id] = prompt
            self._spawn(self._elicit, entry, prompt)
        await prompt.sent.wait()
        self.waiting += 1
        self._changed()
        try:
            await prompt.done.wait()
        finally:
            self.waiting -= 1
        return prompt.answer

    async def _elicit(self, entry: AppEntry, shared: _Prompt) -> None:
        sc = self.scenario
        try:
            if sc.elicitation_delay():
                await trio.sleep(sc.elicitation_delay())
            eid = random_id()
            message = texts.approval_message(sc.host, entry.display(sc.locale))
            params: JsonObj
            if sc.elicitation == "url":
                params = {
                    "elicitationId": random_id(),
                    "message": message,
                    "mode": "url",
                    "url": f"https://example.invalid/deskhand-sim/approve/{entry.bundle_id}",
                }
            else:
                schema: JsonObj = {"properties": {}, "type": "object"}
                if sc.elicitation == "form":
                    schema = {
                        "properties": {
                            "reason": {"description": "Why the app is needed", "type": "string"}
                        },
                        "required": ["reason"],
                        "type": "object",
                    }
                params = {
                    "_meta": dict(texts.APPROVAL_META),
                    "message": message,
                    "requestedSchema": schema,
                }
            prompt = _Prompt()
            self._by_id[eid] = prompt
            self.record.write("elicitation", id=eid, app=entry.bundle_id)
            await self._send(
                {"id": eid, "jsonrpc": "2.0", "method": "elicitation/create", "params": params}
            )
            shared.sent.set()
            await prompt.done.wait()
            self.record.write(
                "elicitation_answer", id=eid, app=entry.bundle_id, answer=prompt.answer
            )
            shared.answer = prompt.answer
        finally:
            self._pending_apps.pop(entry.bundle_id, None)
            shared.sent.set()
            shared.done.set()
