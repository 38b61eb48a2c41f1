"""Run traces: one JSONL file per Jev run, so a failure can be explained from evidence.

Modes: ``metadata`` (steps, action kinds, indices, gate codes, timings, statuses; never tree
text, goals, typed text or labels) and ``full`` (adds the trees, the inputs, the exact Jev
exchanges and every dispatch; only after the person agreed for that run). Every line carries
the envelope ``schemaVersion``, ``runId``, ``mode``, a gap-free ``seq``, ``ts`` and
``sinceStartMs`` after the event's own fields.

Files live in ``<state dir>/traces/<runId>.jsonl``: the directory must be ours, 0700 and not a
symlink; a file is created exclusive, no-follow, 0600, and reopened (no-follow, same inode
required) for every line, so a directory swapped or made unusable mid-run is noticed at the next
write. Lines are written with one ``write`` each, straight to the kernel: ``dispatch_start`` is
on disk before the action is sent. A line that would pass the byte budget, or any write error,
marks the trace failed; every later write raises :class:`~deskhand_d.errors.TraceIncomplete`,
which stops the run before its next dispatch. Nothing is ever deleted or uploaded.

Redaction works on decoded values: every configured secret is replaced by ``[REDACTED]``
inside string values (longest secret first), never in keys or in the serialized bytes, so a
one-letter secret cannot break the JSON. Headers, the environment and screenshots are never
passed in.
"""

from __future__ import annotations

import os
import stat
import uuid
from collections.abc import Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Literal, Protocol

import msgspec
import trio

from deskhand_d.errors import TraceIncomplete

SCHEMA_VERSION = 1
DEFAULT_BUDGET = 64 * 1024 * 1024
METADATA_EVENTS = frozenset({"start", "decision", "action", "finish"})
REDACTED = "[REDACTED]"
Mode = Literal["metadata", "full"]

_encoder = msgspec.json.Encoder()


class Recorder(Protocol):
    path: str | None
    run_id: str
    failed: bool

    def event(self, name: str, **fields: Any) -> None: ...


class NoTrace:
    """Tracing off: records nothing, never fails."""

    path: str | None = None
    failed = False

    def __init__(self) -> None:
        self.run_id = uuid.uuid4().hex

    def event(self, name: str, **fields: Any) -> None:
        return None


def redact(value: Any, secrets: tuple[str, ...]) -> Any:
    """``value`` with every secret inside its string values replaced (keys are left alone)."""
    if isinstance(value, str):
        for secret in secrets:
            if secret in value:
                value = value.replace(secret, REDACTED)
        return value
    if isinstance(value, dict):
        return {k: redact(v, secrets) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v, secrets) for v in value]
    return value


def ensure_trace_dir(directory: Path) -> None:
    """Create ``directory`` 0700 or check that it is ours, private and not a symlink."""
    try:
        os.makedirs(directory.parent, mode=0o700, exist_ok=True)
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise TraceIncomplete(
            f"cannot create the trace directory {directory}: {exc.strerror}; nothing was run"
        ) from None
    st = os.lstat(directory)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or st.st_mode & 0o077:
        raise TraceIncomplete(
            f"{directory} must be a directory of yours with mode 0700 (not a symlink) to hold "
            "traces; fix it or move it away. Nothing was run."
        )


class TraceFile:
    def __init__(
        self,
        directory: Path,
        *,
        mode: Mode,
        secrets: Iterable[str] = (),
        budget: int = DEFAULT_BUDGET,
    ) -> None:
        ensure_trace_dir(directory)
        self.mode: Mode = mode
        self.run_id = uuid.uuid4().hex
        self.path: str | None = str(directory / f"{self.run_id}.jsonl")
        self.failed = False
        self._secrets = tuple(sorted({s for s in secrets if s}, key=len, reverse=True))
        self._budget = budget
        self._size = 0
        self._seq = 0
        self._started = trio.current_time()
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_APPEND | os.O_CLOEXEC
        try:
            fd = os.open(self.path, flags, 0o600)
        except OSError as exc:
            raise TraceIncomplete(
                f"cannot create the trace {self.path}: {exc.strerror}; nothing was run"
            ) from None
        try:
            st = os.fstat(fd)
            self._identity = (st.st_dev, st.st_ino)
        finally:
            os.close(fd)

    def event(self, name: str, **fields: Any) -> None:
        if self.failed:
            raise TraceIncomplete(
                "the trace is incomplete, so no further desktop action is dispatched",
                data={"trace_path": self.path},
            )
        if self.mode == "metadata" and name not in METADATA_EVENTS:
            return
        now = trio.current_time()
        line: dict[str, Any] = {"event": name, **redact(fields, self._secrets)}
        line.update(
            schemaVersion=SCHEMA_VERSION,
            runId=self.run_id,
            mode=self.mode,
            seq=self._seq + 1,
            ts=datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z"),
            sinceStartMs=round((now - self._started) * 1000),
        )
        data = _encoder.encode(line) + b"\n"
        if self._size + len(data) > self._budget:
            self._fail()
            raise TraceIncomplete(
                f"the trace reached its budget of {self._budget} bytes; the run stopped "
                "instead of dropping events",
                data={"trace_path": self.path},
            )
        try:
            self._append(data)
        except OSError as exc:
            self._fail()
            raise TraceIncomplete(
                f"writing the trace failed ({exc.strerror or exc}); the run stopped before any "
                "further dispatch",
                data={"trace_path": self.path},
            ) from None
        self._size += len(data)
        self._seq += 1

    def _append(self, data: bytes) -> None:
        assert self.path is not None
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND | os.O_NOFOLLOW | os.O_CLOEXEC)
        try:
            st = os.fstat(fd)
            if (st.st_dev, st.st_ino) != self._identity:
                raise OSError(0, "the trace file was replaced")
            view = memoryview(data)
            while view:
                written = os.write(fd, view)
                if written <= 0:
                    raise OSError(0, "a write made no progress")
                view = view[written:]
        finally:
            os.close(fd)

    def _fail(self) -> None:
        self.failed = True
