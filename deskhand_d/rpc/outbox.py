"""The messages waiting to be written to one client: bounded, in order, by one writer task.

A client that sends requests and never reads their replies must cost the daemon no more than a
fixed amount, and must never slow anyone else. So nothing waits on a client's socket except
this connection's writer: replies and events are encoded and queued here at once (a request
finishes when its reply is queued, not when the client has read it), and the writer sends them
one by one. The queue is bounded in messages and bytes (:class:`Backlog`, pure), and its bytes
also count against a :class:`~deskhand_d.protocol.sharedbytes.Budget` shared by all connections; a
message that would pass a bound means the client has stopped reading, and the connection is
closed instead of buffering more. One message is always accepted into an empty queue whatever
its size, so a large screenshot reply still goes out to a client that reads.

A client can also stop reading with only one message queued (its socket's buffers full): the
writer gives up on a message that has not gone out within ``stall_s`` and closes the
connection the same way.
"""

from __future__ import annotations

import math
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final

import trio
from trio_websocket import ConnectionClosed, WebSocketConnection

from deskhand_d.protocol.sharedbytes import Budget, MiB

MAX_QUEUED_MESSAGES: Final = 512
"""Far above what a client that reads ever has waiting: its requests are bounded by
``max_outstanding_requests``, and events come one per step."""
MAX_QUEUED_BYTES: Final = 32 * MiB
"""A few full-screen screenshots' worth."""
WRITE_STALL_S: Final = 30.0
"""How long one message may take to go out before the client counts as not reading."""


@dataclass(slots=True)
class Backlog:
    """How much one connection has queued, and whether one more message fits. Pure."""

    shared: Budget
    max_messages: int = MAX_QUEUED_MESSAGES
    max_bytes: int = MAX_QUEUED_BYTES
    messages: int = 0
    bytes: int = 0

    def admit(self, size: int) -> bool:
        """Count a message of ``size`` bytes in if it fits; False means the client is not
        reading (its queue, or all queues together, are full), and nothing was counted."""
        if self.messages and (
            self.messages >= self.max_messages
            or self.bytes + size > self.max_bytes
            or not self.shared.fits(size)
        ):
            return False
        self.shared.used += size  # an empty queue takes one message even past the budget
        self.messages += 1
        self.bytes += size
        return True

    def release(self, size: int) -> None:
        self.shared.give(size)
        self.messages -= 1
        self.bytes -= size

    def clear(self) -> None:
        self.shared.give(self.bytes)
        self.messages = self.bytes = 0


@dataclass(eq=False)
class Outbox:
    """One connection's queue and its writer. ``on_stalled`` is called once when the client
    stops reading (queue full, or a write stalled); the caller closes the connection."""

    ws: WebSocketConnection
    on_stalled: Callable[[str], None]
    backlog: Backlog
    stall_s: float = WRITE_STALL_S
    _queue: deque[str | bytes] = field(default_factory=deque)
    _wake: trio.Event = field(default_factory=trio.Event)
    _empty: trio.Event = field(default_factory=trio.Event)
    _dead: bool = False  # the client is gone or stalled: queue nothing more

    def put(self, data: str | bytes) -> None:
        """Queue ``data`` for the client; never waits."""
        if self._dead:
            return
        if not self.backlog.admit(len(data)):
            self._give_up(
                f"it has not read its replies ({self.backlog.messages} messages, "
                f"{self.backlog.bytes} bytes waiting)"
            )
            return
        self._queue.append(data)
        self._empty = trio.Event() if self._empty.is_set() else self._empty
        self._wake.set()

    async def wait_empty(self) -> None:
        """Return once everything queued so far has been written (or the client is gone)."""
        if self._queue or self.backlog.messages:
            await self._empty.wait()

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Write queued messages in order until cancelled; what is left is dropped then."""
        task_status.started()
        try:
            await self._write_all()
        finally:
            self._dead = True
            self._queue.clear()
            self.backlog.clear()  # give the shared budget back

    async def _write_all(self) -> None:
        while True:
            if not self._queue:
                self._empty.set()
                self._wake = trio.Event()
                await self._wake.wait()
                continue
            data = self._queue[0]
            sent = False
            with trio.move_on_after(self.stall_s if self.stall_s > 0 else math.inf):
                try:
                    await self.ws.send_message(data)
                    sent = True
                except ConnectionClosed:
                    self._drop_all()  # the client went away; its replies have nowhere to go
                    continue
            if not sent:
                self._give_up(f"a reply has waited {self.stall_s:g} s for it to read")
                continue
            self._queue.popleft()
            self.backlog.release(len(data))

    def _give_up(self, why: str) -> None:
        first = not self._dead
        self._drop_all()
        if first:
            self.on_stalled(why)

    def _drop_all(self) -> None:
        self._dead = True
        self._queue.clear()
        self.backlog.clear()
        self._empty.set()
