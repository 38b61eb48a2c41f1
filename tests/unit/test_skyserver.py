"""The stdio server core with a backend of the test's own plugged in, over real pipes.

What a backend can rely on: its long-lived tasks run before the first line is read and are
cancelled after the last request; its ``tools/call`` gets every call numbered in arrival order
and its result is shaped like Sky's; a cancelled call is never answered and leaves the flight
count; at end of input the core waits for work in progress but not for an answer the client
can no longer give; raw lines a backend asks for precede its reply."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from typing import Any

import trio

from deskhand_d.programs.core.jsonrpc import JsonObj, LineSplitter
from deskhand_d.programs.core.server import StdioServer
from deskhand_d.programs.core.tools import Client, Outcome, ToolCall


class Log:
    def __init__(self) -> None:
        self.lines: list[tuple[str, dict[str, Any]]] = []

    def write(self, event: str, **fields: Any) -> None:
        self.lines.append((event, fields))

    def events(self, event: str) -> list[dict[str, Any]]:
        return [f for e, f in self.lines if e == event]


class FakeTools:
    server_version = "test-1"
    telemetry = False

    def __init__(self, client: Client, log: Log) -> None:
        self.client = client
        self.log = log
        self.calls: list[ToolCall] = []
        self.responses: list[JsonObj] = []

    def tool_list(self) -> list[JsonObj]:
        return [{"name": "echo"}]

    def response(self, message: JsonObj) -> None:
        self.responses.append(message)

    async def run(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        self.log.write("run_started")
        task_status.started()
        try:
            await trio.sleep_forever()
        finally:
            self.log.write("run_stopped")

    async def call(self, call: ToolCall) -> Outcome:
        self.calls.append(call)
        if call.name == "hang":
            await trio.sleep_forever()
        if call.name == "ask":  # waits for an answer that only the client could give
            with self.client.awaiting_answer():
                await trio.sleep_forever()
        if call.name == "slow":
            await trio.sleep(0.2)
        preface = (b"noise\n",) if call.name == "noisy" else ()
        text = {"text": call.name, "type": "text"}
        return Outcome([text], is_error=call.name == "fail", meta={"k": 1}, preface=preface)


class Peer:
    """The client end: JSON lines into the server's stdin, lines out of its stdout."""

    def __init__(self, to_server: int, from_server: int) -> None:
        self._out = trio.lowlevel.FdStream(to_server)
        self._in = trio.lowlevel.FdStream(from_server)
        self._lines = LineSplitter()
        self._ready: list[bytes] = []

    async def send(self, message: object) -> None:
        await self._out.send_all(json.dumps(message).encode() + b"\n")

    async def line(self) -> bytes:
        while not self._ready:
            data = await self._in.receive_some(1 << 16)
            assert data, "the server closed its stdout"
            self._ready += self._lines.feed(data)
        return self._ready.pop(0)

    async def message(self) -> Any:
        return json.loads(await self.line())

    async def end_input(self) -> None:
        await self._out.aclose()


@asynccontextmanager
async def serving() -> AsyncIterator[tuple[Peer, FakeTools, Log, trio.Event]]:
    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    log = Log()
    server = StdioServer(record=log, stdin=in_r, stdout=out_w)  # the server keeps duplicates
    os.close(in_r)
    os.close(out_w)
    tools = FakeTools(server, log)
    done = trio.Event()

    async def serve() -> None:
        await server.serve(tools)
        done.set()

    peer = Peer(in_w, out_r)
    with trio.fail_after(10):
        async with trio.open_nursery() as nursery:
            nursery.start_soon(serve)
            yield peer, tools, log, done
            await peer.end_input()
            await done.wait()


def call(rid: object, name: str) -> JsonObj:
    params = {"name": name, "arguments": {"n": 1}, "_meta": {"m": 2}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


async def test_a_backend_plugs_in_its_tools_and_tasks() -> None:
    """The lifecycle answers with the backend's version and list; calls reach it numbered, with
    their arguments and _meta; results are shaped as Sky's; its tasks span the whole serve."""
    async with serving() as (peer, tools, log, done):
        await peer.send({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}})
        answer = await peer.message()
        assert answer["error"]["code"] == -32602  # protocolVersion missing
        init = {"protocolVersion": "2025-06-18"}
        await peer.send({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": init})
        result = (await peer.message())["result"]
        assert result["serverInfo"] == {"name": "Computer Use", "version": "test-1"}
        assert result["protocolVersion"] == "2025-06-18"
        await peer.send({"jsonrpc": "2.0", "id": 3, "method": "tools/list"})
        assert (await peer.message())["result"] == {"tools": [{"name": "echo"}]}
        await peer.send(call(4, "echo"))
        assert await peer.message() == {
            "id": 4,
            "jsonrpc": "2.0",
            "result": {"_meta": {"k": 1}, "content": [{"text": "echo", "type": "text"}]},
        }
        await peer.send(call("five", "fail"))
        assert (await peer.message())["result"]["isError"] is True
        assert [(c.rid, c.name, c.ordinal) for c in tools.calls] == [
            (4, "echo", 1),
            ("five", "fail", 2),
        ]
        assert tools.calls[0].arguments == {"n": 1} and tools.calls[0].meta == {"m": 2}
        await peer.send({"jsonrpc": "2.0", "id": "P", "result": {"action": "accept"}})
        await peer.send({"jsonrpc": "2.0", "id": 6, "method": "ping"})
        assert (await peer.message())["id"] == 6
        assert tools.responses == [{"jsonrpc": "2.0", "id": "P", "result": {"action": "accept"}}]
        assert not done.is_set()
    events = [e for e, _ in log.lines if e.startswith("run_")]
    assert events == ["run_started", "run_stopped"]
    assert log.lines[0][0] == "run_started"  # before the first line was read
    assert [f["outcome"] for f in log.events("call_end")] == ["ok", "error"]


async def test_a_cancelled_call_is_never_answered() -> None:
    """notifications/cancelled ends the backend's call: no reply, and it leaves the flight."""
    async with serving() as (peer, _, log, _):
        await peer.send(call(1, "hang"))
        await peer.send(call(2, "hang"))
        await peer.send({"jsonrpc": "2.0", "id": 9, "method": "ping"})
        assert (await peer.message())["id"] == 9
        assert [f["in_flight"] for f in log.events("call_start")] == [1, 2]
        cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled"}
        await peer.send({**cancel, "params": {"requestId": 1}})
        await peer.send({**cancel, "params": {"requestId": 2}})
        await peer.send({"jsonrpc": "2.0", "id": 10, "method": "ping"})
        assert await peer.message() == {"id": 10, "jsonrpc": "2.0", "result": {}}
    ends = log.events("call_end")
    # both end as cancelled, in whichever order trio runs their cancellations
    assert sorted((f["id"], f["outcome"]) for f in ends) == [(1, "cancelled"), (2, "cancelled")]
    assert ends[-1]["in_flight"] == 0


async def test_end_of_input_waits_for_work_but_not_for_answers() -> None:
    """After EOF a slow call still gets its reply; a call waiting on the client does not hold
    the server up for the whole grace period."""
    async with serving() as (peer, _, log, done):
        await peer.send(call(1, "ask"))
        await peer.send(call(2, "slow"))
        await peer.send({"jsonrpc": "2.0", "id": 3, "method": "ping"})
        assert (await peer.message())["id"] == 3
        start = trio.current_time()
        await peer.end_input()
        assert (await peer.message())["id"] == 2
        await done.wait()
        assert trio.current_time() - start < 1.5  # the grace period is 2 s
    assert {(f["id"], f["outcome"]) for f in log.events("call_end")} == {
        (1, "cancelled"),
        (2, "ok"),
    }


async def test_raw_lines_come_first_in_the_same_burst() -> None:
    """An outcome's preface lines are written just before its reply."""
    async with serving() as (peer, _, _, _):
        await peer.send(call(1, "noisy"))
        assert await peer.line() == b"noise"
        assert (await peer.message())["id"] == 1
