"""Every reply to a desktop command is shown with exactly one delivery line, and it is the
daemon's value.

The real CLI as a subprocess against a real daemon on the simulated desktop (issue 22, "words
that agree"): a refusal whose message says that nothing was sent used to be followed by a
second line claiming the backend had received the action, and failed observations were said to
be actions. Here each case is run in both output forms; the line that starts with
``delivery:`` (on stdout for a result, after ``deskhandctl:`` on stderr for an error) must
appear exactly once and name what the reply's ``delivery`` says.
"""

from __future__ import annotations

import json
import re
import subprocess
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, sim_desk
from terminal import Terminal

__all__ = ["sim_desk"]  # the fixture, used by name below

pytestmark = pytest.mark.slow

_LINE = re.compile(r"^(?:deskhandctl: )?delivery: (\w+)")


def delivery_lines(*texts: str) -> list[str]:
    """The delivery values of every delivery line in ``texts`` (stdout, stderr, a terminal)."""
    found = []
    for text in texts:
        for line in text.replace("\r", "").splitlines():
            match = _LINE.match(line)
            if match:
                found.append(match.group(1))
    return found


def one_line(done: subprocess.CompletedProcess[str], value: str) -> str:
    """Assert exactly one delivery line, saying ``value``; return it."""
    assert delivery_lines(done.stdout, done.stderr) == [value], (done.stdout, done.stderr)
    (line,) = [x for x in (done.stdout + done.stderr).splitlines() if _LINE.match(x)]
    return line


def error_of(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """The ``--json`` error object on stdout."""
    error: dict[str, Any] = json.loads(done.stdout)["error"]
    return error


def test_a_consent_refusal_has_one_line_refused(sim_desk: Any) -> None:
    """No saved grant and no terminal: consent_denied says nothing was sent, and so does the one
    delivery line; no second line claims the backend received anything."""
    d: CliDaemon = sim_desk(grants=())
    done = d.run("observe", "Calculator")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("deskhandctl: consent_denied: ")
    assert "Nothing was sent" in done.stderr
    line = one_line(done, "refused")
    assert line == "deskhandctl: delivery: refused: nothing was sent to the desktop"
    assert "dispatched" not in done.stderr and "received" not in done.stderr
    as_json = d.run("--json", "observe", "Calculator")
    assert error_of(as_json)["data"]["delivery"] == "refused"
    one_line(as_json, "refused")
    assert d.received("get_app_state") == 0


def test_a_consent_refusal_after_the_observation_has_one_line_dispatched(
    sim_desk: Any,
) -> None:
    """The app restarted under a task grant and the person says no at the terminal: the
    observation was made (delivery dispatched) and withheld, and the one line says exactly
    that, with no second line about an action."""
    d: CliDaemon = sim_desk(
        {"preapproved": ["*"], "relaunch": [{"tool": "get_app_state", "call": 2}]},
        grants=(),
        DESKHAND_ALLOWED_APPS="TextEdit",
    )
    for answer, code in ((b"o\n", 0), (b"d\n", 1)):
        terminal = Terminal(*d.argv("observe", "TextEdit"), env=d.env)
        try:
            shown = terminal.read_until(b"(default deny) ").decode()
            terminal.type(answer)
            exit_code, out = terminal.finish()
        finally:
            terminal.close()
        assert exit_code == code, terminal.seen
    assert "restarted" in shown
    seen = terminal.seen.decode()
    assert "consent_denied" in seen
    assert delivery_lines(out, seen) == ["dispatched"], seen
    assert (
        "deskhandctl: delivery: dispatched: the backend observed the app, and Deskhand "
        "withheld that observation; no input was sent to the app"
    ) in seen.replace("\r", "")
    assert d.received("get_app_state") == 2


def test_a_failed_observation_has_one_line_about_the_request(sim_desk: Any) -> None:
    """Finder has no window: the backend answered (dispatched) and did nothing. The line says
    the backend received the request, never that it received an action."""
    d: CliDaemon = sim_desk(
        grants=("Calculator", "Finder"), DESKHAND_ALLOWED_APPS="Calculator,Finder"
    )
    done = d.run("observe", "Finder")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("deskhandctl: no_window: ")
    line = one_line(done, "dispatched")
    assert line.startswith(
        "deskhandctl: delivery: dispatched: the backend received the request and answered"
    )
    assert "action" not in line
    as_json = d.run("--json", "observe", "Finder")
    assert error_of(as_json)["data"]["delivery"] == "dispatched"
    one_line(as_json, "dispatched")


def test_a_dispatched_action_has_one_line_on_stdout(sim_desk: Any) -> None:
    """A click that went through: "delivery: dispatched" once, on stdout; nothing on stderr."""
    d: CliDaemon = sim_desk()
    done = d.run("click", "--app", "Calculator", "--state", d.observe("Calculator"), "--index", "9")
    assert done.returncode == 0, done.stderr
    assert one_line(done, "dispatched") == "delivery: dispatched"
    assert done.stderr == ""
    as_json = d.run(
        "--json", "click", "--app", "Calculator", "--state", d.observe("Calculator"), "--index", "9"
    )
    assert json.loads(as_json.stdout)["delivery"] == "dispatched"
    assert delivery_lines(as_json.stdout, as_json.stderr) == []  # the JSON object says it


def test_a_backend_refusal_of_an_action_has_one_line_dispatched(sim_desk: Any) -> None:
    """A key the backend does not know: it got the call and pressed nothing; one line, which
    points at the message for what came of it."""
    d: CliDaemon = sim_desk()
    done = d.run("press", "--app", "Calculator", "--state", d.observe("Calculator"), "hyper+x")
    assert done.returncode == 1, done.stderr
    assert done.stderr.startswith("deskhandctl: key_unknown: ")
    line = one_line(done, "dispatched")
    assert line.endswith("the message above says what came of it")


def test_a_stale_state_id_has_one_line_refused(sim_desk: Any) -> None:
    """A state id used twice: the second use is refused before anything is sent."""
    d: CliDaemon = sim_desk()
    state = d.observe("Calculator")
    first = d.run("click", "--app", "Calculator", "--state", state, "--index", "9")
    assert first.returncode == 0, first.stderr
    again = d.run("click", "--app", "Calculator", "--state", state, "--index", "9")
    assert again.returncode == 1, again.stderr
    assert again.stderr.startswith("deskhandctl: state_consumed: ")
    assert one_line(again, "refused") == (
        "deskhandctl: delivery: refused: nothing was sent to the desktop"
    )
    as_json = d.run("--json", "click", "--app", "Calculator", "--state", state, "--index", "9")
    assert error_of(as_json)["code"] == "state_consumed"
    assert error_of(as_json)["data"]["delivery"] == "refused"
    one_line(as_json, "refused")
    assert d.received("click") == 1
