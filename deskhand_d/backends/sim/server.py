"""The JSON-RPC side of the simulator: MCP over newline-delimited JSON on stdin and stdout.

What this owns: reading stdin (split on LF only), classifying each line as request,
notification, response or garbage, answering the MCP lifecycle methods the way the Swift SDK
does (initialize, ping, tools/list, error shapes), running every request in its own task,
writing compact key-sorted JSON one object per line under a lock, cancellation, the
transport-level scenario knobs (delay, hang, crash, garbage line) and the traffic record.

Theory of operation: one reader task feeds a nursery. Requests get a task and a cancel scope
keyed by their JSON id; ``notifications/cancelled`` cancels the scope, and a cancelled request
is never answered. A ``tools/call`` is numbered and recorded when its line arrives, so ordinals
follow arrival order even though tasks run concurrently. Approval prompts live in
:mod:`.prompts`. Nothing is written to stderr unless the process is misused.
"""

from __future__ import annotations

import json
import os
import signal
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

import trio

from . import texts
from .engine import Engine, Outcome
from .jsonrpc import JsonObj, classify, encode, error, id_key, random_id, reject_constant, valid_id
from .prompts import Prompts
from .record import Recorder
from .scenario import Scenario
from .tools import tool_list


@dataclass(slots=True)
class _Call:
    """A ``tools/call`` admitted at arrival: numbered and recorded before its task runs."""

    rid: object
    name: str
    arguments: JsonObj
    meta: JsonObj
    ordinal: int


_EOF_GRACE = 2.0  # seconds in-flight requests get to finish after stdin closes
Admitted = _Call | JsonObj | None  # a call, an immediate error reply, or "not a tools/call"


class _Stop(Exception):
    """stdout is gone; the simulator has nobody to talk to."""


class Server:
    def __init__(
        self, scenario: Scenario, recorder: Recorder, *, stdin: int = 0, stdout: int = 1
    ) -> None:
        self.scenario = scenario
        self.engine = Engine(scenario)
        self.record = recorder
        self._in = trio.lowlevel.FdStream(os.dup(stdin))
        self._out = trio.lowlevel.FdStream(os.dup(stdout))
        self._lock = trio.Lock()
        self._initialized = False
        self._calls = 0
        self._in_flight = 0
        self._scopes: dict[str, trio.CancelScope] = {}
        self._cancelled: set[str] = set()
        self._nursery: trio.Nursery | None = None
        self.prompts = Prompts(scenario, recorder, self.send, self._spawn, self._check_settled)
        # After end of input: wait until every request task is done or stuck on a prompt.
        self._active = 0
        self._draining = False
        self._settled = trio.Event()

    # --- plumbing -----------------------------------------------------------------------------

    async def serve(self) -> None:
        """Serve until stdin reaches end of file (or stdout breaks)."""
        try:
            async with trio.open_nursery() as nursery:
                self._nursery = nursery
                nursery.start_soon(self._signals)
                await self._read_loop()
                # stdin is closed: let requests already being handled finish (briefly), so a
                # piped one-shot session still gets its answers; prompts can never be answered.
                self._draining = True
                self._check_settled()
                with trio.move_on_after(_EOF_GRACE):
                    await self._settled.wait()
                nursery.cancel_scope.cancel()
        except* _Stop:
            pass
        finally:
            self.record.close()

    async def _signals(self) -> None:
        with trio.open_signal_receiver(signal.SIGUSR1, signal.SIGUSR2) as signals:
            async for signum in signals:
                if signum == signal.SIGUSR1:
                    self.engine.end_turn()
                    self.record.write("signal", name="SIGUSR1", effect="turn_ended")
                else:
                    self.engine.stop()
                    self.record.write("signal", name="SIGUSR2", effect="stop")

    async def _read_loop(self) -> None:
        buf = bytearray()
        scanned = 0
        while True:
            data = await self._in.receive_some(1 << 16)
            if not data:
                break
            buf += data
            while (end := buf.find(b"\n", scanned)) >= 0:
                line = bytes(buf[:end])
                del buf[: end + 1]
                scanned = 0
                self._on_line(line)
            scanned = len(buf)
        if buf.strip():
            self._on_line(bytes(buf))

    async def send(self, *messages: object, raw: tuple[bytes, ...] = ()) -> None:
        """Write raw lines then messages as one uninterrupted burst."""
        payload = b"".join(raw) + b"".join(encode(m) for m in messages)
        async with self._lock:
            try:
                await self._out.send_all(payload)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                raise _Stop from None

    def _check_settled(self) -> None:
        if self._draining and self._active <= self.prompts.waiting:
            self._settled.set()

    def _spawn(self, fn: Any, *args: Any) -> None:
        assert self._nursery is not None
        self._nursery.start_soon(fn, *args)

    # --- inbound ------------------------------------------------------------------------------

    def _on_line(self, line: bytes) -> None:
        if not line.strip():
            return
        try:
            message = json.loads(line, parse_constant=reject_constant)
        except ValueError:
            self.record.write("message", kind="invalid", in_flight=self._in_flight)
            self._spawn(self.send, error(random_id(), texts.PARSE_ERROR))
            return
        if isinstance(message, list):
            self._on_batch(message)
        elif isinstance(message, dict):
            self._on_message(message)
        else:
            self.record.write("message", kind="invalid", in_flight=self._in_flight)
            self._spawn(self.send, error(random_id(), texts.PARSE_ERROR))

    def _on_message(self, msg: JsonObj) -> None:
        kind = classify(msg)
        self.record.write(
            "message",
            kind=kind,
            method=msg.get("method"),
            id=msg.get("id"),
            in_flight=self._in_flight,
        )
        if kind == "request":
            self._active += 1  # counted from arrival; the task's ``finally`` uncounts it
            self._spawn(self._request, msg, self._admit(msg))
        elif kind == "notification":
            self._notification(msg)
        elif kind == "response":
            self.prompts.response(msg)
        else:
            rid = msg.get("id") if valid_id(msg.get("id")) else random_id()
            self._spawn(self.send, error(rid, texts.PARSE_ERROR))

    def _on_batch(self, items: list[Any]) -> None:
        self.record.write("message", kind="batch", size=len(items), in_flight=self._in_flight)
        if not items:
            self._spawn(self.send, error(random_id(), texts.EMPTY_BATCH))
            return
        kinds = [classify(i) if isinstance(i, dict) else "invalid" for i in items]
        if any(k not in ("request", "notification") for k in kinds):
            self._spawn(self.send, error(random_id(), texts.PARSE_ERROR))
            return
        for item, kind in zip(items, kinds, strict=True):
            if kind == "notification":
                self._notification(item)
        requests = [i for i, k in zip(items, kinds, strict=True) if k == "request"]
        self._active += 1
        self._spawn(self._batch, [(msg, self._admit(msg)) for msg in requests])

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
        call = _Call(rid, name, arguments, meta if isinstance(meta, dict) else {}, self._calls)
        self.record.write(
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
            if isinstance(admitted, _Call):
                reply, preface = await self._tools_call(admitted)
            elif admitted is not None:
                reply = admitted
            else:
                reply = self._lifecycle(rid, method, params)
        if key in self._cancelled:
            return None, ()
        return reply, preface

    def _lifecycle(self, rid: object, method: str, params: JsonObj) -> JsonObj:
        if method == "initialize":
            if self._initialized:
                return error(rid, texts.ALREADY_INITIALIZED)
            wanted = params.get("protocolVersion")
            if not isinstance(wanted, str):
                return error(rid, texts.INVALID_PARAMS, detail="protocolVersion must be a string")
            version = (
                wanted
                if wanted in texts.SUPPORTED_PROTOCOL_VERSIONS
                else texts.LATEST_PROTOCOL_VERSION
            )
            self._initialized = True
            return self._result(
                rid,
                {
                    "capabilities": {"tools": {"listChanged": False}},
                    "protocolVersion": version,
                    "serverInfo": {
                        "name": texts.SERVER_NAME,
                        "version": self.scenario.server_version,
                    },
                },
            )
        if method == "ping":
            return self._result(rid, {})
        if method == "tools/list":
            return self._result(rid, {"tools": tool_list()})
        return error(rid, texts.METHOD_NOT_FOUND, method=method)

    @staticmethod
    def _result(rid: object, result: JsonObj) -> JsonObj:
        return {"id": rid, "jsonrpc": "2.0", "result": result}

    async def _tools_call(self, call: _Call) -> tuple[JsonObj, tuple[bytes, ...]]:
        sc, name, ordinal = self.scenario, call.name, call.ordinal
        status = "cancelled"
        try:
            if sc.delay_for(name):
                await trio.sleep(sc.delay_for(name))
            if sc.crash is not None and sc.crash.matches(name, ordinal):
                await self._crash(call.rid)
            if any(h.matches(name, ordinal) for h in sc.hang):
                await trio.sleep_forever()
            outcome = await self.engine.call(
                name, call.arguments, call.meta, ordinal, self.prompts.approve
            )
            status = "error" if outcome.is_error else "ok"
        finally:
            self._in_flight -= 1
            self.record.write(
                "call_end",
                id=call.rid,
                tool=name,
                call=ordinal,
                outcome=status,
                in_flight=self._in_flight,
            )
        garbage = tuple((g.text + "\n").encode() for g in sc.garbage if g.matches(name, ordinal))
        return self._result(call.rid, self._call_result(outcome)), garbage

    def _call_result(self, outcome: Outcome) -> JsonObj:
        result: JsonObj = {"content": outcome.content}
        if outcome.is_error:
            result["isError"] = True
        meta: JsonObj = dict(outcome.meta)
        if self.scenario.telemetry:
            span = {"did_trigger_server_user_flow": outcome.user_flow}
            meta["codex/telemetry"] = {"span": span}
        if meta:
            result["_meta"] = meta
        return result

    async def _crash(self, rid: object) -> None:
        assert self.scenario.crash is not None
        self.record.write("crash", id=rid, exit_code=self.scenario.crash.exit_code)
        if self.scenario.crash.partial_line:
            async with self._lock:
                await self._out.send_all(
                    b'{"id":' + json.dumps(rid).encode() + b',"jsonrpc":"2.0","res'
                )
        os._exit(self.scenario.crash.exit_code)
