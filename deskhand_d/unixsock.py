"""The daemon's listening Unix socket: private directory, stale-socket dance, peer credentials.

Done the way ssh-agent and gpg-agent do it:

* the socket's directory is created 0700; if it already exists it must be a real directory
  owned by us with no group/other bits, otherwise we refuse to start and name path and mode
  (we never chmod a directory someone else set up);
* the directory's parent must not let anyone else rename it away and put their own in its
  place: it must belong to us or root, and be writable by nobody else unless it is sticky
  (like ``/tmp``, where only an entry's owner may rename it);
* a leftover socket is probed: if a daemon answers we refuse ("already running (pid N)"), if
  nobody answers it is stale and unlinked;
* a lock file beside the socket (``<socket>.lock``, flock'ed for the daemon's lifetime) makes
  "is another daemon starting or running here?" atomic, so two daemons racing to start cannot
  unlink each other's socket in the gap between ``bind`` and ``listen``;
* the socket is bound under umask 0177 (so it is born 0600), and on shutdown we unlink only
  the file whose device and inode we created;
* every accepted connection's peer uid is read from the kernel (SO_PEERCRED on Linux,
  LOCAL_PEERCRED/LOCAL_PEERPID on macOS) before any byte is read.
"""

from __future__ import annotations

import errno
import fcntl
import os
import socket
import stat
import struct
import sys
from dataclasses import dataclass
from pathlib import Path

from deskhand_d.errors import EX_ALREADY_RUNNING, EX_UNAVAILABLE, StartupError

# AF_UNIX paths are limited to sizeof(sun_path) - 1 bytes (107 on Linux, 103 on macOS).
MAX_PATH_BYTES = 103 if sys.platform == "darwin" else 107


@dataclass(frozen=True, slots=True)
class PeerCred:
    pid: int  # 0 when the platform cannot tell
    uid: int
    gid: int


def peer_credentials(sock: socket.socket) -> PeerCred:
    """The kernel's record of who is on the other end of a connected Unix socket."""
    if sys.platform.startswith("linux"):
        raw = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        pid, uid, gid = struct.unpack("3i", raw)
        return PeerCred(pid=pid, uid=uid, gid=gid)
    if sys.platform == "darwin":
        # <sys/un.h>: SOL_LOCAL = 0, LOCAL_PEERCRED = 1 (struct xucred), LOCAL_PEERPID = 2.
        raw = sock.getsockopt(0, 1, struct.calcsize("IIh16I") + 8)
        _version, uid = struct.unpack_from("II", raw)
        ngroups = struct.unpack_from("h", raw, 8)[0]
        gid = struct.unpack_from("I", raw, 12)[0] if ngroups > 0 else -1
        try:
            pid = struct.unpack("i", sock.getsockopt(0, 2, 4))[0]
        except OSError:
            pid = 0
        return PeerCred(pid=pid, uid=uid, gid=gid)
    raise OSError(errno.ENOTSUP, f"peer credentials are not supported on {sys.platform}")


def ensure_safe_parent(directory: Path) -> None:
    """Refuse a socket directory whose parent lets another user replace it.

    In such a parent, another user can rename our 0700 directory away and create their own
    under the same name; clients that trusted the path would talk to them.
    """
    uid = os.getuid()
    parent = directory.parent
    try:
        st = os.stat(parent)  # the directory the entry really lives in, symlinks followed
    except OSError:
        return  # creating the directory below reports a missing or unreachable parent
    mode = stat.S_IMODE(st.st_mode)
    if st.st_uid not in (uid, 0):
        raise StartupError(
            f"refusing to use {directory}: its parent {parent} belongs to uid {st.st_uid}, "
            f"who could replace {directory.name} with their own; choose a socket inside a "
            "directory of yours with --socket, or set XDG_RUNTIME_DIR",
            exit_code=EX_UNAVAILABLE,
        )
    if mode & 0o022 and not mode & stat.S_ISVTX:
        raise StartupError(
            f"refusing to use {directory}: its parent {parent} has mode {mode:04o}, so other "
            f"users could rename {directory.name} away and put their own in its place; run "
            f"`chmod go-w {parent}` (or `chmod +t {parent}`, as /tmp is), or choose "
            "another socket with --socket",
            exit_code=EX_UNAVAILABLE,
        )


def ensure_private_dir(directory: Path) -> None:
    """Create ``directory`` 0700, or verify an existing one is ours and private."""
    uid = os.getuid()
    ensure_safe_parent(directory)
    try:
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except FileNotFoundError:
        raise StartupError(
            f"cannot create the socket directory {directory}: its parent does not exist",
            exit_code=EX_UNAVAILABLE,
        ) from None
    except PermissionError:
        raise StartupError(
            f"cannot create the socket directory {directory}: permission denied",
            exit_code=EX_UNAVAILABLE,
        ) from None
    st = os.lstat(directory)
    mode = stat.S_IMODE(st.st_mode)
    if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
        raise StartupError(
            f"refusing to use {directory}: it is not a plain directory (a symlink or a file); "
            "remove it and start again",
            exit_code=EX_UNAVAILABLE,
        )
    if st.st_uid != uid:
        raise StartupError(
            f"refusing to use {directory}: it belongs to uid {st.st_uid}, not to you "
            f"(uid {uid}); remove it or choose another socket with --socket",
            exit_code=EX_UNAVAILABLE,
        )
    if mode & 0o077:
        raise StartupError(
            f"refusing to use {directory}: its mode is {mode:04o}, so other users could reach "
            f"the socket; run `chmod 700 {directory}` if you trust its contents, or remove it",
            exit_code=EX_UNAVAILABLE,
        )


def probe_existing(path: Path) -> None:
    """Deal with a file already at ``path``: refuse if a daemon lives, unlink if stale."""
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        return
    if not stat.S_ISSOCK(st.st_mode):
        raise StartupError(
            f"refusing to start: {path} exists and is not a socket; move it away first",
            exit_code=EX_UNAVAILABLE,
        )
    probe = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    probe.settimeout(1.0)
    try:
        probe.connect(os.fspath(path))
    except (ConnectionRefusedError, FileNotFoundError):
        # Nobody accepts: a leftover from a daemon that died without cleaning up.
        try:
            os.unlink(path)
        except FileNotFoundError:
            pass
        return
    except OSError as exc:
        raise StartupError(
            f"refusing to start: cannot probe the existing socket {path}: {exc.strerror}",
            exit_code=EX_UNAVAILABLE,
        ) from None
    else:
        try:
            pid = peer_credentials(probe).pid
        except OSError:
            pid = 0
        who = f"pid {pid}" if pid else "pid unknown"
        raise StartupError(
            f"deskhand-d is already running ({who}) on {path}",
            exit_code=EX_ALREADY_RUNNING,
        )
    finally:
        probe.close()


def acquire_lock(path: Path) -> int:
    """Take the per-socket instance lock, or refuse naming the daemon that holds it."""
    lock_path = path.with_name(path.name + ".lock")
    try:
        fd = os.open(lock_path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    except OSError as exc:
        raise StartupError(
            f"cannot open the lock file {lock_path}: {exc.strerror}", exit_code=EX_UNAVAILABLE
        ) from None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = os.read(fd, 32).decode(errors="replace").strip()
        os.close(fd)
        who = f"pid {holder}" if holder.isdigit() else "pid unknown"
        raise StartupError(
            f"deskhand-d is already running ({who}) on {path}", exit_code=EX_ALREADY_RUNNING
        ) from None
    os.ftruncate(fd, 0)
    os.write(fd, f"{os.getpid()}\n".encode())
    return fd


@dataclass(frozen=True, slots=True)
class BoundSocket:
    sock: socket.socket
    path: Path
    identity: tuple[int, int] | None  # (st_dev, st_ino) of the file we created; None if inherited
    lock_fd: int | None = None  # held for the daemon's lifetime; closing it releases the lock


def bind_private(path: Path, *, backlog: int = socket.SOMAXCONN) -> BoundSocket:
    """Create the listening socket at ``path`` with the checks described above. The backlog
    is the most the system allows (the kernel caps it at its own limit, ``somaxconn``): a
    burst of clients waits in it rather than being turned away (128 refused 21 to 33 of 200
    clients connecting at once)."""
    if len(os.fsencode(path)) > MAX_PATH_BYTES:
        raise StartupError(
            f"the socket path {path} is longer than {MAX_PATH_BYTES} bytes; "
            "choose a shorter one with --socket",
            exit_code=EX_UNAVAILABLE,
        )
    ensure_private_dir(path.parent)
    lock_fd = acquire_lock(path)
    try:
        probe_existing(path)
    except StartupError:
        os.close(lock_fd)
        raise
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    old_umask = os.umask(0o177)
    try:
        sock.bind(os.fspath(path))
    except OSError as exc:
        sock.close()
        os.close(lock_fd)
        raise StartupError(
            f"cannot bind {path}: {exc.strerror}", exit_code=EX_UNAVAILABLE
        ) from None
    finally:
        os.umask(old_umask)
    st = os.lstat(path)
    sock.listen(backlog)
    return BoundSocket(sock=sock, path=path, identity=(st.st_dev, st.st_ino), lock_fd=lock_fd)


def release(bound: BoundSocket) -> None:
    """Unlink our socket file (if still ours), close the socket, release the lock."""
    unlink_if_ours(bound)
    bound.sock.close()
    if bound.lock_fd is not None:
        # The lock file itself stays: unlinking it could let two daemons hold "the" lock.
        os.close(bound.lock_fd)


def unlink_if_ours(bound: BoundSocket) -> bool:
    """Remove the socket file only if it is still the one we created."""
    if bound.identity is None:
        return False  # the service manager owns an inherited socket's file
    try:
        st = os.lstat(bound.path)
    except FileNotFoundError:
        return False
    if (st.st_dev, st.st_ino) != bound.identity:
        return False  # someone replaced it (e.g. a newer daemon); leave theirs alone
    os.unlink(bound.path)
    return True
