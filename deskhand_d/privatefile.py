"""Small owner-only files that several processes update: safe reads, one writer, atomic swaps.

Used by ``apps.json`` and ``grants.json``. Standard library only and no trio (the CLI may import
it; every call is short and synchronous).

Invariants of an update: every writer holds an exclusive ``flock`` on ``<name>.lock`` (writers
queue up; the kernel drops the lock when a writer dies, even by SIGKILL); the new content goes
to a fresh temp file that is fsynced and then renamed over the target, so readers and the
survivors of a crash see the old file or the new one, never a mix. The lock file is never
unlinked: removing it would let a waiter lock an orphaned inode while a newcomer locks a new
one. Reads refuse symlinks, non-regular files, files of another user, files with any group or
other permission bit, and files over the size limit, and they never modify what they refuse.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import re
import stat
import time
from collections.abc import Callable, Iterator
from pathlib import Path

from deskhand_d.errors import DeskhandError

ErrorFactory = Callable[[str, str], DeskhandError]
"""Builds the caller's error from (reason, message); reasons: unsafe, io, locked."""

_TEMP_RE = re.compile(r"\.[0-9a-f]{16}\.tmp")


class PrivateFile:
    def __init__(
        self, path: Path | str, *, max_bytes: int, lock_wait_s: float, error: ErrorFactory
    ) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self.max_bytes = max_bytes
        self.lock_wait_s = lock_wait_s
        self._error = error

    def fail(self, reason: str, message: str, exc: OSError | None = None) -> DeskhandError:
        if exc is not None:
            message = f"{message}: {exc.strerror or exc}"
        return self._error(reason, message)

    # -- reading --------------------------------------------------------------------------

    def read_bytes(self) -> bytes | None:
        """The file's bytes, or None if it does not exist. Raises the caller's error if unsafe."""
        # O_NONBLOCK: opening a FIFO planted at our path must not hang; fstat then refuses it.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self.fail(
                    "unsafe", f"{self.path} is a symbolic link; it must be a plain file"
                ) from None
            raise self.fail("unsafe", f"cannot open {self.path}", exc) from None
        try:
            self._check_safe(os.fstat(fd))
            chunks: list[bytes] = []
            size = 0
            while chunk := os.read(fd, self.max_bytes + 1 - size):
                chunks.append(chunk)
                size += len(chunk)
                if size > self.max_bytes:
                    raise self.fail("unsafe", f"{self.path} is larger than {self.max_bytes} bytes")
            return b"".join(chunks)
        except OSError as exc:
            raise self.fail("unsafe", f"cannot read {self.path}", exc) from None
        finally:
            os.close(fd)

    def _check_safe(self, st: os.stat_result) -> None:
        path = self.path
        mode = stat.S_IMODE(st.st_mode)
        if not stat.S_ISREG(st.st_mode):
            raise self.fail("unsafe", f"{path} is not a regular file")
        if st.st_size > self.max_bytes:
            raise self.fail("unsafe", f"{path} is larger than {self.max_bytes} bytes")
        if st.st_uid != os.getuid():
            raise self.fail(
                "unsafe", f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
            )
        if mode & 0o077:
            raise self.fail(
                "unsafe",
                f"{path} has mode {mode:04o}; it must be private to you: chmod 600 {path}",
            )

    # -- writing --------------------------------------------------------------------------

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Hold the writers' lock (creating the directory and lock file if needed)."""
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise self.fail("io", f"cannot create the directory of {self.path}", exc) from None
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.lock_path, flags, 0o600)
        except OSError as exc:
            raise self.fail("io", f"cannot open the lock file {self.lock_path}", exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                raise self.fail(
                    "unsafe", f"{self.lock_path} is not a regular file of yours; remove it"
                )
            self._wait_for_lock(fd)
            self._remove_stale_temps()
            yield
        finally:
            os.close(fd)  # releases the flock

    def _wait_for_lock(self, fd: int) -> None:
        # flock has no timeout, so poll: short sleeps first (the usual holder needs ~1 ms),
        # growing to 50 ms, until the deadline.
        deadline = time.monotonic() + self.lock_wait_s
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self.fail(
                    "locked",
                    f"another update of {self.path} has held {self.lock_path.name} for more "
                    f"than {self.lock_wait_s:g} s; try again later",
                )
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.05)

    def _remove_stale_temps(self) -> None:
        # Under the lock no other writer is mid-update, so a temp file of ours that is still
        # here was left by a writer that was killed before it could clean up.
        prefix = self.path.name
        try:
            names = os.listdir(self.path.parent)
        except OSError:
            return
        for entry in names:
            if entry.startswith(prefix) and _TEMP_RE.fullmatch(entry[len(prefix) :]):
                with contextlib.suppress(OSError):
                    os.unlink(self.path.parent / entry)

    def replace(self, data: bytes) -> None:
        """Swap in new content atomically. Call only while holding :meth:`locked`."""
        if len(data) > self.max_bytes:
            raise self.fail("limit", f"{self.path} would grow past {self.max_bytes} bytes")
        temp = self.path.with_name(f"{self.path.name}.{os.urandom(8).hex()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        created = renamed = False
        try:
            fd = os.open(temp, flags, 0o600)
            created = True
            try:
                os.fchmod(fd, 0o600)  # exactly 0600 whatever the umask
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
            renamed = True
        except OSError as exc:
            raise self.fail("io", f"cannot write {self.path}", exc) from None
        finally:
            if created and not renamed:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
        fsync_dir(self.path.parent)


def fsync_dir(directory: Path) -> None:
    """Make a rename durable. Best effort: some file systems refuse fsync on a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
