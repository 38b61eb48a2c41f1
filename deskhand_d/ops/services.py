"""The daemon's services as one record, fully built before the first client is served.

What this owns: :class:`Services` (the configuration, the backend connection, sessions, the
native service, questions, Jev access and the connection registry), what they say together
(``status``, the secrets a trace must never hold, whether the simulator is serving) and what a
departing connection leaves behind. The composition root (:mod:`deskhand_d.app`) builds it;
ops read it from their :class:`~deskhand_d.ops.context.RequestContext`, so no op has to ask
whether a part exists yet.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import trio

from deskhand_d import __version__
from deskhand_d.backends.mcpclient.connection import BackendConnection
from deskhand_d.config import Config
from deskhand_d.jev.access import JevAccess
from deskhand_d.native.service import NativeService
from deskhand_d.native.sessions import SessionManager
from deskhand_d.ops.hub import Hub, Member
from deskhand_d.ops.questions import Questions
from deskhand_d.protocol import (
    PROTOCOL_VERSION,
    SUBPROTOCOLS,
    AuditStatus,
    BackendStatus,
    ClientSummary,
    StatusResult,
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Services:
    config: Config
    env: Mapping[str, str]
    socket_path: Path
    hub: Hub
    backend: BackendConnection
    sessions: SessionManager
    native: NativeService
    questions: Questions
    jev: JevAccess
    managed_by: str = ""  # "systemd" or "launchd" when one handed us the socket (restart hints)

    def secrets(self) -> list[str]:
        """Values never to be written to a trace: configured secrets and the Jev key."""
        return self.config.secret_values(self.env) + self.jev.secret_values()

    @property
    def simulated(self) -> bool:
        """Is the simulated desktop the one serving? Every client must then be told so."""
        launch = self.backend.launch
        return launch is not None and launch.kind == "sim"

    def depart(self, member: Member) -> None:
        """A connection closed: its session waits out the grace period (or ends now if no
        other connection holds it), the queued work of an ended session is cancelled, and a
        console's going may leave questions with nobody to answer them."""
        self.hub.unregister(member)
        self.questions.depart(member.conn_id)  # a console gone: its questions may have no one
        session, member.session = member.session, None
        if session is not None and self.sessions.detach(session, trio.current_time()):
            self.native.queue.cancel_session(session.session_id)

    def status(self) -> StatusResult:
        hub, native = self.hub, self.native
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
            for c in sorted(hub.connections.values(), key=lambda c: c.conn_id)
        ]
        job = native.queue.current
        return StatusResult(
            version=__version__,
            pid=os.getpid(),
            uptime_s=round(now - hub.started, 3),
            socket=str(self.socket_path),
            protocol=PROTOCOL_VERSION,
            subprotocols=list(SUBPROTOCOLS),
            clients=clients,
            ops=hub.counters.snapshot(),
            backend=self._backend_status(),
            queue_depth=native.queue.depth,
            desktop_holder=f"{job.owner}: {job.label}" if job is not None else "",
            locked_by=native.gates.locked_by,
            sessions=len(self.sessions.sessions),
            audit=AuditStatus(
                path=str(native.audit.path) if native.audit is not None else "",
                problem=native.audit_problem,
                unfinished_at_start=native.unfinished_at_start,
            ),
        )

    def _backend_status(self) -> BackendStatus:
        b = self.backend
        kind = b.launch.kind if b.launch is not None else self.config.backend.kind
        return BackendStatus(
            kind=kind,
            running_pid=b.running_pid,
            processes_started=b.processes_started,
            simulated=self.simulated,
        )
