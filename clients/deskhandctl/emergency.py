"""``deskhandctl stop`` when the socket cannot serve it: the emergency stop as a signal.

The daemon keeps a spare connection slot for ``stop``, but a socket can still refuse it (the
spare taken too: HTTP 503) or not answer in time (descriptors exhausted, a daemon too busy to
finish the handshake). The emergency stop must get through all the same, so ``stop`` then sends
SIGUSR1, which the daemon treats as the emergency stop (cancel everything, close the backend,
lock), to the pid in the daemon's pid file, after :func:`deskhand_d.pidfile.signal_daemon` has
checked the file and the process (ours, and really deskhand-d). If a check fails nothing is
sent and the original failure is reported with the reason.
"""

from __future__ import annotations

import sys

from deskhandctl.exitcodes import OK, CliError


def stop_by_signal(socket_path: str, refused: CliError, *, json_output: bool) -> int:
    """Send the emergency stop as a signal; exit 0, or re-raise ``refused`` with the reason."""
    from deskhand_d.pidfile import EMERGENCY_STOP_SIGNAL, NotVerified, signal_daemon

    name = EMERGENCY_STOP_SIGNAL.name
    try:
        pid = signal_daemon(socket_path)
    except NotVerified as exc:
        raise type(refused)(
            f"{refused.message}\nThe emergency stop could not be sent as a signal either, "
            f"because {exc}. If deskhand-d is still running, send it {name} yourself "
            f"(`kill -{name[3:]} PID`), or stop it."
        ) from None
    print(
        f"deskhandctl: {refused.message}\ndeskhandctl: sent the emergency stop as a signal "
        "instead.",
        file=sys.stderr,
    )
    if json_output:
        from deskhandctl.commands import print_json

        print_json({"kind": "signalled", "signal": name, "pid": pid})
    else:
        print(
            f"sent {name} to deskhand-d (pid {pid}): it cancels everything, closes the backend "
            "and locks. 'deskhandctl status' shows LOCKED once it takes connections again; "
            "'deskhandctl unlock' releases it."
        )
    return OK
