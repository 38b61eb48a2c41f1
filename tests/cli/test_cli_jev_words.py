"""What ``deskhandctl`` says when Jev cannot run: ``mode jev`` without a key exits 1 naming the
variable to set, ``run`` in native mode says why the session is in native mode and what to do,
and a Jev failure prints its cause (never the key, never a body).

The real CLI as a subprocess against a real daemon on the simulated desktop, with the fake Jev
over real HTTP where one is needed. Reproductions of issue 17: ``mode: native
(missing_jev_key)`` with exit 0, ``run`` saying only ``jev_mode_required``, and ``jev_unavailable``
with the cause in the trace alone.
"""

from __future__ import annotations

import json
import socket
import subprocess
import sys
from typing import Any

import pytest
from dhtest.clidaemon import sim_desk
from dhtest.daemon import daemon_env
from dhtest.jev_rig import BUTTON, KEY, JevDesk, pick
from peers.fake_jev import BODY_MARKER

pytestmark = pytest.mark.slow


def test_mode_jev_without_a_key_exits_1_naming_the_variable(sim_desk: Any) -> None:
    d = sim_desk()
    done = d.run("mode", "jev")
    assert done.returncode == 1
    assert done.stdout == "mode: native (missing_jev_key)\n"
    assert done.stderr.startswith(
        "deskhandctl: missing_jev_key: jev mode needs a Jev key, so this session stays in "
        "native mode: deskhand-d has no Jev key. Set TYPESAFE_API_KEY in its environment"
    )
    assert done.stderr.rstrip().endswith("then switch with `deskhandctl mode jev`")
    as_json = d.json("mode", "jev", code=1)
    assert as_json["mode"] == "native" and "TYPESAFE_API_KEY" in as_json["detail"]
    shown = d.run("mode")  # asking is not a failure; the reason and the fix are shown
    assert shown.returncode == 0 and "TYPESAFE_API_KEY" in shown.stdout
    # run then says why the session is not in jev mode, and what to do.
    run = d.run("run", "--app", "Calculator", "Enter 1")
    assert run.returncode == 1
    assert run.stderr.startswith(
        "deskhandctl: jev_mode_required: this session is in native mode because jev mode needs "
        "a Jev key, so nothing was sent to Jev: deskhand-d has no Jev key. Set TYPESAFE_API_KEY"
    )
    assert "Meanwhile, act natively with the action commands (`deskhandctl click`" in run.stderr
    assert d.run("mode", "native").returncode == 0


def ctl(env: dict[str, str], *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        stdin=subprocess.DEVNULL,
    )


def jev_env(desk: JevDesk) -> dict[str, str]:
    env = daemon_env(desk.root)
    env["DESKHAND_SOCKET"] = str(desk.daemon.socket)
    env["DESKHAND_SESSION"] = "agent"
    return env


def test_run_in_a_session_switched_to_native_says_who_switches_back(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["1"])])
    env = jev_env(desk)
    assert ctl(env, "mode", "native").returncode == 0
    done = ctl(env, "run", "--app", "Calculator", "Enter 1")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "deskhandctl: jev_mode_required: this session was switched to native mode, so nothing "
        "was sent to Jev. Only the person switches it to jev mode, with "
        "`deskhandctl --session agent mode jev`"
    )
    assert desk.jev_requests() == []


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_jev_unreachable_the_cause_is_in_the_reply_and_printed(sim_desk: Any) -> None:
    """The issue's ``jev_unavailable`` with the cause only in the trace: now the reply and the
    CLI say it, and never the key."""
    port = closed_port()
    d = sim_desk(
        TYPESAFE_API_KEY=KEY,
        DESKHAND_MODE="jev",
        DESKHAND_JEV_URL=f"http://127.0.0.1:{port}/v1/systemone",
    )
    done = d.run("run", "--app", "Calculator", "Enter 1")
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    assert lines[0].startswith("error: jev_unavailable, 0 action(s) in ")
    assert lines[1] == (
        f"cause: could not reach the Jev API at http://127.0.0.1:{port}: connection refused. "
        "Check that this computer reaches it, and that DESKHAND_JEV_URL names the right "
        "endpoint (unset, it is https://api.typesafe.ai/v1/systemone)"
    )
    result = d.json("run", "--app", "Calculator", "Enter 1", code=1)
    assert result["status"] == "error" and "connection refused" in result["detail"]
    for text in (done.stdout, done.stderr, json.dumps(result)):
        assert KEY not in text


@pytest.mark.parametrize(
    ("entry", "reason", "says"),
    [
        ({"status": 401}, "jev_rejected", "HTTP 401 (check the API key)"),
        ({"status": 500}, "jev_unavailable", "kept failing (HTTP 500) after 2 attempt(s)"),
        ({"raw": "not json"}, "jev_invalid_response", "a body that is not JSON"),
    ],
)
def test_jev_http_failures_print_their_cause(
    jev_factory: Any, entry: dict[str, Any], reason: str, says: str
) -> None:
    desk: JevDesk = jev_factory([{"default": entry}])
    env = jev_env(desk)
    done = ctl(env, "run", "--app", "Calculator", "Enter 1")
    assert done.returncode == 1
    assert done.stdout.startswith(f"error: {reason}, 0 action(s)")
    cause = next(x for x in done.stdout.splitlines() if x.startswith("cause: "))
    assert says in cause
    for text in (done.stdout, done.stderr):
        assert KEY not in text and BODY_MARKER not in text


__all__ = ["sim_desk"]
