"""A full disk never loses a dispatch's outcome while the daemon runs (a real full tmpfs).

The audit log on a small tmpfs (root only; CI runs as root), filled to the last byte at the
moment the file has room for a ``start`` record but not for the ``end`` that follows:

* with the default reserve the ``end`` is written at once, into the room the reserve frees;
* with a reserve too small to help (one page, which the waiting record itself takes), the
  ``end`` waits in memory and in the reserve file: it is written, marked ``late``, as soon as
  the disk takes writes, or by the next start-up if the log was closed first; never
  ``daemon_stopped``, which is for a daemon that stopped while the dispatch was in flight.

The daemon's own run of the same story is in ``test_audit_write_ahead.py``.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import msgspec
import pytest
from dhtest.daemon import short_tmpdir
from dhtest.fulldisk import fill, mount_tmpfs, unmount

from deskhand_d.audit import AuditLog, entry_for
from deskhand_d.auditread import pair, read_dispatches
from deskhand_d.auditreserve import RESERVE_FILE_NAME

PAGE = os.sysconf("SC_PAGE_SIZE")  # tmpfs hands out whole pages
WHO: dict[str, Any] = {"session": "s1", "client": "pi", "client_pid": 42, "app": "Calculator"}
END: dict[str, Any] = {
    **WHO,
    "tool": "click",
    "delivery": "dispatched",
    "latency_ms": 12.5,
    "code": "some_longer_error_code",
    "approval_reason": "the person allowed it earlier",
}
REFUSAL: dict[str, Any] = {"session": "s", "client": "c", "client_pid": 1, "tool": "t"}
REFUSAL |= {"delivery": "refused", "latency_ms": 0.0}


@pytest.fixture
def tmpfs() -> Iterator[Path]:
    root = short_tmpdir()
    mount_tmpfs(root / "fs", "256k")
    try:
        yield root / "fs"
    finally:
        unmount(root / "fs")


def _line_len(fields: dict[str, Any], dispatch: str = "") -> int:
    extra = {"dispatch": dispatch} if dispatch else {}
    return len(msgspec.json.encode(entry_for(now=0.0, **fields, **extra))) + 1


def _start_then_fill_leaving_less_than_an_end(log: AuditLog, fs: Path) -> tuple[str, Path]:
    """A started dispatch, then the disk filled so that its end record cannot fit: the
    file's last page is padded (with refusals, shorter than the end) until less room than
    one end record is left in it, and every free page is taken."""
    dispatch = log.begin(**{**WHO, "tool": "click"})
    end_len = _line_len(END, dispatch)
    assert _line_len(REFUSAL) < end_len
    while (-log.path.stat().st_size) % PAGE >= end_len:
        assert log.dispatch(**REFUSAL)
    return dispatch, fill(fs)


def _records(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            out.append(json.loads(raw))
        except ValueError:
            continue  # the end record the full disk cut short
    return out


def _end_of(path: Path, dispatch: str) -> list[dict[str, Any]]:
    return [r for r in _records(path) if r["dispatch"] == dispatch and r["phase"] == "end"]


def test_the_reserve_takes_an_end_the_full_disk_refused(tmpfs: Path) -> None:
    """The start fit, the end did not: the end is written at once (not late), in the room
    the reserve freed; the next dispatch is refused until the room can be held again."""
    with AuditLog(tmpfs / "audit") as log:
        dispatch, filler = _start_then_fill_leaving_less_than_an_end(log, tmpfs)
        assert log.dispatch(**END, dispatch=dispatch)
        [end] = _end_of(log.path, dispatch)
        assert (end["delivery"], end["code"], end["late"]) == (
            "dispatched",
            "some_longer_error_code",
            False,
        )
        with pytest.raises(OSError):  # no room to hold for the next outcome: nothing starts
            log.begin(**{**WHO, "tool": "click"})
        filler.unlink()
        log.begin(**{**WHO, "tool": "click"})  # space is back: dispatches start again
        assert (tmpfs / "audit" / RESERVE_FILE_NAME).stat().st_size == 64 * 1024


def test_an_end_that_waited_for_the_disk_is_written_late(tmpfs: Path) -> None:
    """With no room to spare, the end waits in memory; nothing starts meanwhile; once space
    returns it is written with its real outcome and ``late``, before any later record."""
    with AuditLog(tmpfs / "audit", reserve_bytes=PAGE) as log:
        dispatch, filler = _start_then_fill_leaving_less_than_an_end(log, tmpfs)
        assert not log.dispatch(**END, dispatch=dispatch)
        assert log.waiting == 1
        assert _end_of(log.path, dispatch) == []
        assert dispatch.encode() in (tmpfs / "audit" / RESERVE_FILE_NAME).read_bytes()
        [row] = [d for d in read_dispatches(tmpfs / "audit")[0] if d.tool == "click"]
        assert (row.delivery, row.outcome_recorded) == ("unknown", False)
        with pytest.raises(OSError):
            log.begin(**{**WHO, "tool": "click"})
        assert log.write_kept() is False  # still full
        filler.unlink()
        assert log.write_kept() is True
        assert log.waiting == 0
        [end] = _end_of(log.path, dispatch)
        assert (end["delivery"], end["code"], end["late"]) == (
            "dispatched",
            "some_longer_error_code",
            True,
        )
        [row] = [d for d in read_dispatches(tmpfs / "audit")[0] if d.tool == "click"]
        assert (row.delivery, row.outcome_recorded, row.recorded_late) == (
            "dispatched",
            True,
            True,
        )


def test_the_next_start_up_writes_an_end_left_in_the_reserve(tmpfs: Path) -> None:
    """Closed (the daemon stopped) while the disk was still full: the next start-up writes
    the outcome from the reserve file, marked late, and does not count it as unfinished."""
    directory = tmpfs / "audit"
    log = AuditLog(directory, reserve_bytes=PAGE)
    dispatch, filler = _start_then_fill_leaving_less_than_an_end(log, tmpfs)
    assert not log.dispatch(**END, dispatch=dispatch)
    log.close()
    filler.unlink()
    with AuditLog(directory, reserve_bytes=PAGE) as again:
        assert again.recover() == []
        [end] = _end_of(again.path, dispatch)
        assert (end["delivery"], end["code"], end["late"]) == (
            "dispatched",
            "some_longer_error_code",
            True,
        )
        again.begin(**{**WHO, "tool": "click"})  # the reserve is room again
    # a start whose outcome nobody knew (the log closed while it was in flight) is still
    # closed as daemon_stopped
    with AuditLog(directory, reserve_bytes=PAGE) as third:
        [closed] = third.recover()
        assert closed.tool == "click"
        assert [r["code"] for r in _records(third.path) if r["phase"] == "end"][-1] == (
            "daemon_stopped"
        )


def test_pair_reads_a_late_end() -> None:
    """``deskhandctl audit``'s reader: a late end closes its start and says it was late."""
    start = {"time": "t0", "tool": "click", "delivery": "unknown", "phase": "start"}
    lines = [
        json.dumps({**start, "dispatch": "a"}).encode(),
        json.dumps({**start, "dispatch": "b"}).encode(),
        json.dumps({**start, "dispatch": "a", "phase": "end", "delivery": "dispatched"}).encode(),
        json.dumps(
            {**start, "dispatch": "b", "phase": "end", "delivery": "partial", "late": True}
        ).encode(),
    ]
    rows, bad = pair(lines)
    assert bad == 0
    assert [(r.delivery, r.outcome_recorded, r.recorded_late) for r in rows] == [
        ("dispatched", True, False),
        ("partial", True, True),
    ]
