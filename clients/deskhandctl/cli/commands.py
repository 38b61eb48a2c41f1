"""The handlers of the commands that are one request: send it, print the reply, pick the code.

Each public handler is named by a command's entry in :mod:`deskhandctl.cli.grammar` and called
as ``handler(session, args)`` on the session :mod:`deskhandctl.__main__` opened; most commands
use :func:`request`. Requests are built from the grammar: every non-local argument goes into the
request under its ``dest``, which is the protocol's field name; an ``X,Y`` point fills
``<dest>_x`` and ``<dest>_y``. Output is the human form from :mod:`deskhandctl.cli.render`, or
with ``--json`` the result object as one line of JSON (``observe`` puts the saved screenshot's
path where the base64 bytes were). Failures are exceptions from :mod:`deskhandctl.exitcodes`;
the exit code of a result that is itself bad news (an unhealthy ``doctor``, an action the
backend reported as failed) is returned.
"""

from __future__ import annotations

import sys
import time

from deskhandctl.cli import deskview, render
from deskhandctl.cli.grammar import leaf
from deskhandctl.exitcodes import (
    DAEMON_ERROR,
    OK,
    SCREENSHOT_NOT_SAVED,
    DaemonError,
    NotRunning,
    OutcomeUnknown,
    ProtocolFailed,
    TimedOut,
)
from deskhandctl.wire import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from deskhandctl.cli.grammar import Args, Command
    from deskhandctl.wire.session import Session


def print_json(value: object) -> None:
    """One line of JSON on stdout."""
    print(jsontext.dumps_readable(value))


def request_fields(command: Command, params: dict[str, object]) -> dict[str, object]:
    """The request's fields from the parsed arguments: given, non-local ones under their dest."""
    fields: dict[str, object] = {}
    for param in command.params:
        value = params.get(param.dest)
        if value is None or param.local:
            continue
        if isinstance(value, tuple):
            fields[f"{param.dest}_x"], fields[f"{param.dest}_y"] = value
        else:
            fields[param.dest] = value
    return fields


def op_for(command: Command, params: dict[str, object]) -> str:
    """The op to send: the command's, except that ``mode MODE`` sets where ``mode`` gets."""
    if command.op == "mode_get" and params.get("mode") is not None:
        return "mode_set"
    return command.op


# ----- the handlers the grammar names: handler(session, args) -> exit code ---------------------


def status(session: Session, args: Args) -> int:
    """``status``: the daemon's own summary, with the backend line."""
    return _show(args, session.request("status"), deskview.status)


def ping(session: Session, args: Args) -> int:
    """``ping``: the answer and the round trip it took."""
    started = time.perf_counter()
    result = session.request("ping")
    elapsed = time.perf_counter() - started
    return _show(args, result, lambda _: render.pong(session.welcome, elapsed))


def shutdown(session: Session, args: Args) -> int:
    """``shutdown``: ask the daemon to stop."""
    result = session.request("shutdown")
    return _show(args, result, lambda _: render.shutting_down(session.welcome))


def doctor(session: Session, args: Args) -> int:
    """``doctor``: the backend's checks; exit 1 unless all is healthy."""
    result = session.request("doctor", **request_fields(leaf(args.command), args.params))
    _show(args, result, deskview.doctor)
    return OK if deskview.healthy(result) else DAEMON_ERROR


def observe(session: Session, args: Args) -> int:
    """``observe``: the observation, and its screenshot saved where ``--screenshot`` says."""
    command = leaf(args.command)
    fields = request_fields(command, args.params)
    return _observe(args, _request(session, command.op, fields, command=command))


def request(session: Session, args: Args) -> int:
    """Any other daemon command: its one request, then the reply as a mode switch, an action's
    result or a plain result."""
    command = leaf(args.command)
    op = op_for(command, args.params)
    fields = request_fields(command, args.params)
    result = _request(session, op, fields, command=command)
    if op == "mode_set":
        return _mode_set(args, result, str(fields["mode"]))
    if command.acts:
        return _action(args, result)
    _show(args, result, lambda r: render.result(args.command, r))
    return OK


RUN_OK = frozenset({"done", "dry_run", "needs_planner"})


QUEUE_FULL_TRIES = 20  # with the daemon's own waits of at most 5 s: a busy minute at most


def _request(session: Session, op: str, fields: dict[str, object], *, command: Command) -> Any:
    """``session.request``, except that losing the daemon (or its answer) once an action was
    sent is reported as an unknown outcome, never as a plain failure; and a full action queue
    (refused before anything was spent or sent) is asked again after the wait it names."""
    for _ in range(QUEUE_FULL_TRIES - 1):
        try:
            return _request_once(session, op, fields, command=command)
        except DaemonError as exc:
            wait = exc.data.get("retry_after_ms")
            if exc.code != "queue_full" or type(wait) is not int:
                raise
            time.sleep(min(max(wait, 10), 5000) / 1000)
    return _request_once(session, op, fields, command=command)


def _request_once(session: Session, op: str, fields: dict[str, object], *, command: Command) -> Any:
    try:
        return session.request(op, **fields)
    except (TimedOut, NotRunning, ProtocolFailed) as exc:
        # The request was sent and no reply says what became of it: its delivery is unknown.
        lost = render.lost_delivery(acts=command.acts, why="no answer came after it was sent")
        if command.acts:
            raise OutcomeUnknown(
                f"{exc.message} The action had been sent.", delivery_line=lost
            ) from None
        if command.op == "run":  # its result would have told its steps; none came
            raise OutcomeUnknown(
                f"{exc.message} The run had been sent: an action of it may or may not have "
                "happened, in whole or in part. Observe the app again before acting."
            ) from None
        if command.delivers:
            exc.delivery_line = lost
        raise


def run_task(session: Session, args: Args) -> int:
    """``run``: progress lines arrive as events while it runs; then the ending."""
    fields = request_fields(leaf(args.command), args.params)
    role, label = args.params.get("verify_role"), args.params.get("verify_label")
    if role is not None:
        fields["verify"] = {"role": role, "label_equals": label}
    result = _request(session, "run", fields, command=leaf("run"))
    _show(args, result, render.run_result)
    return OK if result.get("status") in RUN_OK else DAEMON_ERROR


def _mode_set(args: Args, result: dict[str, Any], wanted: str) -> int:
    """``mode MODE``: the session's mode after the switch; exit 1, with the daemon's reason and
    what to do, when it is not the one asked for (jev without a key, say)."""
    if args.json:
        print_json(result)
    else:
        print(render.mode({**result, "detail": ""}))
    if result.get("mode") == wanted:
        return OK
    reason = result.get("reason") or "mode_not_changed"
    detail = result.get("detail") or f"the daemon kept this session in {result.get('mode')} mode"
    print(f"deskhandctl: {render.printable(f'{reason}: {detail}')}", file=sys.stderr)
    return DAEMON_ERROR


def _show(args: Args, result: dict[str, Any], human: Any) -> int:
    if args.json:
        print_json(result)
    else:
        print(human(result))
    return OK


def _observe(args: Args, result: dict[str, Any]) -> int:
    """Print an observation; with ``--screenshot FILE`` save the screenshot there first.

    The observation is printed either way; a FILE that was not written (no screenshot came,
    or writing failed) is an error on stderr and exit 73, so a script never reads an old file.
    """
    shown, note, failure = _screenshot(args, result, "observation")
    shown.setdefault("screenshot", None)
    shown.setdefault("approval_reason", None)
    if note is None and result.get("screenshot"):
        note = "available; add --screenshot FILE to save it"
    if args.json:
        print_json(shown)
    else:
        print(render.observation(result, note))
    if failure is not None:
        print(f"deskhandctl: {failure}", file=sys.stderr)
        return SCREENSHOT_NOT_SAVED
    return OK


def _action(args: Args, result: dict[str, Any]) -> int:
    """Print an action's result; with ``--screenshot FILE`` save the reply's screenshot there.

    Exit 1 when the backend reported the action as failed (``ok: false``); otherwise 73 when
    FILE was not written (the action itself was delivered as its delivery line says: do not
    repeat it for the picture), else 0.
    """
    shown, note, failure = _screenshot(args, result, "action's reply")
    if args.json:
        print_json(shown)
    else:
        print(render.action(result, note))
    if failure is not None:
        print(f"deskhandctl: {failure}", file=sys.stderr)
    if result.get("kind") == "action" and result.get("ok") is False:
        return DAEMON_ERROR
    return OK if failure is None else SCREENSHOT_NOT_SAVED


def _screenshot(
    args: Args, result: dict[str, Any], what: str
) -> tuple[dict[str, Any], str | None, str | None]:
    """Save the reply's screenshot where ``--screenshot`` says, if it does.

    Returns the result as ``--json`` shows it (``screenshot`` is the saved path or null, never
    the base64 bytes; ``screenshot_error`` when FILE was asked for and not written), the human
    ``screenshot:`` note (None when there is nothing to say), and the error for stderr.
    """
    path = args.params.get("screenshot")
    data = result.get("screenshot")
    shown = dict(result)
    if "screenshot" in shown or isinstance(path, str):
        shown["screenshot"] = None
    if not isinstance(path, str):
        return shown, None, None
    if not (isinstance(data, str) and data):
        failure = (
            f"the {what} came without a screenshot, so {path} was not written; "
            "`deskhandctl doctor` checks screenshot capture"
        )
        shown["screenshot_error"] = failure
        return shown, f"none came with this {what} (see the error below)", failure
    try:
        size = save_screenshot(path, data)
    except (OSError, ValueError) as exc:
        failure = f"the screenshot was not saved to {path}: {_why(exc)}"
        shown["screenshot_error"] = failure
        return shown, "not saved (see the error below)", failure
    shown["screenshot"] = path
    mime = result.get("screenshot_mime") or "unknown type"
    return shown, f"saved to {path} ({mime}, {size} bytes)", None


def save_screenshot(path: str, data: str) -> int:
    """Write base64 ``data`` decoded to ``path``, owner-only (0600) and atomically; return the
    byte count.

    The bytes go to a new temporary file beside ``path`` (created 0600, written, flushed to
    disk) that is then renamed over ``path``, so a reader finds the old file or the whole new
    one, never a part. A symbolic link at ``path`` is refused (``ELOOP``), never replaced or
    written through. ValueError when ``data`` is not base64, OSError from the system. Standard
    library only: ``deskhand_d.privatefile`` (the daemon's owner-only files) brings a lock file
    and modules this command's start-up does without.
    """
    import binascii
    import errno
    import os
    import stat

    from deskhandctl.setup.filewrite import fill

    try:
        raw = binascii.a2b_base64(data, strict_mode=True)
    except binascii.Error as exc:
        raise ValueError(f"the daemon sent a screenshot that is not base64 ({exc})") from None
    try:
        if stat.S_ISLNK(os.lstat(path).st_mode):
            raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), path)
    except FileNotFoundError:
        pass
    directory = os.path.dirname(path) or "."
    temp = os.path.join(directory, f".{os.path.basename(path)}.{os.urandom(8).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(temp, flags, 0o600)
    renamed = False
    try:
        fill(fd, raw, 0o600)
        os.replace(temp, path)
        renamed = True
    finally:
        if not renamed:
            try:
                os.unlink(temp)
            except OSError:
                pass
    _fsync_dir(directory)
    return len(raw)


def _fsync_dir(directory: str) -> None:
    """Make the rename durable; best effort (some file systems refuse fsync on a directory)."""
    import os

    try:
        fd = os.open(directory, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def _why(exc: Exception) -> str:
    import errno

    if isinstance(exc, OSError):
        if exc.errno == errno.ELOOP:
            return "it is a symbolic link, which deskhandctl does not write through"
        return exc.strerror or str(exc)
    return str(exc)
