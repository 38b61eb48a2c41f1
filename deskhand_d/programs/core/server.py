"""The stdio MCP server core that both backend programs compose (trio shell).

What this owns: reading stdin and handing each line on (framing in :mod:`.jsonrpc`),
classifying it as request, notification, response, batch or garbage, answering the lifecycle
methods (:mod:`.lifecycle`), running every request in its own task, cancellation, numbering and
counting ``tools/call`` requests, writing replies one burst at a time under a lock, and the end
of input. What is the backend's own is a :class:`~.tools.Tools`: the simulator and the AT-SPI
server each plug in theirs, and the core lends them a :class:`~.tools.Client`. The optional
:class:`Record` sees the core's events (the simulator's traffic record).

Theory of operation: the backend's long-lived tasks are started first (``nursery.start``) in an
outer nursery; one reader task then feeds an inner nursery of requests. Requests get a task and
a cancel scope keyed by their JSON id; ``notifications/cancelled`` cancels the scope, and a
cancelled request is never answered. A ``tools/call`` is numbered and counted in flight when
its line arrives, so ordinals follow arrival order even though tasks run concurrently, and it
stays in flight until the backend returns or it is cancelled. At end of input, requests already
in progress get ``_EOF_GRACE`` seconds to finish (requests waiting for the client's answer,
which can no longer come, do not hold it up); then the requests are cancelled, then the
backend's tasks. A broken stdout ends serving quietly: there is nobody left to answer.
"""

from __future__ import annotations

import json
import os
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from typing import Any, Protocol

import trio

from . import texts
from .jsonrpc import (
    JsonObj,
    LineSplitter,
    classify,
    encode,
    error,
    id_key,
    random_id,
    reject_constant,
    result,
    valid_id,
)
from .lifecycle import Lifecycle
from .tools import ToolCall, Tools, call_result

_EOF_GRACE = 2.0  # seconds in-flight requests get to finish after stdin closes
Admitted = ToolCall | JsonObj | None  # a call, an immediate error reply, or "not a tools/call"


class Record(Protocol):
    """Where the core reports what it received and did (``message``, ``call_start``,
    ``call_end``), each with ``in_flight``, the tool calls being handled at that moment."""

    def write(self, event: str, **fields: Any) -> None: ...


class _NoRecord:
    def write(self, event: str, **fields: Any) -> None:
        pass


class _Stop(Exception):
    """stdout is gone; the server has nobody to talk to."""


class StdioServer:
    """MCP on a pair of file descriptors (stdin and stdout by default); see the module."""

    def __init__(self, *, record: Record | None = None, stdin: int = 0, stdout: int = 1) -> None:
        self._record: Record = record if record is not None else _NoRecord()
        self._in = trio.lowlevel.FdStream(os.dup(stdin))
        self._out = trio.lowlevel.FdStream(os.dup(stdout))
        self._lock = trio.Lock()
        self._tools: Tools | None = None
        self._lifecycle: Lifecycle | None = None
        self._calls = 0
        self._in_flight = 0
        self._scopes: dict[str, trio.CancelScope] = {}
        self._cancelled: set[str] = set()
        self._nursery: trio.Nursery | None = None
        # After end of input: wait until every request task is done or awaits the client.
        self._active = 0
        self._awaiting = 0
        self._draining = False
        self._settled = trio.Event()

    async def serve(self, tools: Tools) -> None:
        """Serve ``tools`` until stdin reaches end of file (or stdout breaks)."""
        self._tools = tools
        self._lifecycle = Lifecycle(tools.server_version, tools.tool_list)
        try:
            async with trio.open_nursery() as backend:
                await backend.start(tools.run)
                async with trio.open_nursery() as requests:
                    self._nursery = requests
                    await self._read_loop()
                    # stdin is closed: let requests already being handled finish (briefly),
                    # so a piped one-shot session still gets its answers.
                    self._draining = True
                    self._check_settled()
                    with trio.move_on_after(_EOF_GRACE):
                        await self._settled.wait()
                    requests.cancel_scope.cancel()
                backend.cancel_scope.cancel()
        except* _Stop:
            pass

    # --- what a backend may use (tools.Client) ------------------------------------------------

    async def send(self, *messages: object, raw: tuple[bytes, ...] = ()) -> None:
        """Write raw lines then messages as one uninterrupted burst."""
        payload = b"".join(raw) + b"".join(encode(m) for m in messages)
        async with self._lock:
            try:
                await self._out.send_all(payload)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise _Stop from None

    def start_soon(self, fn: Callable[..., Awaitable[object]], *args: Any) -> None:
        """Run ``fn(*args)`` beside the requests."""
        assert self._nursery is not None, "start_soon() while not serving"
        self._nursery.start_soon(fn, *args)

    @contextmanager
    def awaiting_answer(self) -> Iterator[None]:
        """The current request waits for the client's answer (see :class:`~.tools.Client`)."""
        self._awaiting += 1
        self._check_settled()
        try:
            yield
        finally:
            self._awaiting -= 1

    # --- plumbing -----------------------------------------------------------------------------

    def _check_settled(self) -> None:
        if self._draining and self._active <= self._awaiting:
            self._settled.set()

    async def _read_loop(self) -> None:
        lines = LineSplitter()
        while data := await self._in.receive_some(1 << 16):
            for line in lines.feed(data):
                self._on_line(line)
        if (last := lines.rest()) is not None:
            self._on_line(last)

    # --- inbound ------------------------------------------------------------------------------

    def _on_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line, parse_constant=reject_constant)
        except ValueError:
            self._record.write("message", kind="invalid", in_flight=self._in_flight)
            self.start_soon(self.send, error(random_id(), texts.PARSE_ERROR))
            return
        if isinstance(message, list):
            self._on_batch(message)
        elif isinstance(message, dict):
            self._on_message(message)
        else:
            self._record.write("message", kind="invalid", in_flight=self._in_flight)
            self.start_soon(self.send, error(random_id(), texts.PARSE_ERROR))

    def _on_message(self, msg: JsonObj) -> None:
        kind = classify(msg)
        self._record.write(
            "message",
            kind=kind,
            method=msg.get("method"),
            id=msg.get("id"),
            in_flight=self._in_flight,
        )
        if kind == "request":
            self._active += 1  # counted from arrival; the task's ``finally`` uncounts it
            self.start_soon(self._request, msg, self._admit(msg))
        elif kind == "notification":
            self._notification(msg)
        elif kind == "response":
            assert self._tools is not None
            self._tools.response(msg)
        else:
            rid = msg.get("id") if valid_id(msg.get("id")) else random_id()
            self.start_soon(self.send, error(rid, texts.PARSE_ERROR))

    def _on_batch(self, items: list[Any]) -> None:
        self._record.write("message", kind="batch", size=len(items), in_flight=self._in_flight)
        if not items:
            self.start_soon(self.send, error(random_id(), texts.EMPTY_BATCH))
            return
        kinds = [classify(i) if isinstance(i, dict) else "invalid" for i in items]
        if any(k not in ("request", "notification") for k in kinds):
            self.start_soon(self.send, error(random_id(), texts.PARSE_ERROR))
            return
        for item, kind in zip(items, kinds, strict=True):
            if kind == "notification":
                self._notification(item)
        requests = [i for i, k in zip(items, kinds, strict=True) if k == "request"]
        self._active += 1
        self.start_soon(self._batch, [(msg, self._admit(msg)) for msg in requests])

    def _notification(self, msg: JsonObj) -> None:
        if msg["method"] == "notifications/cancelled":
            rid = msg.get("params", {}).get("requestId")
            if valid_id(rid):
                key = id_key(rid)
                self._cancelled.add(key)
                scope = self._scopes.get(key)
                if scope is not None:
                    scope.cancel()

    # --- requests -----------------------------------------------------------------------------

    def _admit(self, msg: JsonObj) -> Admitted:
        """Validate, number and record a ``tools/call`` in arrival order (runs synchronously)."""
        if msg["method"] != "tools/call":
            return None
        rid, params = msg["id"], msg.get("params") or {}
        name, arguments, meta = params.get("name"), params.get("arguments"), params.get("_meta")
        if not isinstance(name, str):
            return error(rid, texts.INVALID_PARAMS, detail="tools/call needs a tool name")
        if arguments is None:
            arguments = {}
        if not isinstance(arguments, dict):
            return error(rid, texts.INVALID_PARAMS, detail="arguments must be an object")
        self._calls += 1
        self._in_flight += 1
        call = ToolCall(rid, name, arguments, meta if isinstance(meta, dict) else {}, self._calls)
        self._record.write(
            "call_start",
            id=rid,
            tool=name,
            arguments=arguments,
            call=call.ordinal,
            in_flight=self._in_flight,
        )
        return call

    async def _request(self, msg: JsonObj, admitted: Admitted) -> None:
        try:
            reply, preface = await self._execute(msg, admitted)
            if reply is not None:
                await self.send(reply, raw=preface)
        finally:
            self._active -= 1
            self._check_settled()

    async def _batch(self, requests: list[tuple[JsonObj, Admitted]]) -> None:
        try:
            await self._batch_inner(requests)
        finally:
            self._active -= 1
            self._check_settled()

    async def _batch_inner(self, requests: list[tuple[JsonObj, Admitted]]) -> None:
        replies: list[tuple[JsonObj | None, tuple[bytes, ...]]] = [(None, ())] * len(requests)

        async def one(i: int, msg: JsonObj, admitted: Admitted) -> None:
            replies[i] = await self._execute(msg, admitted)

        async with trio.open_nursery() as nursery:
            for i, (msg, admitted) in enumerate(requests):
                nursery.start_soon(one, i, msg, admitted)
        answered = [r for r, _ in replies if r is not None]
        preface = tuple(line for _, p in replies for line in p)
        if answered:
            await self.send(answered, raw=preface)

    @contextmanager
    def _scope(self, key: str) -> Iterator[trio.CancelScope]:
        with trio.CancelScope() as scope:
            self._scopes[key] = scope
            try:
                yield scope
            finally:
                del self._scopes[key]

    async def _execute(
        self, msg: JsonObj, admitted: Admitted
    ) -> tuple[JsonObj | None, tuple[bytes, ...]]:
        """Run one request; ``None`` as the reply means "never answer" (cancelled)."""
        rid, method, params = msg["id"], msg["method"], msg.get("params") or {}
        key = id_key(rid)
        reply: JsonObj | None = None
        preface: tuple[bytes, ...] = ()
        with self._scope(key) as scope:
            if key in self._cancelled:
                scope.cancel()  # cancelled before it started; still balances the record
            if isinstance(admitted, ToolCall):
                reply, preface = await self._tools_call(admitted)
            elif admitted is not None:
                reply = admitted
            else:
                assert self._lifecycle is not None
                reply = self._lifecycle.answer(rid, method, params)
        if key in self._cancelled:
            return None, ()
        return reply, preface

    async def _tools_call(self, call: ToolCall) -> tuple[JsonObj, tuple[bytes, ...]]:
        assert self._tools is not None
        status = "cancelled"
        try:
            outcome = await self._tools.call(call)
            status = "error" if outcome.is_error else "ok"
        finally:
            self._in_flight -= 1
            self._record.write(
                "call_end",
                id=call.rid,
                tool=call.name,
                call=call.ordinal,
                outcome=status,
                in_flight=self._in_flight,
            )
        body = call_result(outcome, telemetry=self._tools.telemetry)
        return result(call.rid, body), outcome.preface
