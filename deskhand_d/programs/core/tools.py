"""What a backend plugs into the server core, and what the core lends it.

What this owns: :class:`Tools`, the backend's part (its ``tools/list``, its ``tools/call``, the
client's answers to requests it sent, and the long-lived tasks it keeps beside the requests);
:class:`Client`, the core's side a backend may use (send to the client, start a task beside
the requests, wait for the client's answer); the :class:`ToolCall` a backend is handed and the
:class:`Outcome` it returns; and :func:`call_result`, the ``tools/call`` result Sky sends for an
outcome (pure).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from .jsonrpc import JsonObj

TELEMETRY_META = "codex/telemetry"


@dataclass(frozen=True, slots=True)
class ToolCall:
    """A ``tools/call`` as admitted at arrival: numbered from 1 in arrival order."""

    rid: object
    name: str
    arguments: JsonObj
    meta: JsonObj  # the request's ``params._meta`` ({} when absent or not an object)
    ordinal: int


@dataclass(slots=True)
class Outcome:
    """What a tool call produced, before it becomes a ``tools/call`` result."""

    content: list[dict[str, Any]] = field(default_factory=list)
    is_error: bool = False
    user_flow: bool = False  # the call showed the person a prompt (Sky's telemetry says so)
    meta: dict[str, Any] = field(default_factory=dict)  # extra ``_meta`` keys (Deskhand's own)
    # Raw lines written just before the reply, in the same burst (the simulator's garbage knob).
    preface: tuple[bytes, ...] = ()


def call_result(outcome: Outcome, *, telemetry: bool) -> JsonObj:
    """The ``tools/call`` result: content, ``isError`` only when true, ``_meta`` only when it
    has keys (Sky's ``codex/telemetry`` span when ``telemetry``)."""
    result: JsonObj = {"content": outcome.content}
    if outcome.is_error:
        result["isError"] = True
    meta: JsonObj = dict(outcome.meta)
    if telemetry:
        meta[TELEMETRY_META] = {"span": {"did_trigger_server_user_flow": outcome.user_flow}}
    if meta:
        result["_meta"] = meta
    return result


class Client(Protocol):
    """The core's side, as a backend sees it."""

    async def send(self, *messages: object, raw: tuple[bytes, ...] = ()) -> None:
        """Write ``raw`` lines, then the messages, as one uninterrupted burst."""
        ...

    def start_soon(self, fn: Callable[..., Awaitable[object]], *args: Any) -> None:
        """Run ``fn(*args)`` beside the requests (it is cancelled with them at the end)."""
        ...

    def awaiting_answer(self) -> AbstractContextManager[None]:
        """Mark a request as waiting for the client's answer: after end of input, which makes
        that answer impossible, the server does not wait for it to finish."""
        ...


class Tools(Protocol):
    """A backend's part of the server."""

    @property
    def server_version(self) -> str:
        """``serverInfo.version`` in the ``initialize`` answer."""
        ...

    @property
    def telemetry(self) -> bool:
        """Whether results carry Sky's ``_meta.codex/telemetry`` span."""
        ...

    def tool_list(self) -> list[JsonObj]:
        """The ``tools/list`` answer's ``tools``."""
        ...

    async def call(self, call: ToolCall) -> Outcome:
        """Handle one ``tools/call``; it may be cancelled (the client cancelled the request,
        or input ended), and then it is never answered."""
        ...

    def response(self, message: JsonObj) -> None:
        """A response from the client to a request the backend sent."""
        ...

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """The backend's long-lived tasks. Started with ``nursery.start`` before the first line
        is read (call ``task_status.started()`` once ready; open a nursery here for tasks of
        your own); cancelled after the last request, so cleanup goes in a ``finally``."""
        ...
