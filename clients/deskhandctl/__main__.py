"""``deskhandctl`` / ``python -m deskhandctl``: parse the command line, run one command, exit.

What this owns: the dispatch (the command's entry in :mod:`deskhandctl.cli.grammar` names its
handler, imported only now), the connection for the one command, and the single place where
failures become exit codes (:mod:`deskhandctl.exitcodes`). The command line is read by
:mod:`deskhandctl.cli.parser`; what each daemon command sends and prints is in
:mod:`deskhandctl.cli.commands`. Start-up cost matters here, so the connection and output modules
are imported only once the command line is known to need them, and ``service``, ``mcp`` and
autostart load their heavier modules themselves.
"""

from __future__ import annotations

import os
import sys

from deskhand_d import __version__
from deskhandctl.cli.grammar import leaf
from deskhandctl.cli.parser import parse
from deskhandctl.exitcodes import (
    DAEMON_ERROR,
    INTERRUPTED,
    OUTCOME_UNKNOWN,
    USAGE,
    CliError,
    DaemonError,
    TimedOut,
)

TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable

    from deskhandctl.cli.grammar import Args, Command


def _handler(command: Command) -> Callable[..., int]:
    """The function the command's entry names (``"module:function"``), its module imported now."""
    module, _, name = command.handler.partition(":")
    handler: Callable[..., int] = getattr(__import__(module, fromlist=[name]), name)
    return handler


def _run(args: Args, command: Command, handler: Callable[..., int]) -> int:
    """A daemon command: open the session (the person's yes first, if it needs one), run the
    handler on it, close it."""
    from deskhandctl.cli.events import EventHandler, terminal_attached
    from deskhandctl.wire.connect import (
        autostart_allowed,
        open_session,
        resolve_session,
        resolve_socket,
    )

    if command.confirm:  # a step only the person takes: their terminal and their yes first
        from deskhandctl.cli.person import confirm

        confirm(args)
    session_name = resolve_session(args.session) if command.session else ""
    events = EventHandler(show_notices=not args.json, interactive=terminal_attached())
    socket_path = resolve_socket(args.socket)
    timeout = command.timeout if args.timeout is None else args.timeout
    try:
        session = open_session(
            socket_path,
            timeout=timeout,
            # Starting a daemon only to stop it again would be silly.
            autostart=command.autostart and autostart_allowed(args.no_autostart),
            client_version=__version__,
            on_event=events,
            session_name=session_name,
            can_answer_questions=events.interactive,
        )
    except TimedOut as exc:  # DaemonBusy (HTTP 503) included
        if command.op != "stop":
            raise
        from deskhandctl.cli.emergency import stop_by_signal  # the emergency stop gets through

        return stop_by_signal(socket_path, exc, json_output=args.json, confirm_within_s=timeout)
    events.session = session
    try:
        return handler(session, args)
    except TimedOut as exc:
        if command.op != "stop":
            raise
        # Sent, but no reply in time: the signal makes sure (a second stop changes nothing).
        from deskhandctl.cli.emergency import stop_by_signal

        return stop_by_signal(socket_path, exc, json_output=args.json, confirm_within_s=timeout)
    finally:
        session.close()


def _daemon_error(args: Args, exc: DaemonError) -> int:
    """An error reply: ``code: message``, then, for a desktop command, its one delivery line
    (from ``data.delivery``; unknown when the reply names none). Exit 3 when that line says
    unknown or partial, else 1."""
    if args.json:
        from deskhandctl.cli.commands import print_json

        print_json({"error": {"code": exc.code, "message": exc.detail, "data": exc.data}})
    print(f"deskhandctl: {exc.message}", file=sys.stderr)
    command = leaf(args.command)
    # A desktop command always has a delivery line; any other command (a Jev run, say) only
    # when the daemon stated one. Either way the line and the exit code read the one value
    # render.delivery_value gives: the daemon's, or unknown when it is missing or not known.
    if not command.delivers and "delivery" not in exc.data:
        return DAEMON_ERROR
    from deskhandctl.cli.render import delivery_value, error_delivery

    acts = command.acts or not command.delivers
    print(f"deskhandctl: {error_delivery(exc.data, acts=acts)}", file=sys.stderr)
    if delivery_value(exc.data.get("delivery")) in ("unknown", "partial"):
        return OUTCOME_UNKNOWN
    return DAEMON_ERROR


def _cli_error(exc: CliError) -> int:
    print(f"deskhandctl: {exc.message}", file=sys.stderr)
    if exc.delivery_line is not None:
        print(f"deskhandctl: {exc.delivery_line}", file=sys.stderr)
    return exc.exit_code


def _interrupted(args: Args) -> int:
    print("deskhandctl: interrupted", file=sys.stderr)
    command = leaf(args.command)
    if command.delivers:
        from deskhandctl.cli.render import lost_delivery

        line = lost_delivery(acts=command.acts, why="interrupted before an answer came")
        print(f"deskhandctl: {line}", file=sys.stderr)
    return INTERRUPTED


def main(argv: list[str] | None = None) -> int:
    """Run ``deskhandctl`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help and --version exit 0, usage errors 2
        return exc.code if isinstance(exc.code, int) else USAGE
    command = leaf(args.command)
    handler = _handler(command)
    if command.own_errors:  # offline commands and mcp report their own failures
        return int(handler(args))
    try:
        if command.standalone:  # the person's console: a loop, not one request
            return int(handler(args))
        return _run(args, command, handler)
    except DaemonError as exc:
        return _daemon_error(args, exc)
    except CliError as exc:
        return _cli_error(exc)
    except KeyboardInterrupt:
        return _interrupted(args)
    except BrokenPipeError:
        # stdout went away (piped into `head`, say): stay quiet, like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return DAEMON_ERROR


if __name__ == "__main__":
    sys.exit(main())
