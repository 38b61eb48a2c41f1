"""``deskhandctl stop`` when the socket cannot serve it: the emergency stop as a signal.

The daemon keeps a spare connection slot for ``stop``, but a socket can still refuse it (the
spare taken too: HTTP 503) or not answer in time (descriptors exhausted, a daemon too busy to
finish the handshake). The emergency stop must get through all the same, so ``stop`` then sends
SIGUSR1, which the daemon treats as the emergency stop (cancel everything, close the backend,
lock), to the pid in the daemon's pid file, after :func:`deskhand_d.pidfile.signal_daemon` has
checked the file and the process (ours, and really deskhand-d). If a check fails nothing is
sent and the original failure is reported with the reason.

A signal has no reply, so success is reported only once the daemon has confirmed that the lock
is engaged: it counts the stops it carried out for a signal in ``<socket>.stops``, and ``stop``
waits (up to its ``--timeout``) for that count to change from the one it read before
signalling. No confirmation in that time is a failure that says the stop was sent but not seen
to take effect.
"""

from __future__ import annotations

import os
import sys
import time

from deskhandctl.exitcodes import OK, CliError, TimedOut

POLL_S = 0.02


def stop_by_signal(
    socket_path: str, refused: CliError, *, json_output: bool, confirm_within_s: float
) -> int:
    """Send the emergency stop as a signal and wait for the daemon to confirm the lock; exit 0,
    or raise ``refused`` (nothing sent) or :class:`TimedOut` (sent, not confirmed) saying why."""
    from deskhand_d.pidfile import EMERGENCY_STOP_SIGNAL, NotVerified, read_stops, signal_daemon

    name = EMERGENCY_STOP_SIGNAL.name
    uid = os.getuid()
    before = read_stops(socket_path, uid)
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
    seen = 0 if before is None or before[0] != pid else before[1]
    deadline = time.monotonic() + confirm_within_s
    while True:
        now = read_stops(socket_path, uid)
        if now is not None and now[0] == pid and now[1] != seen:  # written only after a lock
            break
        if time.monotonic() >= deadline:
            raise TimedOut(
                f"sent {name} to deskhand-d (pid {pid}), but it has not confirmed the emergency "
                f"stop within {confirm_within_s:g} s, so it may not be locked yet. Run "
                "'deskhandctl status' to check, or stop the daemon itself "
                f"(`kill {pid}`, or through its service manager)."
            )
        time.sleep(POLL_S)
    if json_output:
        from deskhandctl.cli.commands import print_json

        print_json({"kind": "signalled", "signal": name, "pid": pid, "locked": True})
    else:
        print(
            f"deskhand-d (pid {pid}) is stopped and locked: it took {name} and confirmed it. "
            "'deskhandctl status' shows LOCKED once it takes connections again; "
            "'deskhandctl unlock' releases it."
        )
    return OK
