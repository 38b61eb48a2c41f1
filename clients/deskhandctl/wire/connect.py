"""Opening a session with the daemon: find the socket, connect, handshake, say hello.

This is where low-level failures become the CLI's exit codes (see
:mod:`deskhandctl.exitcodes`): nobody listening is :class:`NotRunning` (after an autostart
attempt when that is allowed), EACCES and a hang-up before the handshake are
:class:`PermissionDenied`, a refused or malformed handshake is :class:`ProtocolFailed`, and a
deadline is :class:`TimedOut`. Before a byte is sent, :func:`connect` makes sure the socket is
our own user's daemon (:mod:`deskhand_d.clientcheck`); if not, :class:`NotYourDaemon`.
Autostart itself lives in :mod:`deskhandctl.wire.autostart`, which is imported only when it is
needed and is handed the function that tries to connect (it imports nothing from here).
"""

from __future__ import annotations

import errno
import os
import sys
import time

from deskhand_d.clientcheck import NotOurDaemon, check_peer, check_socket_dir
from deskhandctl.exitcodes import (
    DaemonBusy,
    NotRunning,
    NotYourDaemon,
    PermissionDenied,
    ProtocolFailed,
    TimedOut,
    UsageError,
    not_running_message,
)
from deskhandctl.wire.client import ClosedBeforeHandshake, ConnectionLost, WebSocket, connect_unix
from deskhandctl.wire.handshake import HandshakeError, HandshakeRejected
from deskhandctl.wire.session import SUBPROTOCOL, WS_TARGET, Session, ignore_event

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Mapping

    from deskhandctl.wire.session import EventHook

# errno values that mean "nobody is listening here": no file, a stale file, not a socket.
_NOT_LISTENING = frozenset({errno.ENOENT, errno.ECONNREFUSED, errno.ENOTDIR, errno.ENOTSOCK})
_FALSEY = frozenset({"", "0", "false", "no", "off"})
# sizeof(sun_path), the most connect() takes: 108 bytes on Linux, 104 on macOS and the BSDs.
_MAX_PATH_BYTES = 108 if sys.platform.startswith("linux") else 104


def resolve_socket(flag: str | None, env: Mapping[str, str] = os.environ) -> str:
    """``--socket``, else ``$DESKHAND_SOCKET``, else the platform default."""
    if flag:
        return flag
    if env.get("DESKHAND_SOCKET"):
        return env["DESKHAND_SOCKET"]
    from deskhand_d.paths import default_socket_str  # no pathlib on this path

    return default_socket_str(env)


def resolve_session(flag: str | None, env: Mapping[str, str] = os.environ) -> str:
    """``--session``, else ``$DESKHAND_SESSION``, else ``cli-<uid>``; checked like ``--session``.

    An explicit empty ``--session ''`` means a throwaway session; an empty variable is unset.
    """
    if flag is not None:
        return flag
    name = env.get("DESKHAND_SESSION", "")
    if not name:
        return f"cli-{os.getuid()}"
    from deskhandctl.wire.names import parse_session  # only when the variable is set

    try:
        return parse_session(name)
    except ValueError as exc:
        raise UsageError(f"DESKHAND_SESSION={name!r} is not a usable session name: {exc}") from None


def autostart_allowed(flag_off: bool, env: Mapping[str, str] = os.environ) -> bool:
    """Autostart is on unless ``--no-autostart`` or ``DESKHAND_NO_AUTOSTART`` says otherwise."""
    if flag_off:
        return False
    return env.get("DESKHAND_NO_AUTOSTART", "").strip().lower() in _FALSEY


def _too_long(socket_path: str) -> UsageError:
    return UsageError(
        f"the socket path is too long for a Unix socket ({len(socket_path)} bytes): "
        f"{socket_path}. Choose a shorter --socket path."
    )


class NoListener(Exception):
    """Internal: the connect attempt found no daemon (ENOENT, ECONNREFUSED, ...)."""


def connect(socket_path: str, *, timeout: float | None) -> _socket.socket:
    """A connected socket to our own user's daemon, :class:`NoListener`, or a
    :class:`CliError` for other failures. Nothing has been sent on it yet."""
    if len(os.fsencode(socket_path)) > _MAX_PATH_BYTES:
        raise _too_long(socket_path)  # before the checks: this path can never work anywhere
    try:
        check_socket_dir(socket_path)
    except NotOurDaemon as exc:
        raise NotYourDaemon(exc.code, exc.message) from None
    sock = _connect(socket_path, timeout=timeout)
    try:
        # The directory check cannot see a swap between it and the connect; the kernel's
        # record of the listener's uid on this very connection can.
        check_peer(sock, socket_path)
    except NotOurDaemon as exc:
        sock.close()
        raise NotYourDaemon(exc.code, exc.message) from None
    return sock


def _connect_if_listening(socket_path: str, timeout: float | None) -> _socket.socket | None:
    """:func:`connect`, or None while nobody listens there."""
    try:
        return connect(socket_path, timeout=timeout)
    except NoListener:
        return None


#: How long a connect refused because the listen backlog is full is tried again: a burst of
#: clients drains in milliseconds, a daemon out of descriptors does not.
BUSY_RETRY_S = 1.0


def _connect(socket_path: str, *, timeout: float | None) -> _socket.socket:
    try:
        return _connect_when_room(socket_path, timeout)
    except TimeoutError:
        raise TimedOut(
            f"connecting to {socket_path} timed out: deskhand-d is not accepting connections. "
            "It may be overloaded or stuck; try again, or restart it."
        ) from None
    except PermissionError:
        raise PermissionDenied(
            f"permission denied connecting to {socket_path}. The socket, or its directory, "
            "belongs to another user. Run deskhandctl as the user who runs deskhand-d, or "
            "point --socket (or DESKHAND_SOCKET) at your own daemon's socket."
        ) from None
    except OSError as exc:
        if exc.errno in _NOT_LISTENING:
            raise NoListener(socket_path) from None
        if exc.errno == errno.EAGAIN:  # a Unix socket's listen backlog is full
            raise DaemonBusy(
                f"deskhand-d at {socket_path} is not taking connections: too many are waiting "
                "for it (it may be out of file descriptors). Try again shortly."
            ) from None
        if exc.errno is None and "too long" in str(exc):
            raise _too_long(socket_path) from None
        raise NotRunning(f"cannot connect to {socket_path}: {exc.strerror or exc}") from None


def _connect_when_room(socket_path: str, timeout: float | None) -> _socket.socket:
    """:func:`connect_unix`, tried again for :data:`BUSY_RETRY_S` while the listen backlog is
    full (EAGAIN): nothing has been sent, so trying again cannot do anything twice."""
    give_up = time.monotonic() + BUSY_RETRY_S
    pause = 0.005
    while True:
        try:
            return connect_unix(socket_path, timeout=timeout)
        except BlockingIOError:
            if time.monotonic() + pause > give_up:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.1)


def open_websocket(sock: _socket.socket, socket_path: str, *, timeout: float | None) -> WebSocket:
    """Run the WebSocket handshake on ``sock``, mapping failures to exit codes."""
    try:
        return WebSocket.open(sock, target=WS_TARGET, subprotocol=SUBPROTOCOL, timeout=timeout)
    except TimeoutError:
        raise TimedOut(
            f"deskhand-d at {socket_path} accepted the connection but did not answer the "
            "handshake in time. It may be stuck; restart it."
        ) from None
    except ClosedBeforeHandshake:
        raise PermissionDenied(
            f"deskhand-d at {socket_path} hung up without answering the handshake. It does "
            "that to processes of other users: run deskhandctl as the user who runs the daemon."
        ) from None
    except HandshakeRejected as exc:
        if exc.status == 503:  # the daemon's only 503: every connection slot is taken
            raise DaemonBusy(
                f"deskhand-d at {socket_path} refused the connection: "
                + (exc.body or "too many connections")
            ) from None
        raise ProtocolFailed(
            f"deskhand-d refused the connection: HTTP {exc.status} {exc.reason}"
            + (f": {exc.body}" if exc.body else "")
            + ". Install matching versions of deskhand-d and deskhandctl."
        ) from None
    except HandshakeError as exc:
        raise ProtocolFailed(
            f"the server at {socket_path} does not speak Deskhand's WebSocket protocol: {exc}. "
            "Check --socket, and that deskhand-d and deskhandctl are the same version."
        ) from None
    except (ConnectionLost, OSError) as exc:
        raise NotRunning(
            f"the connection to {socket_path} failed during the handshake: {exc}"
        ) from None


def open_session(
    socket_path: str,
    *,
    timeout: float | None,
    autostart: bool,
    client_version: str,
    on_event: EventHook = ignore_event,
    session_name: str = "",
    can_answer_questions: bool = False,
) -> Session:
    """Connect (starting the daemon if allowed), handshake and say hello.

    ``session_name`` is the daemon session to open or resume (empty: a throwaway one);
    ``can_answer_questions`` is what hello declares.
    """
    sock = _connect_if_listening(socket_path, timeout)
    if sock is None:
        if not autostart:
            raise NotRunning(not_running_message(socket_path))
        from deskhandctl.wire.autostart import start_and_connect  # the rare path pays for it

        sock = start_and_connect(socket_path, lambda: _connect_if_listening(socket_path, timeout))
    ws = open_websocket(sock, socket_path, timeout=timeout)
    session = Session(ws, socket_path=socket_path, on_event=on_event)
    try:
        session.hello(
            name="deskhandctl",
            version=client_version,
            kind="cli",
            session=session_name,
            can_answer_questions=can_answer_questions,
        )
    except BaseException:
        ws.abort()
        raise
    return session
