"""Replies wait in a bounded queue, partly received messages in a shared budget (issue #24).

Pure accounting is checked on values; the outbox's writer against a fake WebSocket whose
client reads or never reads, on trio's autojump clock (so the 30 s stall costs no time); the
header check of the server's WebSocket over an in-memory stream with a small budget.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest
import trio
import trio.testing
from wsproto import ConnectionType, WSConnection
from wsproto.events import AcceptConnection, CloseConnection, Request

from deskhand_d.protocol.sharedbytes import Budget, partial_messages_budget
from deskhand_d.rpc.outbox import MAX_QUEUED_MESSAGES, WRITE_STALL_S, Backlog, Outbox
from deskhand_d.rpc.wsserver import wrap_server_stream

MiB = 1024 * 1024


def test_budget_takes_what_fits_and_gives_it_back() -> None:
    b = Budget(10)
    assert b.take(6) and b.used == 6
    assert not b.take(5) and b.used == 6  # refused: nothing taken
    assert b.fits(4) and not b.fits(5)
    b.give(6)
    assert b.used == 0
    b.give(3)
    assert b.used == 0  # never below zero


def test_partial_budget_always_holds_one_largest_message() -> None:
    assert partial_messages_budget(64 * MiB).limit == 128 * MiB
    assert partial_messages_budget(512 * MiB).limit == 1024 * MiB


@pytest.mark.parametrize(
    ("sizes", "admitted"),
    [
        ([1] * 4, [True, True, True, False]),  # the count bound (3 here)
        ([60, 50], [True, False]),  # the bytes bound (100 here)
        ([500, 1], [True, False]),  # an empty queue takes one message of any size
        ([40, 40, 10], [True, True, True]),
    ],
)
def test_backlog_bounds(sizes: list[int], admitted: list[bool]) -> None:
    backlog = Backlog(Budget(1000), max_messages=3, max_bytes=100)
    assert [backlog.admit(n) for n in sizes] == admitted


def test_backlogs_share_one_budget() -> None:
    shared = Budget(100)
    a, b = Backlog(shared), Backlog(shared)
    assert a.admit(30) and a.admit(40)
    assert b.admit(80)  # empty: admitted past the shared budget
    assert not b.admit(1) and not a.admit(1)  # both now refused: all queues together are full
    a.release(30)
    a.clear()
    assert shared.used == 80
    b.release(80)
    assert shared.used == 0 and b.messages == 0


class FakeWs:
    """Records what is sent; ``reading`` False makes every send wait for ever (a full socket)."""

    def __init__(self, reading: bool = True) -> None:
        self.reading = reading
        self.sent: list[str | bytes] = []

    async def send_message(self, data: str | bytes) -> None:
        if not self.reading:
            await trio.sleep_forever()
        self.sent.append(data)
        await trio.lowlevel.checkpoint()


def outbox(ws: FakeWs, stalls: list[str], shared: Budget) -> Outbox:
    return Outbox(ws, stalls.append, Backlog(shared))  # type: ignore[arg-type]  # a fake


async def test_replies_go_out_in_order_and_wait_empty_sees_them_written() -> None:
    ws, stalls, shared = FakeWs(), [], Budget(1 << 20)
    box = outbox(ws, stalls, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(box.serve)
        for n in range(100):
            box.put(f"reply {n}")
        await box.wait_empty()
        assert ws.sent == [f"reply {n}" for n in range(100)]
        assert shared.used == 0 and not stalls
        nursery.cancel_scope.cancel()


async def test_a_client_that_lets_the_queue_fill_is_given_up_once() -> None:
    ws, stalls, shared = FakeWs(reading=False), [], Budget(1 << 30)
    box = outbox(ws, stalls, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(box.serve)
        for n in range(MAX_QUEUED_MESSAGES + 50):
            box.put(f"reply {n}")
        assert len(stalls) == 1 and "has not read its replies" in stalls[0]
        assert shared.used == 0  # its share is back at once
        box.put("more")  # ignored: the connection is being closed
        assert shared.used == 0
        await box.wait_empty()  # returns: nothing will be written any more
        nursery.cancel_scope.cancel()


async def test_one_reply_that_does_not_go_out_in_time_gives_up(
    autojump_clock: trio.testing.MockClock,
) -> None:
    ws, stalls, shared = FakeWs(reading=False), [], Budget(1 << 30)
    box = outbox(ws, stalls, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(box.serve)
        started = trio.current_time()
        box.put(b"x" * 5 * MiB)  # one large reply, its client never reads
        while not stalls:
            await trio.sleep(1)
        assert trio.current_time() - started == pytest.approx(WRITE_STALL_S, abs=1)
        assert f"waited {WRITE_STALL_S:g} s" in stalls[0]
        assert shared.used == 0
        nursery.cancel_scope.cancel()


async def test_the_writer_gives_the_budget_back_when_cancelled() -> None:
    ws, stalls, shared = FakeWs(reading=False), [], Budget(1 << 30)
    box = outbox(ws, stalls, shared)
    async with trio.open_nursery() as nursery:
        await nursery.start(box.serve)
        box.put(b"a" * 1000)
        box.put(b"b" * 1000)
        assert shared.used == 2000
        nursery.cancel_scope.cancel()
    assert shared.used == 0


def _handshake(client: WSConnection) -> bytes:
    return client.send(
        Request(host="localhost", target="/v1", subprotocols=["deskhand.v1.msgpack"])
    )


async def _server_close_for(frames: bytes, partial: Budget, max_size: int = 64 * MiB) -> Any:
    """Send ``frames`` after the upgrade; the close event the server answers with."""
    client_stream, server_stream = trio.testing.memory_stream_pair()
    client = WSConnection(ConnectionType.CLIENT)
    async with trio.open_nursery() as nursery:

        async def serve() -> None:
            request = await wrap_server_stream(
                nursery, server_stream, max_message_size=max_size, partial=partial
            )
            ws = await request.accept(subprotocol="deskhand.v1.msgpack")
            with pytest.raises(Exception):  # noqa: B017  # ConnectionClosed, whichever way
                await ws.get_message()

        nursery.start_soon(serve)
        await client_stream.send_all(_handshake(client))
        accepted = False
        while True:
            client.receive_data(await client_stream.receive_some())
            for event in client.events():
                if isinstance(event, AcceptConnection):
                    accepted = True
                    await client_stream.send_all(frames)
                elif isinstance(event, CloseConnection):
                    assert accepted
                    nursery.cancel_scope.cancel()
                    return event


def _header(opcode: int, fin: bool, length: int) -> bytes:
    """A masked client frame header (all-zero mask), its length in the shortest form."""
    first = (0x80 if fin else 0) | opcode
    if length < 126:
        return bytes([first, 0x80 | length]) + bytes(4)
    if length < 1 << 16:
        return bytes([first, 0x80 | 126]) + struct.pack("!H", length) + bytes(4)
    return bytes([first, 0x80 | 127]) + struct.pack("!Q", length) + bytes(4)


async def test_a_frame_the_shared_budget_cannot_hold_is_refused_at_its_header() -> None:
    partial = Budget(2 * MiB, used=MiB)  # other connections hold half of it
    close = await _server_close_for(_header(0x2, True, MiB + 1), partial)
    assert close.code == 1013 and "partly received" in close.reason
    assert partial.used == MiB  # nothing of this connection's is left taken


async def test_bytes_held_count_against_the_budget_and_are_given_back() -> None:
    partial = Budget(64 * 1024)
    # A fragmented message of 4 x 20 KiB: the fourth fragment passes the budget.
    frames = _header(0x2, False, 20 * 1024) + b"\x91" + bytes(20 * 1024 - 1)
    for _ in range(3):
        frames += _header(0x0, False, 20 * 1024) + bytes(20 * 1024)
    close = await _server_close_for(frames, partial)
    assert close.code == 1013
    assert partial.used == 0
