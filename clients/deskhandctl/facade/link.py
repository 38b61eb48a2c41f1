"""``deskhandctl mcp``'s one connection to the daemon, shared by concurrent tool calls.

What this owns: connecting like every client does (the socket from ``--socket`` or the
environment, the same autostart as ``deskhandctl``, the peer check), saying ``hello`` as the
host (its name and version, a session of its own, ``can_answer_questions`` as the host's
elicitation capability), and multiplexing requests over the one WebSocket:

* one reader thread receives every message and routes it: a reply to the waiting call by id,
  an event with a ``request_id`` to that call, any other event (``question_closed``, notices) to
  ``on_event``;
* callers send from their own threads (the WebSocket writes frames under a lock) and wait on a
  queue of their own; nobody changes a socket timeout once the link is up (it runs with none);
* when the connection drops (the daemon stopped or restarted), every waiting call gets
  :class:`Lost` and the link is down; the next call connects again, to a new session, and is
  told so (:meth:`Link.take_reconnected`).

Failures to connect leave as :mod:`deskhandctl.exitcodes` errors with a message for people.
"""

from __future__ import annotations

import queue
import sys
import threading

from deskhandctl.exitcodes import ProtocolFailed
from deskhandctl.wire import jsontext
from deskhandctl.wire.client import WebSocket
from deskhandctl.wire.frames import WebSocketError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    EventSink = Callable[[dict[str, Any]], None]

HANDSHAKE_TIMEOUT_S = 10.0
#: How long :meth:`Link.wait` waits with nothing at all arriving for its call (an event, such
#: as a question for the person or a run's progress, starts the wait again). The daemon ends a
#: question it asked by its own deadline (5 minutes by default), so this is far beyond any
#: silence a working daemon keeps.
REPLY_TIMEOUT_S = 900.0


class Lost(Exception):
    """The connection dropped; ``sent`` says whether our request had been written to it."""

    def __init__(self, reason: str, *, sent: bool) -> None:
        super().__init__(reason)
        self.reason = reason
        self.sent = sent


class NoAnswer(Lost):
    """The daemon sent nothing for a call within the reply timeout. The request had been sent
    (``sent`` True) and the link stays up: only this call was given up (and asked to cancel)."""


class Call:
    """One request in flight: its id and where its events and reply arrive."""

    __slots__ = ("id", "inbox")

    def __init__(self, request_id: int) -> None:
        self.id = request_id
        self.inbox: queue.SimpleQueue[tuple[str, Any]] = queue.SimpleQueue()


class _Conn:
    """One WebSocket and the calls waiting on it (a new connection starts with none)."""

    __slots__ = ("calls", "ws")

    def __init__(self, ws: WebSocket) -> None:
        self.ws = ws
        self.calls: dict[int, Call] = {}


class Link:
    """The daemon connection; :meth:`ensure` (re)connects, :meth:`start` + :meth:`wait` run a
    request, :meth:`send_nowait` fires one whose reply nobody needs."""

    def __init__(
        self,
        *,
        socket_path: str,
        autostart: bool,
        client_name: str,
        client_version: str,
        session_base: Callable[[int], str],
        can_answer_questions: bool,
        on_event: EventSink,
        reply_timeout_s: float = REPLY_TIMEOUT_S,
    ) -> None:
        self.reply_timeout_s = reply_timeout_s
        self.socket_path = socket_path
        self.autostart = autostart
        self.client_name = client_name
        self.client_version = client_version
        self.session_base = session_base
        self.can_answer_questions = can_answer_questions
        self.on_event = on_event
        self.session = ""
        self.mode = "native"
        self.connections = 0
        self._unreported = False
        self._conn: _Conn | None = None
        self._lock = threading.Lock()  # _conn, every _Conn.calls, _next_id
        self._connecting = threading.Lock()
        self._next_id = 2  # 1 is hello's

    # ----- connecting --------------------------------------------------------------------------

    def ensure(self) -> None:
        """Connect unless connected."""
        with self._connecting:
            if self._conn is not None:
                return
            self._open()
            self._unreported = self.connections > 1

    def take_reconnected(self) -> bool:
        """True once after a connection replaced a lost one (a new daemon session: old
        stateIds are gone), so exactly one tool result tells the model."""
        with self._lock:
            unreported, self._unreported = self._unreported, False
        return unreported

    def _open(self) -> None:
        from deskhandctl.exitcodes import NotRunning, not_running_message
        from deskhandctl.wire.connect import NoListener, connect, open_websocket
        from deskhandctl.wire.session import Session

        def attempt() -> Any:
            try:
                return connect(self.socket_path, timeout=HANDSHAKE_TIMEOUT_S)
            except NoListener:
                return None

        sock = attempt()
        if sock is None:
            if not self.autostart:
                raise NotRunning(not_running_message(self.socket_path))
            from deskhandctl.wire.autostart import start_and_connect

            sock = start_and_connect(self.socket_path, attempt)
        ws = open_websocket(sock, self.socket_path, timeout=HANDSHAKE_TIMEOUT_S)
        session_name = self.session_base(self.connections + 1)
        try:
            # Session does hello and its checks; it is used for nothing else (not thread-safe).
            welcome = Session(ws, socket_path=self.socket_path).hello(
                name=self.client_name,
                version=self.client_version,
                kind="mcp",
                session=session_name,
                can_answer_questions=self.can_answer_questions,
            )
        except BaseException:
            ws.abort()
            raise
        ws.timeout = None  # from now on two threads share it: no deadlines, no settimeout races
        self.connections += 1
        self.session = str(welcome.get("session_name") or session_name)
        self.mode = str(welcome.get("mode") or "native")
        conn = _Conn(ws)
        with self._lock:
            self._conn = conn
        threading.Thread(
            target=self._read, args=(conn,), name="deskhand-reader", daemon=True
        ).start()

    # ----- requests ----------------------------------------------------------------------------

    def start(self, op: str, params: dict[str, Any]) -> Call:
        """Send ``op``; the returned call's inbox gets its events and reply. :class:`Lost`
        (``sent`` False) if the link is down or the write failed."""
        with self._lock:
            conn = self._conn
            if conn is None:
                raise Lost("not connected to deskhand-d", sent=False)
            call = Call(self._next_id)
            self._next_id += 1
            conn.calls[call.id] = call
        message = jsontext.dumps_compact({**params, "op": op, "id": call.id})
        try:
            conn.ws.send(message)
        except (WebSocketError, OSError) as exc:
            with self._lock:
                conn.calls.pop(call.id, None)
            self._down(conn, f"the connection to deskhand-d failed while sending ({exc})")
            raise Lost(str(exc), sent=False) from None
        return call

    def wait(self, call: Call, on_event: EventSink) -> dict[str, Any]:
        """The reply (a ``result`` or ``error`` message) to ``call``; its events go to
        ``on_event`` meanwhile. :class:`Lost` (``sent`` True) if the connection dropped;
        :class:`NoAnswer` if nothing came for it within ``reply_timeout_s`` (the call is then
        forgotten and the daemon asked to cancel it)."""
        while True:
            try:
                what, value = call.inbox.get(timeout=self.reply_timeout_s)
            except queue.Empty:
                self.forget(call)
                self.send_nowait("cancel", {"request_id": call.id})
                raise NoAnswer(
                    f"deskhand-d sent nothing for {self.reply_timeout_s:g} s, so the call was "
                    "given up (and deskhand-d asked to cancel it)",
                    sent=True,
                ) from None
            if what == "event":
                on_event(value)
            elif what == "reply":
                return value  # type: ignore[no-any-return]
            else:
                raise Lost(str(value), sent=True)

    def request(self, op: str, params: dict[str, Any]) -> dict[str, Any]:
        """:meth:`start` and :meth:`wait`, ignoring events."""
        return self.wait(self.start(op, params), lambda event: None)

    def send_nowait(self, op: str, params: dict[str, Any]) -> None:
        """Send ``op`` and forget its reply (``cancel``): a lost link is no news here."""
        try:
            self.start(op, params)
        except Lost:
            pass

    def forget(self, call: Call) -> None:
        """Stop routing to ``call`` (its caller went away); a late reply is dropped."""
        with self._lock:
            if self._conn is not None:
                self._conn.calls.pop(call.id, None)

    def close(self) -> None:
        with self._lock:
            conn, self._conn = self._conn, None
        if conn is not None:
            conn.ws.hang_up()

    # ----- the reader thread -------------------------------------------------------------------

    def _read(self, conn: _Conn) -> None:
        reason = "the connection to deskhand-d closed"
        try:
            while True:
                self._route(conn, self._decode(conn.ws.receive()))
        except (WebSocketError, OSError, ProtocolFailed) as exc:
            reason = f"lost the connection to deskhand-d ({exc})"
        except BaseException as exc:  # a bug here must not leave calls waiting forever
            reason = f"the link to deskhand-d failed: {exc!r}"
            print(f"deskhandctl mcp: {reason}", file=sys.stderr)
        self._down(conn, reason)

    @staticmethod
    def _decode(payload: str | bytes) -> dict[str, Any]:
        if isinstance(payload, bytes):
            raise ProtocolFailed("deskhand-d sent a binary message on a JSON connection")
        value = jsontext.loads(payload)
        if not isinstance(value, dict):
            raise ProtocolFailed("deskhand-d sent a message that is not an object")
        return value

    def _route(self, conn: _Conn, message: dict[str, Any]) -> None:
        kind = message.get("type")
        if kind == "event":
            event = message.get("event")
            if not isinstance(event, dict):
                return
            with self._lock:
                call = conn.calls.get(event.get("request_id"))  # type: ignore[arg-type]
            if call is not None:
                call.inbox.put(("event", event))
            else:
                self.on_event(event)
        elif kind in ("result", "error"):
            with self._lock:
                call = conn.calls.pop(message.get("id"), None)  # type: ignore[arg-type]
            if call is not None:
                call.inbox.put(("reply", message))
            elif message.get("id") is None:
                error = message.get("error")
                print(f"deskhandctl mcp: deskhand-d refused a message: {error}", file=sys.stderr)

    def _down(self, conn: _Conn, reason: str) -> None:
        """Mark the link down and release every call waiting on this connection."""
        with self._lock:
            if self._conn is conn:
                self._conn = None
            calls, conn.calls = conn.calls, {}
        conn.ws.hang_up()
        for call in calls.values():
            call.inbox.put(("lost", reason))
