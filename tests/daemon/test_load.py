"""Load: 50 concurrent clients x 200 requests each, with no lost or mismatched reply.

Real concurrency: each client is a trio task with its own trio-websocket connection to the
daemon's Unix socket. Half speak JSON, half msgpack; most pipeline several requests before
reading (replies may come back in any order and are matched by id), some go one at a time and
reuse the same id for every request, which is legal once the previous reply has arrived.
"""

from __future__ import annotations

import json
import random
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import msgspec
import pytest
import trio
import trio_websocket
from dhtest.daemon import DaemonProc, running_daemon
from dhtest.wsclient import SyncClient

JSON = "deskhand.v1.json"
MSGPACK = "deskhand.v1.msgpack"
CLIENTS = 50
REQUESTS_PER_CLIENT = 200
STATUS_EVERY = 10  # every 10th request is a status, the rest are pings
DEPTHS = (1, 1, 4, 8, 16, 32)  # pipelining depth by client index; the daemon allows 64
MAX_ID = 2**53 - 1
TIME_LIMIT_S = 90.0


@pytest.fixture(scope="module")
def load_daemon() -> Iterator[DaemonProc]:
    """A daemon with default limits."""
    with running_daemon() as d:
        yield d


@dataclass
class Tally:
    """What every client saw, for the assertions at the end."""

    sent: Counter[str] = field(default_factory=Counter)
    matched: Counter[str] = field(default_factory=Counter)
    problems: list[str] = field(default_factory=list)
    pending: dict[int, int] = field(default_factory=dict)  # client -> requests without reply


class Wire:
    def __init__(self, subprotocol: str) -> None:
        self.binary = subprotocol == MSGPACK

    def encode(self, obj: dict[str, Any]) -> str | bytes:
        return msgspec.msgpack.encode(obj) if self.binary else json.dumps(obj)

    def decode(self, data: str | bytes) -> Any:
        if self.binary:
            assert isinstance(data, bytes), "msgpack connection got a text frame"
            return msgspec.msgpack.decode(data)
        assert isinstance(data, str), "JSON connection got a binary frame"
        return json.loads(data)


async def one_client(path: str, index: int, daemon_pid: int, tally: Tally) -> None:
    subprotocol = MSGPACK if index % 2 else JSON
    depth = DEPTHS[index % len(DEPTHS)]
    reuse_id = depth == 1 and (index // len(DEPTHS)) % 2 == 0  # one id for every request
    wire = Wire(subprotocol)
    rng = random.Random(index)
    stream = await trio.open_unix_socket(path)
    async with stream, trio.open_nursery() as nursery:
        ws = await trio_websocket.wrap_client_stream(
            nursery, stream, "localhost", "/v1", subprotocols=[subprotocol]
        )
        assert ws.subprotocol == subprotocol
        hello = {"op": "hello", "id": 0, "protocol": 1, "client": {"name": f"load-{index}"}}
        await ws.send_message(wire.encode(hello))
        welcome = wire.decode(await ws.get_message())
        assert welcome["type"] == "result" and welcome["result"]["kind"] == "welcome", welcome

        waiting: dict[int, tuple[str, str]] = {}  # id -> (op, ping data)
        used_ids: set[int] = {0}
        sent = 0
        tally.pending[index] = 0
        while sent < REQUESTS_PER_CLIENT or waiting:
            while sent < REQUESTS_PER_CLIENT and len(waiting) < depth:
                if reuse_id:
                    rid = 1
                else:
                    rid = rng.randrange(MAX_ID + 1)  # large ids must survive both codecs
                    while rid in used_ids:
                        rid = rng.randrange(MAX_ID + 1)
                    used_ids.add(rid)
                if sent % STATUS_EVERY == STATUS_EVERY - 1:
                    op, data = "status", ""
                    request: dict[str, Any] = {"op": "status", "id": rid}
                else:
                    op, data = "ping", f"c{index}-r{sent}-{rng.getrandbits(64):x}"
                    request = {"op": "ping", "id": rid, "data": data}
                waiting[rid] = (op, data)
                await ws.send_message(wire.encode(request))
                tally.sent[op] += 1
                sent += 1
                tally.pending[index] = len(waiting) + REQUESTS_PER_CLIENT - sent
            reply = wire.decode(await ws.get_message())
            rid = reply.get("id")
            if rid not in waiting:
                tally.problems.append(f"client {index}: reply for unknown id: {reply!r}")
                continue
            op, data = waiting.pop(rid)
            tally.pending[index] = len(waiting) + REQUESTS_PER_CLIENT - sent
            if reply.get("type") != "result":
                tally.problems.append(f"client {index}: {op} id {rid} failed: {reply!r}")
            elif op == "ping" and reply["result"] != {"kind": "pong", "data": data}:
                tally.problems.append(f"client {index}: ping {rid} wanted {data!r}: {reply!r}")
            elif op == "status" and (
                reply["result"].get("kind") != "status" or reply["result"]["pid"] != daemon_pid
            ):
                tally.problems.append(f"client {index}: bad status {rid}: {reply!r}")
            else:
                tally.matched[op] += 1
        await ws.aclose()


def status_of(path: str) -> dict[str, Any]:
    with SyncClient(path, JSON, name="load-status") as c:
        reply = c.call("status")
    assert reply["type"] == "result", reply
    result: dict[str, Any] = reply["result"]
    return result


async def test_50_clients_200_requests_each_lose_nothing(load_daemon: DaemonProc) -> None:
    """50 concurrent clients x 200 ping/status: every reply arrives, matched by id and payload."""
    path = str(load_daemon.socket)
    before = status_of(path)
    tally = Tally()
    with trio.move_on_after(TIME_LIMIT_S) as limit:
        async with trio.open_nursery() as nursery:
            for index in range(CLIENTS):
                nursery.start_soon(one_client, path, index, load_daemon.proc.pid, tally)
    stuck = {client: n for client, n in tally.pending.items() if n}
    assert not limit.cancelled_caught, (
        f"after {TIME_LIMIT_S}s replies are still missing (client -> unanswered): {stuck}; "
        f"other problems: {tally.problems}"
    )

    total = CLIENTS * REQUESTS_PER_CLIENT
    assert tally.problems == []
    assert sum(tally.sent.values()) == total
    assert tally.matched == tally.sent, "lost replies"
    assert tally.sent["status"] == CLIENTS * (REQUESTS_PER_CLIENT // STATUS_EVERY)

    # The daemon's own counters agree: every request was served once and none failed.
    # (Counters are recorded just after each reply is sent, and a disconnect is noticed a
    # moment after the close handshake: poll briefly.)
    expected = {"ping": tally.sent["ping"], "status": tally.sent["status"], "hello": CLIENTS}
    for poll in range(1, 41):
        after = status_of(path)
        got = {
            op: after["ops"][op]["count"] - before["ops"].get(op, {}).get("count", 0)
            for op in expected
        }
        got["status"] -= poll  # the status taken before the run, and earlier polls
        got["hello"] -= poll  # each poll says hello on its own connection
        if got == expected and len(after["clients"]) == 1:
            break
        await trio.sleep(0.05)
    assert got == expected
    assert all(stats["errors"] == 0 for stats in after["ops"].values()), after["ops"]
    assert "<invalid>" not in after["ops"]
    assert [c["name"] for c in after["clients"]] == ["load-status"]
    assert load_daemon.proc.poll() is None
