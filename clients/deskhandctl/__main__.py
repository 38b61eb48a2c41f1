"""``deskhandctl`` / ``python -m deskhandctl``: parse the command line, run one command, exit.

Owns the dispatch to commands and the single place where failures become exit codes
(:mod:`deskhandctl.exitcodes`); the grammar is in :mod:`deskhandctl.cmdline`. Start-up cost
matters here, so the connection and output modules are imported only once the command line
is known to need them, and ``service`` and autostart load their heavier modules themselves.
"""

from __future__ import annotations

import os
import sys

from deskhand_d import __version__
from deskhandctl.cmdline import DEFAULT_TIMEOUT_S, PASSTHROUGH, parse
from deskhandctl.exitcodes import DAEMON_ERROR, OK, USAGE, CliError, DaemonError

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from deskhandctl.cmdline import Args
    from deskhandctl.session import EventHook, Session

_INTERRUPTED = 130  # what shells report for a process stopped by SIGINT
_DOCTOR_TIMEOUT_S = 60.0


def _print_json(value: object) -> None:
    import json

    print(json.dumps(value, ensure_ascii=False))


def _event_printer(args: Args) -> EventHook:
    from deskhandctl import render

    def on_event(event: dict[str, Any]) -> None:
        line = None if args.json else render.notice(event)
        if line is not None:
            print(line, file=sys.stderr)

    return on_event


def _run(args: Args) -> int:
    from deskhandctl.connect import autostart_allowed, open_session, resolve_socket

    timeout = args.timeout
    if args.command == "doctor" and timeout == DEFAULT_TIMEOUT_S:
        # doctor may have to start the backend, which has a longer start-up budget.
        timeout = _DOCTOR_TIMEOUT_S
    session = open_session(
        resolve_socket(args.socket),
        timeout=timeout,
        # Starting a daemon only to stop it again would be silly.
        autostart=args.command != "shutdown" and autostart_allowed(args.no_autostart),
        client_version=__version__,
        on_event=_event_printer(args),
    )
    try:
        return _command(session, args)
    finally:
        session.close()


def _command(session: Session, args: Args) -> int:
    import time

    from deskhandctl import render

    if args.command == "status":
        result = session.request("status")
        text = render.status(result)
    elif args.command == "ping":
        started = time.perf_counter()
        result = session.request("ping")
        text = render.pong(session.welcome, time.perf_counter() - started)
    elif args.command == "shutdown":
        result = session.request("shutdown")
        text = render.shutting_down(session.welcome)
    elif args.command == "doctor":
        result = session.request("doctor")
        healthy = bool(result.get("handshake_ok")) and not (
            result.get("findings") or result.get("schema_differences")
        )
        if args.json:
            _print_json(result)
        else:
            print(render.doctor(result))
        return OK if healthy else DAEMON_ERROR
    else:  # the grammar admits no other command
        raise AssertionError(args.command)
    if args.json:
        _print_json(result)
    else:
        print(text)
    return OK


def main(argv: list[str] | None = None) -> int:
    """Run ``deskhandctl`` with ``argv`` (default: ``sys.argv[1:]``); return the exit code."""
    try:
        args = parse(sys.argv[1:] if argv is None else argv)
    except SystemExit as exc:  # --help and --version exit 0, usage errors 2
        return exc.code if isinstance(exc.code, int) else USAGE
    if args.command == PASSTHROUGH:
        from deskhandctl.service import main as service_main  # only this command needs it

        return service_main(args.rest)
    try:
        return _run(args)
    except DaemonError as exc:
        if args.json:
            _print_json({"error": {"code": exc.code, "message": exc.detail, "data": exc.data}})
        print(f"deskhandctl: {exc.message}", file=sys.stderr)
        return DAEMON_ERROR
    except CliError as exc:
        print(f"deskhandctl: {exc.message}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        return _INTERRUPTED
    except BrokenPipeError:
        # stdout went away (piped into `head`, say): stay quiet, like other Unix tools.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return DAEMON_ERROR


if __name__ == "__main__":
    sys.exit(main())
