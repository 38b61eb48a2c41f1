"""The Deskhand client protocol over one open WebSocket, JSON-encoded with the standard library.

A :class:`Session` sends ``hello`` first (:meth:`Session.hello`), then requests with ids counting
up from 1. :meth:`Session.request` sends one and waits for its reply; ``event`` messages that
arrive meanwhile go to the ``on_event`` hook, which may itself send a request (the CLI answers a
question that way while the original request is still pending). Replies are matched by id: a
reply to another request of ours that is still outstanding is kept until its caller asks for it,
so the order in which the daemon answers does not matter.

Failures leave as :mod:`deskhandctl.exitcodes` exceptions with messages for people: an ``error``
reply becomes :class:`DaemonError`; a broken or unexpected message, :class:`ProtocolFailed`; a
lost connection, :class:`NotRunning`; a deadline, :class:`TimedOut`. The wire shapes live in
``deskhand_d.protocol``, which this module does not import (it would pull in msgspec).
"""

from __future__ import annotations

from deskhandctl.exitcodes import DaemonError, NotRunning, ProtocolFailed, TimedOut
from deskhandctl.wire import jsontext
from deskhandctl.wire.client import ConnectionClosed, ConnectionLost, WebSocket
from deskhandctl.wire.frames import (
    CLOSE_INVALID_DATA,
    CLOSE_PROTOCOL_ERROR,
    CLOSE_UNSUPPORTED_DATA,
    WebSocketError,
    WebSocketProtocolError,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any

    EventHook = Callable[[dict[str, Any]], None]

PROTOCOL_VERSION = 1
SUBPROTOCOL = "deskhand.v1.json"
WS_TARGET = "/v1"

_PROTOCOL_CLOSE_CODES = frozenset(
    {CLOSE_PROTOCOL_ERROR, CLOSE_UNSUPPORTED_DATA, CLOSE_INVALID_DATA}
)


def ignore_event(event: dict[str, Any]) -> None:
    """The default event hook: drop the event."""


class Session:
    """One protocol conversation with the daemon. Not thread-safe."""

    def __init__(
        self, ws: WebSocket, *, socket_path: str, on_event: EventHook = ignore_event
    ) -> None:
        self.ws = ws
        self.socket_path = socket_path
        self.on_event = on_event
        self.welcome: dict[str, Any] = {}
        self._next_id = 1
        self._outstanding: dict[int, str] = {}  # request id -> op, sent and not yet answered
        self._early: dict[int, dict[str, Any]] = {}  # replies that came before they were asked for

    def hello(
        self,
        *,
        name: str,
        version: str,
        kind: str = "cli",
        session: str = "",
        can_answer_questions: bool = False,
    ) -> dict[str, Any]:
        """Introduce ourselves; return the ``welcome`` result after checking its version.

        ``session`` names the daemon session to open or resume (empty: a throwaway one);
        ``can_answer_questions`` promises that someone here can answer question events.
        """
        params: dict[str, Any] = {
            "protocol": PROTOCOL_VERSION,
            "client": {"name": name, "version": version, "kind": kind},
            "can_answer_questions": can_answer_questions,
        }
        if session:
            params["session"] = session
        welcome = self._call("hello", params, hello=True)
        if welcome.get("kind") != "welcome":
            raise ProtocolFailed(f"the daemon answered hello with {welcome.get('kind')!r}")
        theirs = welcome.get("protocol")
        if theirs != PROTOCOL_VERSION:
            raise ProtocolFailed(
                f"the daemon speaks protocol version {theirs}, this deskhandctl speaks "
                f"{PROTOCOL_VERSION}; install matching versions of deskhand-d and deskhandctl"
            )
        self.welcome = welcome
        return welcome

    def request(self, op: str, **params: Any) -> dict[str, Any]:
        """Send ``op`` with ``params``; return the ``result`` object of the matching reply."""
        return self._call(op, params, hello=False)

    def outstanding(self, request_id: object) -> bool:
        """Whether ``request_id`` is one of ours still waiting for its reply."""
        return request_id in self._outstanding

    def _call(self, op: str, params: dict[str, Any], *, hello: bool) -> dict[str, Any]:
        request_id = self._next_id
        self._next_id += 1
        message = jsontext.dumps_compact({"op": op, "id": request_id, **params})
        try:
            self.ws.send(message)
            self._outstanding[request_id] = op
            try:
                reply = self._wait(request_id)
            finally:
                self._outstanding.pop(request_id, None)
        except WebSocketError as exc:
            raise self._translate(exc) from None
        except TimeoutError:
            raise TimedOut(
                f"deskhand-d did not answer {op!r} in time; it may be stuck. "
                "Try again with a larger --timeout, or restart it."
            ) from None
        if reply.get("type") == "error":
            raise self._error_reply(reply.get("error"), hello=hello)
        result = reply.get("result")
        if not isinstance(result, dict):
            raise self._broken("a result that is not an object")
        return result

    def _wait(self, request_id: int) -> dict[str, Any]:
        """The reply to ``request_id``, handing events to the hook meanwhile."""
        while True:
            early = self._early.pop(request_id, None)
            if early is not None:
                return early
            reply = self._decode(self.ws.receive())
            kind = reply.get("type")
            if kind == "event":
                event = reply.get("event")
                if isinstance(event, dict):
                    self.on_event(event)
                continue
            if kind not in ("result", "error"):
                raise self._broken(f"a message of unknown type {kind!r}")
            reply_id = reply.get("id")
            if reply_id == request_id or (kind == "error" and reply_id is None):
                return reply
            if type(reply_id) is not int or reply_id not in self._outstanding:
                raise self._broken(f"a reply to request {reply_id!r}, which we never sent")
            self._early[reply_id] = reply

    def close(self) -> None:
        """End the conversation with a normal close handshake (never raises)."""
        self.ws.close()

    def _decode(self, payload: str | bytes) -> dict[str, Any]:
        if isinstance(payload, bytes):
            raise self._broken("a binary message on a JSON connection")
        try:
            value = jsontext.loads(payload)
        except ValueError:
            raise self._broken("a message that is not JSON") from None
        if not isinstance(value, dict):
            raise self._broken("a JSON message that is not an object")
        return value

    def _broken(self, what: str) -> ProtocolFailed:
        self.ws.abort()
        return ProtocolFailed(
            f"deskhand-d sent {what}; this deskhandctl and the daemon do not understand each "
            "other. Install matching versions of both."
        )

    def _error_reply(self, error: object, *, hello: bool) -> ProtocolFailed | DaemonError:
        if not isinstance(error, dict):
            return self._broken("an error reply without an error object")
        code = str(error.get("code", "internal"))
        message = str(error.get("message", ""))
        data = error.get("data")
        if hello and code == "protocol_mismatch":
            return ProtocolFailed(
                f"deskhand-d refused our protocol version: {message}. "
                "Install matching versions of deskhand-d and deskhandctl."
            )
        return DaemonError(code, message, data if isinstance(data, dict) else None)

    def _translate(self, exc: WebSocketError) -> NotRunning | ProtocolFailed:
        if isinstance(exc, WebSocketProtocolError):
            return ProtocolFailed(f"deskhand-d broke the WebSocket protocol: {exc.message}")
        if isinstance(exc, ConnectionClosed):
            if exc.code in _PROTOCOL_CLOSE_CODES:
                return ProtocolFailed(
                    f"deskhand-d closed the connection as a protocol error ({exc}); "
                    "install matching versions of deskhand-d and deskhandctl"
                )
            return NotRunning(
                f"deskhand-d closed the connection before answering ({exc}); "
                "it may be shutting down. Check it with 'deskhandctl status'."
            )
        if isinstance(exc, ConnectionLost):
            return NotRunning(
                f"lost the connection to deskhand-d at {self.socket_path} ({exc}); "
                "it may have crashed. Its log is in the state directory (daemon.log) or the "
                "journal ('journalctl --user -u deskhand')."
            )
        return ProtocolFailed(f"WebSocket failure talking to deskhand-d: {exc}")
