"""Reading the audit log back: each dispatch with its outcome, or ``unknown`` without one.

What this owns: turning the audit files (``audit.jsonl`` and its rotated copies, oldest first)
into one :class:`Dispatch` per dispatch, pairing each ``start`` record (written to disk before
the call was sent) with the ``end`` record that carries its outcome. A start without an end is
a dispatch whose outcome nobody recorded — still in flight, waiting for a full disk, or the
daemon stopped or crashed first — and reads as delivery ``unknown``. An end marked ``late``
was written after the fact (the disk was full when the dispatch finished). Lines that are not
audit records (a torn line from a full disk, say) are counted, never guessed at.

Standard library only: ``deskhandctl audit`` reads the files without the daemon.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any

AUDIT_FILE_NAME = "audit.jsonl"
MAX_FILE_BYTES = 64 * 1024 * 1024  # far above the rotation size: a bigger file is not ours


@dataclass(slots=True)
class Dispatch:
    """One dispatch as far as the log tells it."""

    time: str
    session: str
    client: str
    app: str
    tool: str
    delivery: str
    code: str
    latency_ms: float | None
    delivered: dict[str, Any] | None = None
    outcome_recorded: bool = True
    """False when only the start record exists: the outcome is unknown."""
    recorded_late: bool = False
    """True when the outcome was written after the fact: the disk was full when it finished."""

    def to_dict(self) -> dict[str, Any]:
        return {
            "time": self.time,
            "session": self.session,
            "client": self.client,
            "app": self.app,
            "tool": self.tool,
            "delivery": self.delivery,
            "code": self.code,
            "latency_ms": self.latency_ms,
            "delivered": self.delivered,
            "outcome_recorded": self.outcome_recorded,
            "recorded_late": self.recorded_late,
        }


def audit_files(directory: Path) -> list[Path]:
    """The audit files in ``directory``, oldest first (``audit.jsonl.N`` ... ``.1``, current)."""
    rotated: list[tuple[int, Path]] = []
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        return []
    for name in names:
        suffix = name[len(AUDIT_FILE_NAME) + 1 :]
        if name.startswith(AUDIT_FILE_NAME + ".") and suffix.isdigit():
            rotated.append((int(suffix), directory / name))
    current = directory / AUDIT_FILE_NAME
    files = [p for _, p in sorted(rotated, reverse=True)]
    return [*files, current] if current.exists() else files


def read_lines(path: Path) -> list[bytes]:
    """The lines of one audit file, opened without following a symlink."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    with os.fdopen(fd, "rb") as f:
        return f.read(MAX_FILE_BYTES).splitlines()


def pair(lines: list[bytes]) -> tuple[list[Dispatch], int]:
    """Dispatches in the order they began, and how many lines were not audit records. Pure."""
    out: list[Dispatch] = []
    open_starts: dict[str, Dispatch] = {}
    bad = 0
    for raw in lines:
        if not raw.strip():
            continue
        try:
            rec = json.loads(raw)
            if not isinstance(rec, dict):
                raise ValueError("not an object")
            row = _row(rec)
        except (ValueError, KeyError, TypeError):
            bad += 1
            continue
        dispatch_id = rec.get("dispatch") or ""
        if rec.get("phase") == "start":
            row.outcome_recorded = False
            row.delivery = "unknown"
            out.append(row)
            if dispatch_id:
                open_starts[dispatch_id] = row
            continue
        started = open_starts.pop(dispatch_id, None) if dispatch_id else None
        if started is None:
            out.append(row)  # an end alone (a refusal before any call, or an older line)
            continue
        started.delivery, started.code = row.delivery, row.code
        started.latency_ms, started.delivered = row.latency_ms, row.delivered
        started.outcome_recorded = True
        started.recorded_late = row.recorded_late
    return out, bad


def _row(rec: dict[str, Any]) -> Dispatch:
    latency = rec.get("latency_ms")
    delivered = rec.get("delivered")
    return Dispatch(
        time=str(rec["time"]),
        session=str(rec.get("session", "")),
        client=str(rec.get("client", "")),
        app=str(rec.get("app", "")),
        tool=str(rec["tool"]),
        delivery=str(rec["delivery"]),
        code=str(rec.get("code", "")),
        latency_ms=float(latency) if isinstance(latency, int | float) else None,
        delivered=delivered if isinstance(delivered, dict) else None,
        recorded_late=rec.get("late") is True,
    )


def read_dispatches(directory: Path) -> tuple[list[Dispatch], int]:
    """Every dispatch in the audit files of ``directory`` (see :func:`pair`)."""
    lines: list[bytes] = []
    for path in audit_files(directory):
        lines += read_lines(path)
    return pair(lines)
