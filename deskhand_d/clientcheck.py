"""What a client checks before it sends a single byte to the daemon's socket.

A socket path only says where to connect, not who listens there. Another user who can create
the socket's directory first (the ``/tmp/deskhand-<uid>`` fallback lives in a world-writable
directory) or rename ours away and put theirs in its place would otherwise receive our hello,
our requests and the text we type. So every client, before it sends anything (not even the
HTTP upgrade), checks two things:

* :func:`check_socket_dir`, before connecting: the socket's directory is a real directory (not a
  symlink), owned by this uid, and not writable by group or others, so nobody else could have
  put the socket there or swap it;
* :func:`check_peer`, after connecting: the kernel's record of who listens on the other end of
  this very connection (SO_PEERCRED on Linux, LOCAL_PEERCRED on macOS) is this uid. This closes
  what the directory check cannot: a race between the check and the connect.

A failed check raises :class:`NotOurDaemon` with a stable ``code``, the ``path`` at fault and a
message that says what is wrong and what to do. Standard library only, and only its C modules
(``_socket``, ``os``, ``stat``), so the CLI can import it on its hot path; the MCP facade and any
other Python client are meant to call the same two functions.
"""

from __future__ import annotations

import _socket
import os
import stat
import sys

# Stable codes of the refusals below: scripts and tests match these, never the wording.
DIR_NOT_A_DIRECTORY = "socket_dir_not_a_directory"
DIR_FOREIGN_OWNER = "socket_dir_foreign_owner"
DIR_WRITABLE_BY_OTHERS = "socket_dir_writable_by_others"
PEER_FOREIGN_UID = "daemon_foreign_uid"
PEER_UNKNOWN = "daemon_peer_unknown"

_ELSEWHERE = (
    "set XDG_RUNTIME_DIR to your private runtime directory, or point --socket (or "
    "DESKHAND_SOCKET) at your own daemon's socket"
)


class NotOurDaemon(Exception):
    """The socket may belong to someone else: nothing was (or may be) sent to it."""

    def __init__(self, code: str, path: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.path = path
        self.message = message


def socket_dir(socket_path: str) -> str:
    """The directory that holds ``socket_path`` (``.`` for a bare name)."""
    return os.path.dirname(socket_path) or "."


def check_socket_dir(socket_path: str, uid: int | None = None) -> None:
    """Refuse a socket directory that another user could have made or could change.

    A directory that cannot be looked at (missing, or not reachable by us) is left to the
    connect, which reports it as it always has: nothing to refuse when nothing can answer.
    """
    me = os.getuid() if uid is None else uid
    directory = socket_dir(socket_path)
    try:
        st = os.lstat(directory)
    except OSError:
        return
    if not stat.S_ISDIR(st.st_mode):
        kind = "a symbolic link" if stat.S_ISLNK(st.st_mode) else "not a directory"
        raise NotOurDaemon(
            DIR_NOT_A_DIRECTORY,
            directory,
            f"refusing to connect to {socket_path}: its directory {directory} is {kind}, so "
            f"it may lead to a socket that someone else set up. Nothing was sent. Remove it "
            f"if you did not make it, or {_ELSEWHERE}.",
        )
    mode = stat.S_IMODE(st.st_mode)
    if mode & 0o022 and mode & stat.S_ISVTX:
        # A shared directory such as /tmp: anyone may create a socket in it.
        raise NotOurDaemon(
            DIR_WRITABLE_BY_OTHERS,
            directory,
            f"refusing to connect to {socket_path}: its directory {directory} is shared "
            f"(mode {mode:04o}), so anyone could have made that socket. Nothing was sent. "
            f"deskhand-d keeps its socket in a private directory of its own: "
            f"{_ELSEWHERE}.",
        )
    if st.st_uid != me:
        raise NotOurDaemon(
            DIR_FOREIGN_OWNER,
            directory,
            f"refusing to connect to {socket_path}: its directory {directory} belongs to "
            f"uid {st.st_uid}, not to you (uid {me}), so whatever listens there is not your "
            f"daemon and would read everything you send. Nothing was sent. Have its owner or "
            f"an administrator remove it, or {_ELSEWHERE}.",
        )
    if mode & 0o022:
        raise NotOurDaemon(
            DIR_WRITABLE_BY_OTHERS,
            directory,
            f"refusing to connect to {socket_path}: its directory {directory} has mode "
            f"{mode:04o}, so other users could have put their own socket there. Nothing was "
            f"sent. deskhand-d creates it 0700: remove it and start deskhand-d again, or, if "
            f"you are sure only you put anything in it, run `chmod 700 {directory}`.",
        )


def peer_uid(sock: _socket.socket) -> int:
    """The uid the kernel recorded for the other end of a connected Unix socket.

    OSError when the platform cannot tell; callers must treat that as a refusal.
    """
    if sys.platform.startswith("linux"):
        # struct ucred {pid_t pid; uid_t uid; gid_t gid;}: three native 32-bit ints.
        raw = sock.getsockopt(_socket.SOL_SOCKET, _socket.SO_PEERCRED, 12)
        return int.from_bytes(raw[4:8], sys.byteorder)
    if sys.platform == "darwin":
        # getpeereid(3) is LOCAL_PEERCRED underneath: <sys/un.h> SOL_LOCAL = 0,
        # LOCAL_PEERCRED = 1, struct xucred {u_int cr_version; uid_t cr_uid; short
        # cr_ngroups; gid_t cr_groups[16];} (76 bytes with padding).
        raw = sock.getsockopt(0, 1, 76)
        return int.from_bytes(raw[4:8], sys.byteorder)
    raise OSError(f"reading a Unix socket's peer is not supported on {sys.platform}")


def _trusted_peer(peer: int, me: int) -> bool:
    if peer == me:
        return True
    # macOS: for a LaunchAgent, launchd (running as root) creates and listens on the socket
    # and hands it to the daemon, and LOCAL_PEERCRED reports whoever called listen(). Root
    # can read your files and processes anyway, so it is not "another user" in this sense.
    return sys.platform == "darwin" and peer == 0


def check_peer(sock: _socket.socket, socket_path: str, uid: int | None = None) -> None:
    """Refuse a connection whose listening end is not this uid (the caller closes ``sock``)."""
    me = os.getuid() if uid is None else uid
    try:
        peer = peer_uid(sock)
    except OSError as exc:
        raise NotOurDaemon(
            PEER_UNKNOWN,
            socket_path,
            f"refusing to talk to {socket_path}: cannot tell which user listens there "
            f"({exc.strerror or exc}), so it may not be your daemon. Nothing was sent.",
        ) from None
    if not _trusted_peer(peer, me):
        raise NotOurDaemon(
            PEER_FOREIGN_UID,
            socket_path,
            f"refusing to talk to {socket_path}: the process listening there runs as uid "
            f"{peer}, not as you (uid {me}), so it is not your daemon. Nothing was sent. "
            f"Find out who created it and remove it, then start deskhand-d again; or "
            f"{_ELSEWHERE}.",
        )
