"""Service-manager integration: inherited listening sockets and readiness notification.

* systemd socket activation: ``LISTEN_PID`` equal to our pid and ``LISTEN_FDS >= 1`` means fd 3
  is our listening socket (sd_listen_fds(3)); the variables are removed so children never see
  them.
* launchd: ``launch_activate_socket("Listeners")`` from libSystem, called through ctypes, hands
  over the sockets declared in the LaunchAgent's ``Sockets`` dictionary. Started by our own
  agent (``XPC_SERVICE_NAME`` is its label) and not handed the socket, the daemon stops with a
  line saying why instead of binding the path itself: launchd's socket is already there, so it
  would only find "already running" and exit, again at every connection.
* ``READY=1`` / ``STOPPING=1`` datagrams to ``$NOTIFY_SOCKET`` (sd_notify(3)), sent only once
  the socket listens.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import socket
import sys
from collections.abc import MutableMapping
from pathlib import Path

import structlog

from deskhand_d.errors import EX_CONFIG, EX_UNAVAILABLE, StartupError
from deskhand_d.paths import LAUNCHD_LABEL

log = structlog.get_logger("deskhand.activation")

SD_LISTEN_FDS_START = 3
LAUNCHD_SOCKET_NAME = "Listeners"


def _check_listener(sock: socket.socket, origin: str) -> socket.socket:
    if sock.family != socket.AF_UNIX or sock.type != socket.SOCK_STREAM:
        sock.detach()
        raise StartupError(
            f"the socket passed by {origin} is not a Unix stream socket; "
            "check ListenStream= in deskhand.socket",
            exit_code=EX_UNAVAILABLE,
        )
    if not sock.getsockopt(socket.SOL_SOCKET, socket.SO_ACCEPTCONN):
        sock.detach()
        raise StartupError(
            f"the socket passed by {origin} is not listening", exit_code=EX_UNAVAILABLE
        )
    return sock


def systemd_listener(env: MutableMapping[str, str]) -> socket.socket | None:
    """The first socket passed by systemd, or None when not socket-activated."""
    pid = env.get("LISTEN_PID")
    fds = env.get("LISTEN_FDS")
    if pid is None or fds is None:
        return None
    for name in ("LISTEN_PID", "LISTEN_FDS", "LISTEN_FDNAMES"):
        env.pop(name, None)
    try:
        if int(pid) != os.getpid() or int(fds) < 1:
            return None
    except ValueError:
        return None
    fd = SD_LISTEN_FDS_START
    os.set_inheritable(fd, False)
    sock = socket.socket(fileno=fd)
    return _check_listener(sock, "systemd")


def activation_failed(service: str | None, why: str) -> StartupError | None:
    """The refusal to start when our own LaunchAgent started us but launchd handed over no
    socket, or None when we were not started by it (then binding the path ourselves is right).

    Exit status 78 (configuration): the agent's plist restarts the daemon only after a crash,
    so this is one clear line in the log per connection attempt, not a restart loop.
    """
    if service != LAUNCHD_LABEL:
        return None
    return StartupError(
        f"launchd started deskhand-d as {LAUNCHD_LABEL} but did not hand over its socket "
        f"({why}); run `deskhandctl service install` again to rewrite and reload the "
        "LaunchAgent, then check `launchctl print gui/$(id -u)/dev.deskhand.daemon`",
        exit_code=EX_CONFIG,
    )


def _not_activated(why: str) -> None:
    """Under our own agent, stop (see :func:`activation_failed`); else bind ourselves."""
    refusal = activation_failed(os.environ.get("XPC_SERVICE_NAME"), why)
    if refusal is not None:
        log.error("launchd.activation_failed", reason=why)
        raise refusal


def launchd_listener() -> socket.socket | None:
    """The socket launchd created for our ``Sockets`` entry, or None when not under launchd."""
    if sys.platform != "darwin" or "XPC_SERVICE_NAME" not in os.environ:
        return None
    libc_path = ctypes.util.find_library("System") or ctypes.util.find_library("c")
    if not libc_path:
        _not_activated("libSystem was not found")
        return None
    libc = ctypes.CDLL(libc_path, use_errno=True)
    fn = getattr(libc, "launch_activate_socket", None)
    if fn is None:
        _not_activated("this macOS has no launch_activate_socket")
        return None
    fds = ctypes.POINTER(ctypes.c_int)()
    count = ctypes.c_size_t(0)
    fn.argtypes = [
        ctypes.c_char_p,
        ctypes.POINTER(ctypes.POINTER(ctypes.c_int)),
        ctypes.POINTER(ctypes.c_size_t),
    ]
    fn.restype = ctypes.c_int
    err = fn(LAUNCHD_SOCKET_NAME.encode(), ctypes.byref(fds), ctypes.byref(count))
    if err != 0 or count.value < 1:
        # ESRCH: not managed by launchd / no such socket name; fall back to binding ourselves,
        # unless our own agent started us (then launchd's socket already holds the path).
        reason = os.strerror(err) if err else "no socket"
        _not_activated(f'launch_activate_socket("{LAUNCHD_SOCKET_NAME}"): {reason}')
        return None
    first = int(fds[0])
    for i in range(1, count.value):
        os.close(int(fds[i]))
    libc.free(fds)
    return _check_listener(socket.socket(fileno=first), "launchd")


class Notifier:
    """Sends sd_notify(3) datagrams if ``$NOTIFY_SOCKET`` is set; otherwise does nothing."""

    def __init__(self, env: MutableMapping[str, str]) -> None:
        target = env.pop("NOTIFY_SOCKET", None)
        self._address: str | bytes | None = None
        if target:
            # A leading '@' names a socket in the abstract namespace.
            self._address = b"\0" + target[1:].encode() if target.startswith("@") else target

    @property
    def enabled(self) -> bool:
        return self._address is not None

    def notify(self, message: str) -> None:
        if self._address is None:
            return
        with socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM) as s:
            try:
                s.sendto(message.encode(), self._address)
            except OSError as exc:
                log.warning("notify.failed", error=exc.strerror)


def inherited_path(sock: socket.socket) -> Path | None:
    name = sock.getsockname()
    if isinstance(name, str) and name:
        return Path(name)
    return None
