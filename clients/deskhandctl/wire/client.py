"""A blocking WebSocket client over a connected socket: the I/O shell around the pure codec.

:meth:`WebSocket.open` performs the opening handshake on an already connected stream socket
(the CLI uses AF_UNIX, see :func:`connect_unix`); :meth:`WebSocket.send` and
:meth:`WebSocket.receive` move whole messages; :meth:`WebSocket.close` runs the close handshake.
Pings are answered inside :meth:`WebSocket.receive`, so a caller only ever sees data messages.

Every blocking call gets its own deadline of ``timeout`` seconds (a slow trickle of bytes cannot
stretch it); when it passes while receiving, :class:`TimeoutError` propagates. A send that
fails or times out (possibly part-way through a frame) closes the connection and raises
:class:`ConnectionLost`, as does every call after it. Socket errors are reported as
:class:`ConnectionLost` (or :class:`ClosedBeforeHandshake` while the server has not answered the
Upgrade request at all), a close frame from the server as :class:`ConnectionClosed`.

Frames are written under a lock, so one thread may send while another receives (and answers a
ping from inside :meth:`WebSocket.receive`) without their frames interleaving: ``deskhandctl
mcp`` reads replies on one thread while tool calls send from others. A shared WebSocket is
then opened with ``timeout=None`` after its handshake, so no thread changes another's
socket timeout.
"""

from __future__ import annotations

# The C socket type, not the ``socket`` module: that module's Python layer only adds what this
# client does not use (enum-typed constants, makefile, selectors) and costs ~4 ms of start-up.
import _socket
import _thread
import time

from deskhandctl.wire.frames import (
    CLOSE_ABNORMAL,
    CLOSE_NO_STATUS,
    CLOSE_NORMAL,
    DEFAULT_MAX_MESSAGE_SIZE,
    OP_BINARY,
    OP_CLOSE,
    OP_PONG,
    OP_TEXT,
    Close,
    FrameReader,
    Message,
    Ping,
    Pong,
    WebSocketError,
    WebSocketProtocolError,
    client_frame,
    encode_close_payload,
)
from deskhandctl.wire.handshake import (
    HandshakeError,
    HandshakeRejected,
    ResponseReader,
    build_request,
    new_key,
    verify_accept,
)

_RECV_SIZE = 65536
_MAX_REJECT_BODY = 4096
_LINGER_S = 0.5  # how long to wait for the server to hang up after the close handshake


class ConnectionLost(WebSocketError):
    """The connection dropped without a close frame (reset, broken pipe, or plain EOF)."""


class ClosedBeforeHandshake(ConnectionLost):
    """The server hung up without sending a single byte of its handshake response."""


class ConnectionClosed(WebSocketError):
    """The server closed the WebSocket with a close frame; we have already answered it."""

    def __init__(self, code: int, reason: str) -> None:
        detail = f" ({reason})" if reason else ""
        super().__init__(f"closed by the server with code {code}{detail}")
        self.code = code
        self.reason = reason


def connect_unix(path: str, *, timeout: float | None) -> _socket.socket:
    """A stream socket connected to the Unix socket at ``path``; OSError as the kernel says."""
    sock = _socket.socket(_socket.AF_UNIX, _socket.SOCK_STREAM)
    try:
        sock.settimeout(timeout)
        sock.connect(path)
    except BaseException:
        sock.close()
        raise
    return sock


class _Deadline:
    __slots__ = ("_at",)

    def __init__(self, timeout: float | None) -> None:
        self._at = None if timeout is None else time.monotonic() + timeout

    def apply(self, sock: _socket.socket) -> None:
        if self._at is None:
            sock.settimeout(None)
            return
        remaining = self._at - time.monotonic()
        if remaining <= 0:
            raise TimeoutError("timed out")
        sock.settimeout(remaining)


class WebSocket:
    """One client WebSocket. Build it with :meth:`open`; it owns (and finally closes) ``sock``."""

    def __init__(
        self,
        sock: _socket.socket,
        *,
        subprotocol: str | None,
        timeout: float | None,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> None:
        self.subprotocol = subprotocol
        self.timeout = timeout
        self._sock = sock
        self._reader = FrameReader(max_message_size=max_message_size)
        self._close_sent = False
        self._server_close: Close | None = None
        self._send_lock = _thread.allocate_lock()
        self._lost: str | None = None  # why the stream is unusable (a send failed part-way)

    @classmethod
    def open(
        cls,
        sock: _socket.socket,
        *,
        target: str,
        subprotocol: str | None,
        host: str = "localhost",
        timeout: float | None = 10.0,
        max_message_size: int = DEFAULT_MAX_MESSAGE_SIZE,
    ) -> WebSocket:
        """Run the opening handshake on ``sock``; on any failure the socket is closed."""
        ws = cls(sock, subprotocol=subprotocol, timeout=timeout, max_message_size=max_message_size)
        try:
            ws._handshake(host, target)
        except BaseException:
            sock.close()
            raise
        return ws

    def _handshake(self, host: str, target: str) -> None:
        key = new_key()
        offered = [self.subprotocol] if self.subprotocol else []
        deadline = _Deadline(self.timeout)
        head = ResponseReader()
        try:
            deadline.apply(self._sock)
            self._sock.sendall(
                build_request(host=host, target=target, key=key, subprotocols=offered)
            )
            response = None
            while response is None:
                deadline.apply(self._sock)
                data = self._sock.recv(_RECV_SIZE)
                if not data:
                    break
                response = head.receive_data(data)
        except (ConnectionResetError, BrokenPipeError):
            response = None
        if response is None:
            if head.received == 0:
                raise ClosedBeforeHandshake("the server hung up without answering the handshake")
            raise HandshakeError("the server hung up in the middle of its handshake response")
        if response.status != 101:
            body = self._read_reject_body(
                head.leftover, response.header("content-length"), deadline
            )
            raise HandshakeRejected(response.status, response.reason, body)
        verify_accept(response, key=key, subprotocol=self.subprotocol)
        self._reader.receive_data(head.leftover)

    def _read_reject_body(self, start: bytes, length: str | None, deadline: _Deadline) -> str:
        if length and length.isdigit():
            want = min(int(length), _MAX_REJECT_BODY)
        else:
            # No length: the body runs to EOF, if there is one at all. Do not wait long for it.
            want = _MAX_REJECT_BODY
            deadline = _Deadline(min(_LINGER_S, self.timeout or _LINGER_S))
        body = bytearray(start)
        try:
            while len(body) < want:
                deadline.apply(self._sock)
                data = self._sock.recv(_RECV_SIZE)
                if not data:
                    break
                body += data
        except OSError:  # TimeoutError included
            pass  # the status line already says it was refused; the body is a courtesy
        return bytes(body[:want]).decode(errors="replace").strip()

    def send(self, message: str | bytes) -> None:
        """Send one message: ``str`` as a text frame, ``bytes`` as a binary frame."""
        if isinstance(message, str):
            self._send_frame(OP_TEXT, message.encode())
        else:
            self._send_frame(OP_BINARY, message)

    def _send_frame(self, opcode: int, payload: bytes) -> None:
        frame = client_frame(opcode, payload)
        with self._send_lock:
            if self._lost is not None:
                raise ConnectionLost(self._lost)
            if self._close_sent:
                raise ConnectionLost("the WebSocket is already closing")
            try:
                _Deadline(self.timeout).apply(self._sock)
                self._sock.sendall(frame)
            except OSError as exc:
                # TimeoutError included: sendall may have written part of the frame, and
                # nothing sent after it could be read as WebSocket frames. The connection is
                # lost either way: closed here, and every later call says so.
                if isinstance(exc, TimeoutError):
                    why = "sending timed out part-way through a frame; the connection was closed"
                else:
                    why = f"the connection dropped while sending ({exc.strerror or exc})"
                self._lost = why
                self._sock.close()
                raise ConnectionLost(why) from None
            if opcode == OP_CLOSE:
                self._close_sent = True

    def receive(self) -> str | bytes:
        """The next data message. Answers pings on the way; raises on close or failure."""
        deadline = _Deadline(self.timeout)
        while True:
            event = self._next_event(deadline)
            if isinstance(event, Message):
                return event.data
            if isinstance(event, Ping):
                self._send_frame(OP_PONG, event.payload)
            else:
                self._answer_close(event)
                raise ConnectionClosed(event.code, event.reason)

    def _next_event(self, deadline: _Deadline) -> Message | Ping | Close:
        """The next event worth acting on; pongs are skipped (we never send pings)."""
        while True:
            try:
                event = self._reader.next_event()
            except WebSocketProtocolError as exc:
                self._fail(exc.close_code, exc.message)
                raise
            if event is None:
                data = self._recv(deadline)
                if not data:
                    self._sock.close()
                    raise ConnectionLost("the server hung up without a close frame")
                self._reader.receive_data(data)
            elif not isinstance(event, Pong):
                return event

    def _recv(self, deadline: _Deadline) -> bytes:
        if self._lost is not None:
            raise ConnectionLost(self._lost)
        try:
            deadline.apply(self._sock)
            return self._sock.recv(_RECV_SIZE)
        except ConnectionResetError:
            self._sock.close()
            raise ConnectionLost("the connection was reset by the server") from None

    def _fail(self, code: int, reason: str) -> None:
        """Tell the server why we give up (best effort), then drop the connection."""
        try:
            if not self._close_sent:
                self._send_frame(OP_CLOSE, encode_close_payload(code, reason))
        except (OSError, WebSocketError):
            pass
        self._sock.close()

    def _answer_close(self, event: Close) -> None:
        self._server_close = event
        try:
            if not self._close_sent:
                code = CLOSE_NORMAL if event.code == CLOSE_NO_STATUS else event.code
                self._send_frame(OP_CLOSE, encode_close_payload(code))
            self._linger()
        except (OSError, WebSocketError):
            pass
        self._sock.close()

    def _linger(self) -> None:
        """Give the server a moment to hang up first, as RFC 6455 section 7.1.1 prefers."""
        deadline = _Deadline(min(_LINGER_S, self.timeout or _LINGER_S))
        while True:
            deadline.apply(self._sock)
            if not self._sock.recv(_RECV_SIZE):
                return

    def close(self, code: int = CLOSE_NORMAL, reason: str = "") -> Close:
        """Run the close handshake and return the server's close (code 1006 if it never came).

        Never raises for a peer that misbehaves while closing: by then there is nothing left to
        save, and the caller's command has already succeeded or failed.
        """
        if self._server_close is not None:
            return self._server_close
        result = Close(CLOSE_ABNORMAL, "")
        try:
            self._send_frame(OP_CLOSE, encode_close_payload(code, reason))
            deadline = _Deadline(self.timeout)
            while True:
                event = self._next_event(deadline)
                if isinstance(event, Close):
                    result = event
                    break
            self._linger()
        except (OSError, WebSocketError):
            pass
        self._sock.close()
        self._server_close = result
        return result

    def abort(self) -> None:
        """Drop the connection without a close handshake."""
        self._sock.close()

    def hang_up(self) -> None:
        """Shut the connection down in both directions without closing the socket, so that a
        :meth:`receive` blocked in another thread wakes up (with :class:`ConnectionLost`)."""
        try:
            self._sock.shutdown(_socket.SHUT_RDWR)
        except OSError:
            pass  # already gone: the other thread sees that too
