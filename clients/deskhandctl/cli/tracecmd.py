"""``deskhandctl trace list|show|analyze``: Jev run traces read offline, without the daemon.

``list`` shows the traces in ``<state dir>/traces`` newest first; ``show PATH`` prints the
per-step timeline and ``analyze PATH`` where the run first diverged (both from
:mod:`deskhand_d.review`). A trace file is opened no-follow (a symlink is refused), must be a
regular file of at most 64 MiB and is read line by line; a line that is not an event is
reported as a problem of the trace, not a failure. Exit codes: 0 when the trace could be read
(``analyze`` too when it finds a divergence), 1 when it could not be read or holds no event.
"""

from __future__ import annotations

import errno
import os
import stat
import sys

from deskhandctl.exitcodes import DAEMON_ERROR, OK
from deskhandctl.wire import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from deskhandctl.cli.grammar import Args

MAX_BYTES = 64 * 1024 * 1024  # the daemon's own trace budget


class Unreadable(Exception):
    """The trace cannot be read at all; the message says why."""


def read_trace(path: str) -> tuple[list[dict[str, Any]], list[str]]:
    """The events of the trace at ``path`` and its unparsable lines; :class:`Unreadable` else."""
    from deskhand_d.review.traceview import parse_line

    flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK  # no hang on a FIFO
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            raise Unreadable(f"{path} is a symbolic link; give the trace file's own path") from None
        raise Unreadable(f"cannot open {path}: {exc.strerror}") from None
    events: list[dict[str, Any]] = []
    problems: list[str] = []
    with os.fdopen(fd, "rb") as f:
        st = os.fstat(f.fileno())
        if not stat.S_ISREG(st.st_mode):
            raise Unreadable(f"{path} is not a regular file")
        if st.st_size > MAX_BYTES:
            raise Unreadable(f"{path} is larger than {MAX_BYTES >> 20} MiB, too large for a trace")
        total = 0
        try:
            for number, raw in enumerate(f, 1):
                total += len(raw)
                if total > MAX_BYTES:
                    raise Unreadable(f"{path} grew past {MAX_BYTES >> 20} MiB while being read")
                try:
                    got = parse_line(raw.decode("utf-8"), number)
                except UnicodeDecodeError:
                    got = f"line {number}: not UTF-8"
                if isinstance(got, str):
                    problems.append(got)
                elif got is not None:
                    events.append(got)
        except OSError as exc:
            raise Unreadable(f"cannot read {path}: {exc.strerror}") from None
    if not events:
        why = f" ({problems[0]})" if problems else ""
        raise Unreadable(f"{path} holds no trace events{why}")
    return events, problems


def run_trace(args: Args) -> int:
    if args.command == "trace list":
        return _list(args)
    path = str(args.params.get("path") or "")
    try:
        events, problems = read_trace(path)
    except Unreadable as exc:
        print(f"deskhandctl: {exc}", file=sys.stderr)
        return DAEMON_ERROR
    from deskhand_d.review import tracetimeline, traceview

    if args.command == "trace show":
        text = tracetimeline.timeline(events)
        text += "".join(f"\n  problem: {p}" for p in problems)
        if args.json:
            first = events[0]
            shown = {"path": path, "runId": first.get("runId"), "mode": first.get("mode")}
            shown.update(events=len(events), problems=problems, timeline=text.split("\n"))
            print(jsontext.dumps_readable(shown))
        else:
            print(text)
        return OK
    import msgspec

    analysis = traceview.analyze(events, problems)
    if args.json:
        print(jsontext.dumps_readable(msgspec.to_builtins(analysis)))
    else:
        print(traceview.render_analysis(analysis))
    return OK


def _list(args: Args) -> int:
    from deskhand_d.paths import state_dir
    from deskhand_d.review.traceview import integrity

    directory = state_dir(os.environ) / "traces"
    try:
        names = os.listdir(directory)
    except FileNotFoundError:
        names = []
    except OSError as exc:
        print(f"deskhandctl: cannot list {directory}: {exc.strerror}", file=sys.stderr)
        return DAEMON_ERROR
    found: list[tuple[int, str]] = []
    for name in names:
        path = os.path.join(directory, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if name.endswith(".jsonl") and stat.S_ISREG(st.st_mode):  # symlinks are not listed
            found.append((st.st_mtime_ns, path))
    rows: list[dict[str, Any]] = []
    for _, path in sorted(found, reverse=True):
        try:
            events, problems = read_trace(path)
        except Unreadable as exc:
            rows.append({"path": path, "error": str(exc)})
            continue
        finish: dict[str, Any] = next((e for e in events[::-1] if e["event"] == "finish"), {})
        rows.append(
            {
                "path": path,
                "mode": events[0].get("mode"),
                "runId": events[0].get("runId"),
                "events": len(events),
                "status": finish.get("status"),
                "reason": finish.get("reason"),
                "complete": not problems and not integrity(events),
            }
        )
    if args.json:
        print(jsontext.dumps_readable({"directory": str(directory), "traces": rows}))
    elif not rows:
        print(f"no traces in {directory}")
    for row in [] if args.json else rows:
        if "error" in row:
            print(f"{row['path']}  unreadable: {row['error']}")
            continue
        ending = f"{row['status']} ({row['reason']})" if row["status"] else "no finish"
        state = "complete" if row["complete"] else "INCOMPLETE"
        print(
            f"{row['path']}  {row['mode']}  {row['runId']}  {row['events']} events  "
            f"{ending}  {state}"
        )
    return OK
