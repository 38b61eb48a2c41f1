"""Who is connected, the op counters, and the daemon's stop request: the daemon-wide state
that the connections share.

What this owns: the registry every connection joins for its lifetime (so ``status`` can list
clients, ``session_close`` can reach the other connections of a session and a graceful stop
can reach everyone), and the event that asks the composition root to stop. No I/O beyond trio
Events; the connections are seen through :class:`Member`, never as transport objects.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Protocol

import trio

from deskhand_d.native.sessions import Session
from deskhand_d.protocol import ClientInfo
from deskhand_d.stats import OpCounters
from deskhand_d.unixsock import PeerCred


class Member(Protocol):
    """A connection as the rest of the daemon sees it."""

    conn_id: int
    client: ClientInfo | None
    peer: PeerCred
    connected_at: float
    session: Session | None

    def request_close(self, code: int, reason: str) -> None: ...


@dataclass(slots=True)
class Hub:
    started: float = field(default_factory=trio.current_time)
    counters: OpCounters = field(default_factory=OpCounters)
    connections: dict[int, Member] = field(default_factory=dict)
    shutdown_requested: trio.Event = field(default_factory=trio.Event)
    shutdown_reason: str = ""
    _emptied: trio.Event = field(default_factory=trio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def next_connection_id(self) -> int:
        return next(self._ids)

    def register(self, member: Member) -> None:
        self.connections[member.conn_id] = member

    def unregister(self, member: Member) -> None:
        self.connections.pop(member.conn_id, None)
        if not self.connections:
            self._emptied.set()
            self._emptied = trio.Event()

    async def wait_no_connections(self) -> None:
        while self.connections:
            await self._emptied.wait()

    def request_shutdown(self, reason: str) -> None:
        if not self.shutdown_requested.is_set():
            self.shutdown_reason = reason
            self.shutdown_requested.set()
