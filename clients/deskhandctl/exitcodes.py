"""Exit codes of ``deskhandctl`` and the exceptions that carry them to ``main``.

Every failure the CLI reports is a :class:`CliError` subclass holding its exit code and a
message that says what went wrong *and what to do about it*. ``main`` prints the message to
stderr and exits with the code; nothing else decides exit codes.

====  ==========================  ======================================================
code  exception                   meaning
====  ==========================  ======================================================
0     (none)                      the command succeeded
1     :class:`DaemonError`        the daemon answered with an error reply
                                  (printed as ``code: message``); also a ``doctor`` that
                                  found a problem and an action the backend reported as
                                  failed (``ok: false``); also :class:`Declined`: the
                                  person did not confirm a step only they take
2     :class:`UsageError`         usage error: unknown command or option, bad value
3     :class:`OutcomeUnknown`     an action may or may not have reached the desktop, or
                                  reached it only in part: the daemon replied with
                                  ``delivery`` ``unknown`` or ``partial`` (or, to a desktop
                                  command, with no delivery at all), or it went away
                                  (stopped, crashed, timed out) while the action was in
                                  progress. Observe the app again before acting
66    :class:`NoTerminal`         a step only the person takes (``unlock``, ``apps add``,
                                  ``grants restore``, ``questions``) was run without a
                                  terminal on stdin and stderr, so nobody could confirm it
                                  there; nothing was sent
69    :class:`NotRunning`         no daemon listens on the socket, and autostart was off,
                                  not allowed, or did not bring one up
73    (none)                      ``--screenshot FILE`` (``observe`` or an action) did not
                                  write FILE: no screenshot came with the reply, or it
                                  could not be written (the observation or the action
                                  itself succeeded and was printed, with its delivery)
75    :class:`TimedOut`           the daemon did not answer within ``--timeout``; also
                                  :class:`DaemonBusy`: it refused the connection (HTTP 503)
                                  because too many clients are connected
76    :class:`ProtocolFailed`     handshake refused, wrong subprotocol or protocol version,
                                  or a malformed frame or message from the daemon
77    :class:`PermissionDenied`   the socket refused us (EACCES), or the daemon hung up
                                  before answering the handshake, which is how it turns
                                  away a process of another user; also
                                  :class:`NotYourDaemon`: we refused the socket before
                                  sending anything, because its directory or the process
                                  listening on it belongs to another user (the message
                                  starts with a stable code, see
                                  :mod:`deskhand_d.clientcheck`)
130   (KeyboardInterrupt)         interrupted with Ctrl-C (also at a question prompt,
                                  which is then left unanswered)
====  ==========================  ======================================================

66, 69, 73, 75, 76 and 77 are the ``sysexits.h`` values EX_NOINPUT (no terminal to take the
person's input from), EX_UNAVAILABLE, EX_CANTCREAT, EX_TEMPFAIL, EX_PROTOCOL and EX_NOPERM, so
shell scripts and service managers can tell the cases apart.

:class:`NotYourDaemon` shares 77 with the other permission failures on purpose: all of them
mean "this socket is another user's", only seen from the other side, and call for the same
remedy (run as the daemon's user, or point ``--socket`` at your own daemon). Which check sees
it first depends on modes a script should not have to care about: as another user, a
readable-but-foreign socket directory used to fail with EACCES (77) and now is refused by our
own check; keeping 77 keeps that answer stable. The code at the start of the message tells the
cases apart.
"""

from __future__ import annotations

TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

OK = 0
DAEMON_ERROR = 1
USAGE = 2
OUTCOME_UNKNOWN = 3
NO_TERMINAL = 66
NOT_RUNNING = 69
SCREENSHOT_NOT_SAVED = 73
TIMED_OUT = 75
PROTOCOL_FAILED = 76
PERMISSION_DENIED = 77
INTERRUPTED = 130  # what shells report for a process stopped by SIGINT


class CliError(Exception):
    """A failure to report to the person: ``message`` goes to stderr, ``exit_code`` to the shell.

    ``delivery_line`` is set when the failure ended a desktop command after its request was
    sent: the one ``delivery: unknown: …`` line that follows the message (``main`` prints it).
    """

    exit_code = DAEMON_ERROR

    def __init__(self, message: str, *, delivery_line: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.delivery_line = delivery_line


class DaemonError(CliError):
    """The daemon refused a request with an ``error`` reply; ``code`` is its stable error code."""

    exit_code = DAEMON_ERROR

    def __init__(self, code: str, message: str, data: dict[str, Any] | None = None) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
        self.detail = message
        self.data: dict[str, Any] = dict(data or {})


class OutcomeUnknown(CliError):
    """An action was in progress when the daemon went away or stopped answering: it may or
    may not have happened."""

    exit_code = OUTCOME_UNKNOWN


class UsageError(CliError):
    """The command line cannot be acted on (for example a socket path that is too long)."""

    exit_code = USAGE


class Declined(CliError):
    """The person did not confirm a step only they take (an empty line, anything but yes, end of
    input); nothing was sent."""

    exit_code = DAEMON_ERROR


class NoTerminal(CliError):
    """A step only the person takes was run where nobody can confirm it: stdin and stderr are
    not both terminals (a script, a pipe, an agent's tool call). Nothing was sent."""

    exit_code = NO_TERMINAL


class NotRunning(CliError):
    """No daemon is listening on the socket, and none could be started."""

    exit_code = NOT_RUNNING


def not_running_message(socket_path: str) -> str:
    """What :class:`NotRunning` says when nothing listens on ``socket_path``: how to start it."""
    return (
        f"deskhand-d is not running (nothing listens on {socket_path}).\n"
        "Start it with 'deskhand-d' in a terminal, or with "
        "'systemctl --user start deskhand.socket' if you installed the user service "
        "('deskhandctl service install'). Without --no-autostart, deskhandctl starts it for you."
    )


class TimedOut(CliError):
    """The daemon did not answer in time."""

    exit_code = TIMED_OUT


class DaemonBusy(TimedOut):
    """The daemon refused the connection (HTTP 503): every connection slot is taken."""


class ProtocolFailed(CliError):
    """The daemon and this CLI do not understand each other."""

    exit_code = PROTOCOL_FAILED


class PermissionDenied(CliError):
    """The daemon's socket or the daemon itself refused this user."""

    exit_code = PERMISSION_DENIED


class NotYourDaemon(PermissionDenied):
    """We refused the socket before sending anything: another user could be listening there.

    ``code`` is the stable code of the check that failed (``deskhand_d.clientcheck``).
    """

    def __init__(self, code: str, message: str) -> None:
        super().__init__(f"{code}: {message}")
        self.code = code
