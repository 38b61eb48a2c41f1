"""A flood of refused connects from another user costs a bounded number of log lines.

Another uid (root switches to ``nobody`` in a child; CI runs as root) connects 2,000 times to a
socket it may reach (modes opened up, as in ``test_security.py``), and each time the daemon
closes it without a byte and logs ``peer.refused``. The log grows by the first
:data:`deskhand_d.log.BURST` of them per window and one ``log.suppressed`` summary whose
``count`` accounts for every other one.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest
from dhtest.daemon import DaemonProc

from deskhand_d.log import BURST

NOBODY = 65534
CONNECTS = 2000

_FLOOD = textwrap.dedent(
    """
    import json, os, socket, sys
    os.setgroups([]); os.setgid(%(uid)d); os.setuid(%(uid)d)
    closed = 0
    for _ in range(int(sys.argv[2])):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(10)
        s.connect(sys.argv[1])
        closed += s.recv(1) == b""  # closed without a byte: the daemon has dealt with it
        s.close()
    print(json.dumps({"closed": closed}))
    """
) % {"uid": NOBODY}

pytestmark = [
    pytest.mark.slow,
    pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root"),
]


def test_refused_connect_flood_is_summarised(daemon: DaemonProc) -> None:
    """2,000 refused connects: the first lines, one summary counting the rest, nothing lost."""
    for p in (daemon.root, daemon.root / "run", daemon.socket.parent):
        os.chmod(p, 0o711)
    os.chmod(daemon.socket, 0o666)
    before = len(daemon.log_text().splitlines())
    done = subprocess.run(
        [sys.executable, "-c", _FLOOD, str(daemon.socket), str(CONNECTS)],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"closed": CONNECTS}
    assert daemon.stop() == 0  # a clean stop writes the pending summary
    new = [json.loads(x) for x in daemon.log_text().splitlines()[before:] if x.startswith("{")]
    refused = [x for x in new if x["event"] == "peer.refused"]
    summaries = [x for x in new if x["event"] == "log.suppressed" and x["of"] == "peer.refused"]
    assert refused and refused[0]["uid"] == NOBODY  # the first ones are always written
    assert summaries and all(s["uid"] == NOBODY for s in summaries)
    # every refusal is either a line or counted in a summary
    assert len(refused) + sum(s["count"] for s in summaries) == CONNECTS
    # a burst per window (the flood takes seconds): far fewer lines than connects
    assert len(refused) <= 4 * BURST, len(refused)
    assert len(new) <= 4 * BURST + 50, len(new)
