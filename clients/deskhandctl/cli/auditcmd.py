"""``deskhandctl audit``: the latest dispatches from the audit log, read from its files.

Works without the daemon (after a crash is when it matters most). Each line is one dispatch
with the delivery it ended with; a dispatch whose start was recorded but whose outcome never
was (still in flight, waiting for a full disk, or the daemon stopped or crashed first) shows
``unknown`` and says so, and an outcome written late (the disk was full) says so. Exit codes: 0
when the log could be read (an empty or missing log included), 1 when it could not.
"""

from __future__ import annotations

import os
import sys

from deskhandctl.exitcodes import DAEMON_ERROR, OK
from deskhandctl.wire import jsontext

TYPE_CHECKING = False
if TYPE_CHECKING:
    from deskhandctl.cli.grammar import Args

DEFAULT_LAST = 20


def run_audit(args: Args) -> int:
    from deskhand_d.auditread import read_dispatches
    from deskhand_d.paths import state_dir

    directory = state_dir(os.environ) / "audit"
    try:
        dispatches, bad = read_dispatches(directory)
    except OSError as exc:
        print(f"deskhandctl: cannot read the audit log in {directory}: {exc.strerror}",
              file=sys.stderr)  # fmt: skip
        return DAEMON_ERROR
    last = args.params.get("last")
    shown = dispatches[-(last if isinstance(last, int) else DEFAULT_LAST) :]
    if args.json:
        print(
            jsontext.dumps_readable(
                {
                    "directory": str(directory),
                    "dispatches": [d.to_dict() for d in shown],
                    "unreadable_lines": bad,
                }
            )
        )
        return OK
    if not dispatches:
        print(f"no dispatches recorded in {directory}")
    for d in shown:
        what = d.delivery
        if d.delivered:
            what += f" ({d.delivered.get('done')} of {d.delivered.get('total')} "
            what += f"{d.delivered.get('unit')})"
        if not d.outcome_recorded:
            what += (
                " (no outcome recorded: still in flight, waiting for a full disk, or the "
                "daemon stopped first)"
            )
        elif d.code == "daemon_stopped":
            what += " (the daemon stopped while it was in flight)"
        elif d.code:
            what += f" [{d.code}]"
        if d.recorded_late:
            what += " (recorded late: the disk was full when it finished)"
        app = f" {d.app}" if d.app else ""
        print(f"{d.time}  {d.session} ({d.client})  {d.tool}{app}: {what}")
    if bad:
        print(f"({bad} line(s) of the log are not audit records and were skipped)")
    return OK
