"""Approval prompts: ``elicitation/create`` requests to the client and their answers.

What this owns: building the prompt (Sky's confirm-only form, or the form/URL variants the
scenario asks for), sending it with a fresh upper-case UUID string id, matching the client's
response by that id, and turning it into ``accept``, ``decline``, ``cancel`` or ``error``.

Theory of operation: each prompt runs in a task of its own, so a tool call waiting for it can be
cancelled without losing the answer, and further calls for the same app share the prompt that
is already open. A call parked on a prompt that has gone out tells the server core it awaits
the client's answer, so that the end of input does not wait for it (nobody can answer then).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import trio

from ..core import texts
from ..core.jsonrpc import JsonObj, random_id
from ..core.tools import Client
from .catalog import AppEntry
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
        client: Client,
    ) -> None:
        self.scenario = scenario
        self.record = record
        self._client = client
        self._by_id: dict[str, _Prompt] = {}
        self._pending_apps: dict[str, _Prompt] = {}

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
            self._client.start_soon(self._elicit, entry, prompt)
        await prompt.sent.wait()
        with self._client.awaiting_answer():
            await prompt.done.wait()
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
            await self._client.send(
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
