"""Every reply, CLI message and audit line states one and the same delivery for an action.

The daemon runs on the simulated desktop with ``type_text`` hanging in the backend (it was sent
and never answered), and the action is then cut off in each way an action in flight can be:
the daemon shuts down, the person presses the emergency stop, the client disappears. None of
them may ever be reported or audited as ``refused``. A queued action that never reached the
backend is the one case that is ``refused``.
"""

from __future__ import annotations

import json
import signal
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, cli_daemons

pytestmark = pytest.mark.slow

HANG = {"preapproved": ["TextEdit"], "hang": [{"tool": "type_text"}]}
OUTCOME_UNKNOWN_EXIT = 3


@pytest.fixture
def desk() -> Iterator[Any]:
    with cli_daemons() as make:
        yield lambda scenario: make(scenario, DESKHAND_ALLOWED_APPS="TextEdit")


def wait_for_calls(d: CliDaemon, tool: str, n: int = 1, limit: float = 20.0) -> None:
    """Until the simulator has received ``n`` calls of ``tool``: the action was sent."""
    deadline = time.monotonic() + limit
    while time.monotonic() < deadline:
        if d.received(tool) >= n:
            return
        time.sleep(0.05)
    raise AssertionError(f"the backend never received {tool}")


def _typed(desk: CliDaemon, state: str) -> subprocess.Popen[str]:
    return desk.start("type", "--app", "TextEdit", "--state", state, "xyz " * 70)


def _assert_unknown(proc: subprocess.Popen[str]) -> str:
    out, err = proc.communicate(timeout=30)
    assert proc.returncode == OUTCOME_UNKNOWN_EXIT, (out, err)
    assert "may or may not have happened" in err, err
    assert "refused" not in err, err
    return err


def _type_audit(desk: CliDaemon) -> list[str]:
    """The outcome records of type_text, in order (start records say unknown until then)."""
    return [a["delivery"] for a in desk.audit() if a["tool"] == "type_text" and a["phase"] == "end"]


def test_daemon_shutdown_mid_action_is_unknown_everywhere(desk: Any) -> None:
    """The issue's reproduction: `type` in flight, then `shutdown`. The CLI exits 3 saying it
    may or may not have happened; the audit line says unknown, not refused."""
    d = desk(HANG)
    proc = _typed(d, d.observe())
    wait_for_calls(d, "type_text")
    stopping = d.run("shutdown")
    assert stopping.returncode == 0, stopping.stderr
    err = _assert_unknown(proc)
    assert "outcome_unknown" in err or "cancelled" in err
    assert d.daemon.proc.wait(20) == 0
    assert _type_audit(d) == ["unknown"]


def test_emergency_stop_mid_action_is_unknown_and_queued_is_refused(desk: Any) -> None:
    """One action in flight and one queued behind it, then the emergency stop: the first is
    unknown (reply, exit code, audit), the second never reached the backend: refused."""
    d = desk(HANG)
    other = json.loads(d.run("--json", "--session", "other", "observe", "TextEdit").stdout)
    first = _typed(d, d.observe())
    wait_for_calls(d, "type_text")
    queued = d.start(
        "--session", "other", "type", "--app", "TextEdit", "--state", other["state_id"], "q"
    )
    deadline = time.monotonic() + 20  # until it waits in the queue behind the hanging call
    while d.json("status")["queue_depth"] != 1:
        assert queued.poll() is None, queued.communicate()
        assert time.monotonic() < deadline, "the second action never reached the queue"
    assert queued.poll() is None
    stop = d.run("stop")
    assert stop.returncode == 0, stop.stderr
    _assert_unknown(first)
    out, err = queued.communicate(timeout=30)
    assert queued.returncode == 1, (out, err)
    assert "refused: nothing was sent to the desktop" in err, err
    assert _type_audit(d) == ["unknown", "refused"]


def test_client_gone_mid_action_is_audited_unknown(desk: Any) -> None:
    """The client is killed while its action runs: the audit still says unknown."""
    d = desk(HANG)
    proc = _typed(d, d.observe())
    wait_for_calls(d, "type_text")
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=10)
    deadline = time.monotonic() + 10
    while not _type_audit(d) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert _type_audit(d) == ["unknown"]


def test_error_reply_carries_typed_delivery(desk: Any) -> None:
    """A refusal by a gate says refused in the reply's data, from the typed attribute."""
    d = desk({"preapproved": ["TextEdit"]})
    d.observe()
    done = d.run("--json", "type", "--app", "TextEdit", "--state", "0" * 32, "x")
    assert done.returncode == 1
    error = json.loads(done.stdout)["error"]
    assert error["data"]["delivery"] == "refused"
    assert _type_audit(d) == []  # refused by a gate: never dispatched, so never audited


def test_sky_contract_input_goes_to_the_named_app_whatever_is_in_front(desk: Any) -> None:
    """macOS model (the simulator's, not a Mac run): the person brings TextEdit to the front
    just before a `type` into Calculator. Like Sky, the input goes to Calculator's process and
    TextEdit's document is untouched; list-apps shows what is really in front."""
    scenario = {
        "preapproved": ["Calculator", "TextEdit"],
        "frontmost": [{"tool": "type_text", "app": "TextEdit"}],
        "textedit": {"text": "witness"},
    }
    d = desk(scenario)
    d.at_terminal("apps", "add", "Calculator")
    typed = d.run(
        "--json", "type", "--app", "Calculator", "--state", d.observe("Calculator"), "12+1="
    )
    assert typed.returncode == 0, typed.stderr
    assert json.loads(typed.stdout)["delivery"] == "dispatched"
    calc = json.loads(d.run("--json", "observe", "Calculator").stdout)["text"]
    assert "13" in calc
    textedit = json.loads(d.run("--json", "observe", "TextEdit").stdout)["text"]
    assert "Value: witness" in textedit and "12+1" not in textedit
    front = [x for x in d.run("list-apps").stdout.splitlines() if "frontmost" in x]
    assert len(front) == 1 and front[0].startswith("TextEdit"), front
