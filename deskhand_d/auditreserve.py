"""Room on the disk held for the audit log's ``end`` records, and a place for them to wait.

What this owns: the file ``audit.reserve`` beside ``audit.jsonl``. While it is *held* it is
``size`` bytes of random data (random so that a compressing file system stores every byte).
The audit log holds it before each dispatch starts; when the disk is full and a dispatch's
``end`` record does not fit, :meth:`Reserve.spill` cuts the file to nothing, which frees its
room, and writes that record into it. The log then writes the record where it belongs, in the
room just freed. A reserve that was spilled holds only such records, one JSON line each: if
the log could not take one even then, it waits there for the next start-up
(:meth:`deskhand_d.audit.AuditLog.recover`), and survives the daemon being killed.

Not a guarantee on every file system: a snapshot (btrfs, ZFS, APFS local snapshots) keeps the
freed blocks, and another program may take the room first. The log keeps such records in
memory too, so it writes them as soon as the disk takes writes again.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path
from typing import Final

RESERVE_FILE_NAME: Final = "audit.reserve"
DEFAULT_RESERVE_BYTES: Final = 64 * 1024
"""Room for about 150 end records (a record is under 1 KiB; most are 300-400 bytes)."""
_CHUNK: Final = 16 * 1024
_MAX_READ: Final = 4 * 1024 * 1024


class Reserve:
    """The reserve file of one audit directory (the caller verified the directory is private).
    Not thread-safe: the audit log calls it under its own lock."""

    def __init__(self, path: Path, size: int = DEFAULT_RESERVE_BYTES) -> None:
        if size < 0:
            raise ValueError("size must be zero or more")
        self.path = path
        self.size = size
        self.held = False
        """The file is ``size`` bytes of room this run wrote (a size of 0 is always held)."""
        self._fd: int | None = None

    def leftovers(self) -> list[bytes]:
        """The lines of a reserve an earlier run spilled (records it could not write to the
        log); nothing when the file is missing, ours but held, or not a regular file of ours."""
        try:
            fd = os.open(self.path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
        except OSError:
            return []
        with os.fdopen(fd, "rb") as f:
            st = os.fstat(f.fileno())
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                return []
            return f.read(_MAX_READ).splitlines()

    def hold(self) -> None:
        """Make the file ``size`` bytes of room again (a no-op while held). Raises OSError when
        the disk does not have the room; the file is then left empty."""
        if self.held or self.size == 0:
            self.held = True
            return
        fd = self._open()
        st = os.fstat(fd)
        if st.st_size == self.size and st.st_blocks * 512 >= self.size:
            self.held = True  # an earlier run's room, still whole (its records were recovered)
            return
        os.ftruncate(fd, 0)
        try:
            done = 0
            while done < self.size:
                done += os.pwrite(fd, os.urandom(min(_CHUNK, self.size - done)), done)
        except OSError:
            os.ftruncate(fd, 0)
            raise
        self.held = True

    def spill(self, line: bytes) -> bool:
        """Free the room (cut the file to nothing, if held) and append ``line``, a record the
        log could not write, flushed to the disk. True when it was written; never raises."""
        try:
            fd = self._open()
            if self.held:
                os.ftruncate(fd, 0)
                self.held = self.size == 0
            start = os.lseek(fd, 0, os.SEEK_END)
        except OSError:
            return False
        try:
            written = os.write(fd, line)
            while written < len(line):
                written += os.write(fd, line[written:])
            os.fdatasync(fd)
        except OSError:
            try:  # no half record: the next one must start on a line of its own
                os.ftruncate(fd, start)
            except OSError:
                pass
            return False
        return True

    def close(self) -> None:
        if self._fd is not None:
            os.close(self._fd)
            self._fd = None

    def _open(self) -> int:
        if self._fd is None:
            flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
            fd = os.open(self.path, flags, 0o600)
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                os.close(fd)
                raise OSError(errno.EINVAL, f"{self.path} is not a regular file of yours")
            self._fd = fd
        return self._fd
