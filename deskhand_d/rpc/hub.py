"""Daemon-wide state shared by every connection: who is connected, counters, shutdown.

The hub is the one place connections register themselves, so ``status`` can list clients and
a graceful stop can reach every connection. It holds no I/O of its own beyond trio Events.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

import trio

from deskhand_d import __version__
from deskhand_d.config import Config
from deskhand_d.protocol import (
    PROTOCOL_VERSION,
    SUBPROTOCOLS,
    AuditStatus,
    BackendStatus,
    ClientSummary,
    StatusResult,
)
from deskhand_d.stats import OpCounters

if TYPE_CHECKING:
    from deskhand_d.jev.access import JevAccess
    from deskhand_d.mcp.connection import BackendConnection
    from deskhand_d.native.service import NativeService
    from deskhand_d.native.sessions import SessionManager
    from deskhand_d.rpc.connection import Connection
    from deskhand_d.rpc.questions import Questions


@dataclass(slots=True)
class Hub:
    config: Config
    socket_path: Path
    env: Mapping[str, str] = field(default_factory=dict)
    started: float = field(default_factory=trio.current_time)
    counters: OpCounters = field(default_factory=OpCounters)
    connections: dict[int, Connection] = field(default_factory=dict)
    shutdown_requested: trio.Event = field(default_factory=trio.Event)
    shutdown_reason: str = ""
    backend: BackendConnection | None = None
    sessions: SessionManager | None = None
    native: NativeService | None = None
    questions: Questions | None = None
    jev: JevAccess | None = None
    managed_by: str = ""  # "systemd" or "launchd" when one handed us the socket (restart hints)
    _emptied: trio.Event = field(default_factory=trio.Event)
    _ids: itertools.count[int] = field(default_factory=lambda: itertools.count(1))

    def secrets(self) -> list[str]:
        """Values never to be written to a trace: configured secrets and the Jev key."""
        values = self.config.secret_values(self.env)
        if self.jev is not None:
            values += self.jev.secret_values()
        return values

    @property
    def simulated(self) -> bool:
        """Is the simulated desktop the one serving? Every client must then be told so."""
        launch = self.backend.launch if self.backend is not None else None
        return launch is not None and launch.kind == "sim"

    def next_connection_id(self) -> int:
        return next(self._ids)

    def register(self, conn: Connection) -> None:
        self.connections[conn.conn_id] = conn

    def unregister(self, conn: Connection) -> None:
        self.connections.pop(conn.conn_id, None)
        session = conn.session
        if session is not None and self.sessions is not None:
            conn.session = None
            if self.sessions.detach(session, trio.current_time()) and self.native is not None:
                self.native.queue.cancel_session(session.session_id)
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

    def status(self) -> StatusResult:
        now = trio.current_time()
        clients = [
            ClientSummary(
                name=c.client.name if c.client else "",
                kind=c.client.kind if c.client else "",
                version=c.client.version if c.client else "",
                pid=c.peer.pid,
                uid=c.peer.uid,
                connected_s=round(now - c.connected_at, 3),
            )
            for c in sorted(self.connections.values(), key=lambda c: c.conn_id)
        ]
        return StatusResult(
            version=__version__,
            pid=os.getpid(),
            uptime_s=round(now - self.started, 3),
            socket=str(self.socket_path),
            protocol=PROTOCOL_VERSION,
            subprotocols=list(SUBPROTOCOLS),
            clients=clients,
            ops=self.counters.snapshot(),
            backend=self._backend_status(),
            queue_depth=self.native.queue.depth if self.native else 0,
            desktop_holder=self._holder(),
            locked_by=self.native.locked_by if self.native else "",
            sessions=len(self.sessions.sessions) if self.sessions else 0,
            audit=self._audit_status(),
        )

    def _audit_status(self) -> AuditStatus | None:
        native = self.native
        if native is None:
            return None
        return AuditStatus(
            path=str(native.audit.path) if native.audit is not None else "",
            problem=native.audit_problem,
            unfinished_at_start=native.unfinished_at_start,
        )

    def _holder(self) -> str:
        if self.native is None or self.native.queue.current is None:
            return ""
        job = self.native.queue.current
        return f"{job.owner}: {job.label}"

    def _backend_status(self) -> BackendStatus | None:
        b = self.backend
        if b is None:
            return None
        kind = b.launch.kind if b.launch is not None else self.config.backend.kind
        return BackendStatus(
            kind=kind,
            running_pid=b.running_pid,
            processes_started=b.processes_started,
            simulated=self.simulated,
        )
