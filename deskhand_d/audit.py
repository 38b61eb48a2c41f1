"""The audit log: metadata-only JSONL records of every dispatch, in a private, size-rotated file.

Theory of operation:

* Write-ahead: :meth:`AuditLog.begin` writes a ``start`` record and waits until it is on the
  disk (``fdatasync``) before the call is handed to the backend; if that fails, the caller
  dispatches nothing (``audit_unavailable``). The outcome follows as an ``end`` record with the
  same ``dispatch`` id. A ``start`` with no ``end`` reads as delivery ``unknown``; on the next
  start-up :meth:`AuditLog.recover` closes such dispatches with an ``end`` of code
  ``daemon_stopped``. :mod:`deskhand_d.auditread` pairs the records for ``deskhandctl audit``.
* A full disk never loses an outcome while the daemon runs. A dispatch starts only while
  :mod:`deskhand_d.auditreserve` holds room for end records; an ``end`` the disk refuses is
  written into that room at once (the reserve is cut to nothing, which frees it). If even that
  fails, the ``end`` is kept in memory (and in the reserve file when it fits there) and written,
  marked ``late``, before anything else the log writes, as soon as the disk takes writes again;
  meanwhile nothing new is dispatched. One an earlier run left in the reserve file is written
  by the next start-up, so ``daemon_stopped`` is said only when no outcome was known.

* What is recorded is fixed by :class:`AuditEntry`: who asked (session, client, pid), which app
  and tool, whether the call was dispatched, refused or ended with an unknown outcome, how long
  it took, the error code and approval reason if any, and for typed text or values only their
  length. Never the accessibility tree, typed text, coordinates, element labels or keys.
  :func:`entry_for` is the pure door from a raw tool call to an entry: it reads only the
  argument keys it needs and drops the rest, so callers can hand it the arguments as they are.
* The file is ``audit.jsonl`` (0600) in a directory that is ours and 0700 (created so, or
  refused if it is a symlink, someone else's, or open to group/other). Each record is one
  ``write(2)`` on an ``O_APPEND`` descriptor, so a crash loses at most the record in flight;
  a torn last line found on opening is ended with a newline before anything is appended, so
  every later record still parses on its own. When the next line would push the
  file past ``max_bytes`` it is rotated: ``audit.jsonl.N-1`` -> ``.N`` (``.keep`` dropped), ...,
  ``audit.jsonl`` -> ``.1``.
* One writer per directory: the daemon holds the only :class:`AuditLog`. Only ``start``
  records (and ends waiting in the reserve) are flushed to the disk: an ``end`` lost in a power
  cut leaves the honest reading, ``unknown``.

Blocking: an ``end`` record is a single unbuffered append to a local file (tens of
microseconds; a rotation adds a few renames every few MiB): write it directly from the trio
thread (on a full disk it also waits for one flush of the reserve file: rare, and better than
losing the outcome). :meth:`AuditLog.begin` waits for the disk (and writes the reserve at the
first dispatch), so the daemon runs it in a worker thread (the dispatch waits for it anyway;
other clients do not). The log is thread-safe.
"""

from __future__ import annotations

import collections
import os
import secrets
import stat
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import TracebackType
from typing import Any, Final, Literal

import msgspec
import structlog

from deskhand_d import paths
from deskhand_d.auditreserve import DEFAULT_RESERVE_BYTES, RESERVE_FILE_NAME, Reserve
from deskhand_d.errors import EX_UNAVAILABLE, Count, Delivery, StartupError

log = structlog.get_logger("deskhand.audit")

AUDIT_FILE_NAME: Final = "audit.jsonl"
DEFAULT_MAX_BYTES: Final = 5 * 1024 * 1024
DEFAULT_KEEP: Final = 5
TEXT_KEYS: Final = ("text", "value")
"""Tool arguments whose content is typed or set text: only their length is recorded."""
_MAX_FIELD_CHARS: Final = 200
MAX_KEPT: Final = 1000
"""Ends kept in memory while the disk refuses them; beyond this, refusals (ends without a
``start``) are counted and dropped. Ends of dispatches that started are never dropped."""


class AuditCount(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    """How much input a ``partial`` (or interrupted) action delivered: counts only."""

    done: int
    total: int
    unit: str


class AuditEntry(msgspec.Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One dispatch. Every field is metadata; adding one needs a privacy review."""

    time: str
    """When the dispatch finished, ISO 8601 UTC with milliseconds (``...Z``)."""
    session: str
    client: str
    client_pid: int
    """0 when the platform cannot tell."""
    app: str
    tool: str
    delivery: Delivery
    """``dispatched``: sent and answered; ``refused``: never sent (policy, approval, stop, bad
    request, an input check before the first event); ``partial``: the backend stopped after
    sending part of the input (see ``delivered``); ``unknown``: sent, but the outcome never
    arrived (a crash, a stop, a disconnect or the daemon stopping in flight)."""
    latency_ms: float
    code: str
    """The error code of the reply, or ``""``."""
    approval_reason: str
    """Why an approval prompt was or was not shown, or ``""``."""
    text_length: int | None
    """Length in characters of the typed text or set value; ``None`` for other tools."""
    run_id: str = ""
    """The Jev run (its trace's ``runId``) the dispatch belonged to; ``""`` for native ops."""
    delivered: AuditCount | None = None
    """For ``partial`` (and ``unknown`` where the backend counted): how much was sent."""
    phase: Literal["start", "end"] = "end"
    """``start``: written (and flushed to disk) before the call is handed to the backend, with
    delivery ``unknown`` — which is what it stays if no ``end`` with the same ``dispatch``
    follows; ``end``: the outcome."""
    dispatch: str = ""
    """Pairs a ``start`` with its ``end`` (a random id); ``""`` on lines of older versions."""
    effect: str = ""
    """What reading the element back after the action showed: ``changed``, ``unchanged``
    or ``unreadable``; ``""`` where nothing was read back."""
    late: bool = False
    """True on an ``end`` written after the fact: when the dispatch finished, the disk took
    no writes, so the daemon kept the outcome and wrote it once the disk did (or, left in the
    reserve file, the next start-up wrote it). ``time`` is still when the dispatch finished."""


def entry_for(
    *,
    now: float,
    session: str,
    client: str,
    client_pid: int | None,
    tool: str,
    delivery: Delivery,
    latency_ms: float,
    app: str = "",
    arguments: Mapping[str, Any] | None = None,
    code: str = "",
    approval_reason: str = "",
    run_id: str = "",
    delivered: Count | None = None,
    phase: Literal["start", "end"] = "end",
    dispatch: str = "",
    effect: str = "",
) -> AuditEntry:
    """Build the entry for one dispatch from the raw call, keeping metadata only.

    Args:
        now: wall-clock time of completion, seconds since the epoch.
        app: the target app; if empty, taken from ``arguments["app"]``.
        arguments: the tool arguments as the client sent them. Only ``app`` and the length of
            ``text``/``value`` are read; everything else (coordinates, element indexes,
            prefixes, keys, actions) is dropped unread.
    """
    args = arguments or {}
    if not app and isinstance(args.get("app"), str):
        app = args["app"]
    text_length: int | None = None
    for key in TEXT_KEYS:
        if isinstance(args.get(key), str):
            text_length = len(args[key])
            break
    return AuditEntry(
        time=_iso_utc(now),
        session=_clip(session),
        client=_clip(client),
        client_pid=max(0, client_pid or 0),
        app=_clip(app),
        tool=_clip(tool),
        delivery=delivery,
        latency_ms=round(max(0.0, latency_ms), 3),
        code=_clip(code),
        approval_reason=_clip(approval_reason),
        text_length=text_length,
        run_id=_clip(run_id),
        delivered=(
            None
            if delivered is None
            else AuditCount(delivered.done, delivered.total, _clip(delivered.unit))
        ),
        phase=phase,
        dispatch=_clip(dispatch),
        effect=_clip(effect),
    )


def _iso_utc(now: float) -> str:
    stamp = datetime.fromtimestamp(now, UTC).isoformat(timespec="milliseconds")
    return stamp.replace("+00:00", "Z")


def _clip(value: str) -> str:
    # Bounds each line; these fields are identifiers, so a longer value is already suspicious.
    return value[:_MAX_FIELD_CHARS]


def default_audit_dir(env: Mapping[str, str] = os.environ) -> Path:
    return paths.state_dir(env) / "audit"


class AuditLog:
    """Appends :class:`AuditEntry` lines to ``<directory>/audit.jsonl`` with size rotation.

    Raises StartupError on construction if the directory is unsafe (the daemon must not run
    with an audit log others can read or tamper with), and OSError from :meth:`record` if the
    disk write fails.
    """

    def __init__(
        self,
        directory: Path | None = None,
        *,
        max_bytes: int = DEFAULT_MAX_BYTES,
        keep: int = DEFAULT_KEEP,
        reserve_bytes: int = DEFAULT_RESERVE_BYTES,
    ) -> None:
        if max_bytes < 1:
            raise ValueError("max_bytes must be positive")
        if keep < 0:
            raise ValueError("keep must be zero or more")
        self.directory = default_audit_dir() if directory is None else directory
        self.path = self.directory / AUDIT_FILE_NAME
        self._max_bytes = max_bytes
        self._keep = keep
        self._encoder = msgspec.json.Encoder()
        self._lock = threading.Lock()
        ensure_private_dir(self.directory)
        self._fd: int | None = None
        self._size = 0
        self._torn = False  # the last write stopped part-way (a full disk)
        self._open()
        self._reserve = Reserve(self.directory / RESERVE_FILE_NAME, reserve_bytes)
        self._decoder = msgspec.json.Decoder(AuditEntry)
        # Outcomes an earlier run could write only to the reserve; recover() writes them.
        self._left: dict[str, AuditEntry] = {}
        for raw in self._reserve.leftovers():
            entry = self._decode(raw)
            if entry is not None and entry.phase == "end" and entry.dispatch:
                self._left[entry.dispatch] = entry
        self._kept: collections.deque[AuditEntry] = collections.deque()
        self._dropped = 0

    def record(self, entry: AuditEntry, *, durable: bool = False) -> None:
        """Append one line and hand it to the kernel before returning; with ``durable``, also
        wait until it is on the disk (``fdatasync``).

        A line that a full disk cut short is ended with a newline before the next one is
        appended, so one failed write never glues two records into an unreadable line.
        """
        line = self._encoder.encode(entry) + b"\n"
        with self._lock:
            self._write_kept()
            self._append(line, durable=durable)

    def _append(self, line: bytes, *, durable: bool = False) -> None:
        """:meth:`record` without the lock and without writing the kept ends first."""
        if self._fd is None:
            raise ValueError("the audit log is closed")
        if self._size and self._size + len(line) > self._max_bytes:
            self._rotate()
        assert self._fd is not None
        if self._torn:
            self._end_torn_line()
        self._torn = True  # until the whole line is out
        written = os.write(self._fd, line)
        while written < len(line):  # only on a signal or a full disk; finish the line
            written += os.write(self._fd, line[written:])
        self._torn = False
        self._size += len(line)
        if durable:
            os.fdatasync(self._fd)

    def begin(self, **fields: Any) -> str:
        """Write the durable ``start`` record of a dispatch before it is sent; return its id.

        Takes the keyword arguments of :func:`entry_for` except ``now``, ``phase``,
        ``delivery``, ``latency_ms`` and ``dispatch``. Raises OSError when the record cannot
        be made durable, when an earlier outcome still waits for the disk, or when there is no
        room to hold for this dispatch's own outcome: the caller must then not dispatch.
        Blocks for a disk flush, so call it from a worker thread.
        """
        dispatch_id = secrets.token_hex(8)
        entry = entry_for(
            now=time.time(),
            phase="start",
            delivery="unknown",
            latency_ms=0.0,
            dispatch=dispatch_id,
            **fields,
        )
        line = self._encoder.encode(entry) + b"\n"
        with self._lock:
            self._write_kept()
            self._reserve.hold()
            self._append(line, durable=True)
        return dispatch_id

    def dispatch(self, **fields: Any) -> bool:
        """Record the outcome of one dispatch (the keyword arguments of :func:`entry_for`
        minus ``now``; ``dispatch`` pairs it with its :meth:`begin`).

        Returns False, after logging why, if the line could not be written even into the
        reserve's room: it is then kept and written (``late``) as soon as the disk takes
        writes. Never raises OSError: the dispatch happened whatever the disk says.
        """
        entry = entry_for(now=time.time(), **fields)
        line = self._encoder.encode(entry) + b"\n"
        with self._lock:
            try:
                self._write_kept()
                self._append(line)
                return True
            except OSError as exc:
                error = exc.strerror or type(exc).__name__
            spilled = False
            if entry.dispatch:  # its start is on the disk: free the held room and use it
                late = msgspec.structs.replace(entry, late=True)
                spilled = self._reserve.spill(self._encoder.encode(late) + b"\n")
                try:
                    self._write_kept()
                    self._append(line)
                except OSError:
                    pass
                else:
                    log.warning("audit.reserve_used", error=error, dispatch=entry.dispatch)
                    return True
            self._keep_end(entry)
            waiting = len(self._kept)
        log.warning(
            "audit.end_kept", error=error, dispatch=entry.dispatch, waiting=waiting, spilled=spilled
        )
        return False

    def write_kept(self) -> bool:
        """Write the ends the disk refused so far, if it takes them now (also done before any
        other record). True when none is waiting any more."""
        with self._lock:
            if self._fd is None:
                return not self._kept
            try:
                self._write_kept()
            except OSError:
                return False
        return True

    @property
    def waiting(self) -> int:
        """How many ends are kept in memory, waiting for the disk."""
        return len(self._kept)

    def _keep_end(self, entry: AuditEntry) -> None:
        if len(self._kept) >= MAX_KEPT and not entry.dispatch:
            self._dropped += 1  # a refusal: nothing was sent, and memory stays bounded
            return
        self._kept.append(entry)

    def _write_kept(self) -> None:
        """Write the kept ends, oldest first, each marked ``late``; OSError at the first the
        disk refuses (it and the rest stay kept)."""
        while self._kept:
            late = msgspec.structs.replace(self._kept[0], late=True)
            self._append(self._encoder.encode(late) + b"\n")
            self._kept.popleft()
        if self._dropped:
            log.warning("audit.ends_dropped", count=self._dropped)
            self._dropped = 0

    def recover(self) -> list[AuditEntry]:
        """Close every dispatch whose ``start`` has no ``end`` (the daemon died while it was
        in flight) with an ``end`` of delivery ``unknown``, code ``daemon_stopped``; return the
        starts so closed. An outcome the earlier run left in the reserve file (the disk was
        full) is written instead, marked ``late``, and not returned. Reads the current file and
        the newest rotated one."""
        open_starts: dict[str, AuditEntry] = {}
        for path in (self.path.with_name(AUDIT_FILE_NAME + ".1"), self.path):
            try:
                with open(path, "rb") as f:
                    lines = f.read(4 * self._max_bytes).splitlines()
            except FileNotFoundError:
                continue
            for raw in lines:
                entry = self._decode(raw)
                if entry is None or not entry.dispatch:
                    continue  # a torn or foreign line is not ours to interpret
                if entry.phase == "start":
                    open_starts[entry.dispatch] = entry
                else:
                    open_starts.pop(entry.dispatch, None)
        closed: list[AuditEntry] = []
        recovered = 0
        for dispatch_id, start in open_starts.items():
            end = self._left.get(dispatch_id)
            if end is not None:
                recovered += 1
            else:
                closed.append(start)
                end = msgspec.structs.replace(
                    start, time=_iso_utc(time.time()), phase="end", code="daemon_stopped"
                )
            self.record(end)
        self._left.clear()
        if recovered:
            log.warning("audit.late_outcomes_written", count=recovered)
        return closed

    def _decode(self, raw: bytes) -> AuditEntry | None:
        try:
            return self._decoder.decode(raw)
        except msgspec.DecodeError:
            return None

    def _end_torn_line(self) -> None:
        assert self._fd is not None
        size = os.fstat(self._fd).st_size
        if size and os.pread(self._fd, 1, size - 1) != b"\n":
            os.write(self._fd, b"\n")
        self._size = os.fstat(self._fd).st_size
        self._torn = False

    def close(self) -> None:
        """Write the kept ends if the disk takes them now, then close the files. What still
        waits is logged; those the reserve file holds are written by the next start-up."""
        with self._lock:
            unwritten = 0
            if self._fd is not None:
                try:
                    self._write_kept()
                except OSError:
                    unwritten = len(self._kept)
                os.close(self._fd)
                self._fd = None
            self._reserve.close()
        if unwritten:
            log.error("audit.ends_unwritten", count=unwritten)

    def __enter__(self) -> AuditLog:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def _open(self) -> None:
        flags = os.O_RDWR | os.O_APPEND | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC
        fd = os.open(self.path, flags, 0o600)
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
            os.close(fd)
            raise StartupError(
                f"refusing to append to {self.path}: it is not a regular file of yours; "
                "move it away and start again",
                exit_code=EX_UNAVAILABLE,
            )
        if stat.S_IMODE(st.st_mode) != 0o600:
            # Safe to repair: the directory was verified private, so only we put it there.
            os.fchmod(fd, 0o600)
        if st.st_size and os.pread(fd, 1, st.st_size - 1) != b"\n":
            # A torn line from a crash: end it so the next record starts on a line of its own.
            os.write(fd, b"\n")
        self._fd = fd
        self._size = os.fstat(fd).st_size

    def _rotate(self) -> None:
        assert self._fd is not None
        os.close(self._fd)
        self._fd = None
        base = os.fspath(self.path)
        if self._keep == 0:
            os.unlink(base)
        else:
            for n in range(self._keep - 1, 0, -1):
                try:
                    os.replace(f"{base}.{n}", f"{base}.{n + 1}")  # over .keep: oldest dropped
                except FileNotFoundError:
                    pass
            os.replace(base, f"{base}.1")
        self._open()


def ensure_private_dir(directory: Path) -> None:
    """Create ``directory`` (and missing parents) 0700, or verify an existing one is private.

    Raises:
        StartupError: it is a symlink or not a directory, belongs to another user, or has
            group/other permission bits. We never chmod a directory we did not just create.
    """
    try:
        os.makedirs(directory.parent, mode=0o700, exist_ok=True)
        os.mkdir(directory, 0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise StartupError(
            f"cannot create the audit directory {directory}: {exc.strerror}",
            exit_code=EX_UNAVAILABLE,
        ) from None
    st = os.lstat(directory)
    mode = stat.S_IMODE(st.st_mode)
    if not stat.S_ISDIR(st.st_mode):
        raise StartupError(
            f"refusing to use {directory} for the audit log: it is a symlink or not a "
            "directory; remove it and start again",
            exit_code=EX_UNAVAILABLE,
        )
    if st.st_uid != os.getuid():
        raise StartupError(
            f"refusing to use {directory} for the audit log: it belongs to uid {st.st_uid}, "
            f"not to you (uid {os.getuid()})",
            exit_code=EX_UNAVAILABLE,
        )
    if mode & 0o077:
        raise StartupError(
            f"refusing to use {directory} for the audit log: its mode is {mode:04o}, so "
            f"others could read what was done; run `chmod 700 {directory}` or remove it",
            exit_code=EX_UNAVAILABLE,
        )
