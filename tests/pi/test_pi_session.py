"""The extension inside a real pi AgentSession (faux model) against a real daemon on the sim."""

from __future__ import annotations

import re
import time
from typing import Any

import pytest
from dhtest.jev_rig import CALC, KEY, JevDesk, jev_factory, pick
from pirig import (
    JEV_ENV,
    NATIVE_ACTIONS,
    OUR_TOOLS,
    PiDesk,
    expect_line,
    finish,
    node_env,
    run_harness,
)

NATIVE_SET = {t for t in OUR_TOOLS if t != "jev_cua_run"}
JEV_SET = {t for t in OUR_TOOLS if t not in NATIVE_ACTIONS}


def display_value(text: str) -> str:
    """The Calculator's display in a tree: the text element marked with U+200E (the expression
    line that appears above it once an operator is used has no mark)."""
    m = re.search(r"^\s*\d+ text \u200e(.*)$", text, re.M)
    assert m, text
    return m.group(1)


def test_scripted_model_adds_6_and_7(pi_desk: Any) -> None:
    """Observe, click 6 + 7 =, observe: the daemon did exactly that and the result shows 13."""
    desk: PiDesk = pi_desk({"preapproved": ["*"]})
    out = desk.run("calc")
    assert out["errors"] == []
    assert out["registered"] == OUR_TOOLS
    assert "cua-mode" in out["commands"]
    results = out["results"]
    assert [r["toolCallId"] for r in results] == ["obs1", "c6", "cplus", "c7", "ceq", "obs2"]
    assert [r["isError"] for r in results] == [False] * 6, [r["text"][:300] for r in results]
    # Observations: text with the stateId, plus the screenshot as an image item.
    first, last = results[0], results[-1]
    for obs in (first, last):
        assert obs["images"] and obs["images"][0]["mimeType"] == "image/jpeg"
        assert obs["images"][0]["bytes"] > 1000
        assert obs["details"]["method"] == "get_app_state"
        assert obs["details"]["app"] == "Calculator"
        assert obs["details"]["mode"] == "native"
        assert obs["details"]["screenshot"] is True
        assert obs["details"]["stateId"] in obs["text"]
    assert display_value(first["text"]) == "0"
    assert display_value(last["text"]) == "13"
    # The model is told, in every observation and action result, that this is the simulator.
    for r in results:
        assert "[Simulated desktop: " in r["text"], r["text"][:300]
    # Actions: delivery state and the action-returned stateId the next click used.
    for r in results[1:5]:
        assert r["details"]["method"] == "click"
        assert r["details"]["delivery"] == "dispatched"
        assert r["details"]["stateId"]
        # The simulator answers a click with a screenshot; the result passes it on as an image.
        assert r["images"] and r["images"][0]["mimeType"] == "image/jpeg", r["details"]
        assert r["images"][0]["bytes"] > 1000
        assert r["details"]["screenshot"] is True
    assert display_value(results[1]["text"]) == "6"
    assert display_value(results[4]["text"]) == "13"
    # What the backend really got, in order.
    assert desk.tool_calls() == [
        "get_app_state",
        "click",
        "click",
        "click",
        "click",
        "get_app_state",
    ]
    ops = desk.status()["ops"]
    # agent_start / agent_end became turn_begin / turn_end on the daemon.
    assert ops["turn_begin"]["count"] >= 1
    assert ops["turn_end"]["count"] >= 1
    assert ops["click"]["errors"] == 0


def test_cua_mode_switches_tools_and_survives_reload(pi_desk: Any) -> None:
    """/cua-mode jev hides the native actions and shows jev_cua_run, and back; entries persist
    the choice, reload and reopening restore it, the daemon session follows, others' tools stay."""
    desk: PiDesk = pi_desk({"preapproved": ["*"]}, **JEV_ENV)
    out = desk.run("mode")
    assert out["errors"] == []
    steps = {s["label"]: s["active"] for s in out["steps"]}
    assert set(steps["start"]) == NATIVE_SET
    assert set(steps["jev"]) == JEV_SET
    assert "jev_cua_run" in steps["jev"]
    assert not set(NATIVE_ACTIONS) & set(steps["jev"])
    assert set(steps["jev after reload"]) == JEV_SET
    assert set(steps["native"]) == NATIVE_SET
    assert set(steps["native after reload"]) == NATIVE_SET
    assert set(steps["jev again"]) == JEV_SET
    assert set(out["reopened"]) == JEV_SET
    # The daemon's session mode followed, also on the new connection after the reload.
    assert '"daemonMode":"jev"' in out["statusAfterJev"]["text"]
    assert '"desktop":"simulated desktop: made-up apps' in out["statusAfterJev"]["text"]
    assert '"daemonMode":"jev"' in out["statusAfterReload"]["text"]
    assert [e["data"] for e in out["entries"] if e["customType"] == "cua-mode"] == [
        {"mode": "jev"},
        {"mode": "native"},
        {"mode": "jev"},
    ]
    assert any("Usage: /cua-mode" in n for n in out["notifications"])
    # Another extension's tool stayed active through every switch and reload.
    assert out["otherAtStart"] == ["other_tool"]
    assert out["otherToolsKept"] == ["other_tool"]
    # Every mode switch went to the daemon: three mode_set ops (jev, native, jev) plus the
    # one after the reload in jev mode.
    assert desk.status()["ops"]["mode_set"]["count"] >= 3
    # No app was touched by any of this.
    assert desk.tool_calls() == []


def test_cua_mode_jev_without_key_stays_native(pi_desk: Any) -> None:
    desk: PiDesk = pi_desk({"preapproved": ["*"]})
    out = desk.run("mode_nokey")
    assert set(out["active"]) == NATIVE_SET
    assert out["entries"][-1] == {"mode": "native", "reason": "missing_jev_key"}
    told = [n for n in out["notifications"] if "TypeSafe key" in n]
    # The daemon's detail: the variable to set, and pi's own way back (not deskhandctl's).
    assert told and "TYPESAFE_API_KEY" in told[0] and "/cua-mode jev" in told[0]
    assert "deskhandctl mode" not in told[0]


@pytest.mark.parametrize(("answer", "wire"), [(True, "accept"), (False, "decline")])
def test_backend_approval_through_confirm(pi_desk: Any, answer: bool, wire: str) -> None:
    """The backend's approval prompt is shown with pi's confirm; yes/no reach it as accept/decline."""
    desk: PiDesk = pi_desk()  # no preapproval: the first observation asks
    out = desk.run("confirm", {"answer": answer})
    dialogs = out["dialogs"]
    assert len(dialogs) == 1 and dialogs[0]["method"] == "confirm"
    assert "Calculator" in dialogs[0]["title"]
    assert "Allow ChatGPT to use Calculator?" in dialogs[0]["message"]  # quoted as received
    answers = [r["answer"] for r in desk.records("elicitation_answer")]
    assert answers == [wire]
    (result,) = out["results"]
    if answer:
        assert not result["isError"]
        assert result["details"]["stateId"]
        assert desk.tool_calls() == ["get_app_state"]
    else:
        assert result["isError"]
        assert "approval_declined" in result["text"]


@pytest.mark.parametrize(("pick", "granted"), [("task only", True), ("deny", False)])
def test_app_consent_through_select(pi_desk: Any, pick: str, granted: bool) -> None:
    """Deskhand's own consent question is a select; deny never reaches the backend."""
    desk: PiDesk = pi_desk({"preapproved": ["*"]}, grants=())
    out = desk.run("consent", {"pick": pick})
    dialogs = out["dialogs"]
    assert len(dialogs) == 1 and dialogs[0]["method"] == "select"
    assert any("task only" in o for o in dialogs[0]["options"])
    assert any(o == "Deny" for o in dialogs[0]["options"])
    (result,) = out["results"]
    if granted:
        assert not result["isError"], result["text"]
        assert desk.tool_calls() == ["get_app_state"]
    else:
        assert result["isError"]
        assert "consent_denied" in result["text"]
        assert desk.tool_calls() == []


def test_without_ui_the_daemon_cancels_questions(pi_desk: Any) -> None:
    """No UI: the extension says it cannot answer, so the approval ends in cancel, never accept."""
    desk: PiDesk = pi_desk()
    out = desk.run("noui")
    (result,) = out["results"]
    assert result["isError"]
    assert "approval_cancelled" in result["text"]
    assert [r["answer"] for r in desk.records("elicitation_answer")] == ["cancel"]


def test_abort_mid_tool_cancels_the_daemon_request(pi_desk: Any) -> None:
    """session.abort() while the backend hangs on a click: the daemon gets a cancel and the
    simulator sees the call cancelled; the tool result says the outcome is unknown."""
    desk: PiDesk = pi_desk({"preapproved": ["*"], "hang": [{"tool": "click"}]})
    out = desk.run("abort")
    results = out["results"]
    assert [r["toolName"] for r in results] == ["cua_get_app_state", "cua_click"]
    click = results[1]
    assert click["isError"]
    assert "cancelled" in click["text"]
    ends = [r for r in desk.records("call_end") if r["tool"] == "click"]
    assert [e["outcome"] for e in ends] == ["cancelled"]
    ops = desk.status()["ops"]
    assert ops["cancel"]["count"] == 1
    assert ops["cancel"]["errors"] == 0
    assert out["elapsedMs"] < 20_000


def test_reconnects_once_after_a_daemon_restart(pi_desk: Any) -> None:
    desk: PiDesk = pi_desk({"preapproved": ["*"]})
    p = desk.start("restart")
    expect_line(p.stdout, "READY")
    first_pid = desk.proc.proc.pid
    desk.restart()
    assert desk.proc.proc.pid != first_pid
    assert p.stdin is not None
    p.stdin.write("go\n")
    p.stdin.flush()
    out = finish(p)
    results = out["results"]
    assert [r["toolName"] for r in results] == ["cua_list_apps", "cua_get_app_state"]
    assert [r["isError"] for r in results] == [False, False], [r["text"][:300] for r in results]
    assert "Calculator" in results[1]["text"]
    # The new daemon served the second call.
    assert desk.status()["ops"]["get_app_state"]["count"] == 1


def test_no_daemon_says_how_to_start_it(node: Any, tmp_path: Any) -> None:
    sock = tmp_path / "nothing-here.sock"
    out = run_harness("nodaemon", None, node_env({"DESKHAND_SOCKET": str(sock)}))
    assert out["errors"] == []
    observe, status = out["results"]
    assert observe["isError"]
    assert str(sock) in observe["text"]
    assert "deskhandctl status" in observe["text"]
    assert "deskhand-d" in observe["text"]
    # The status tool still answers, and says the daemon is not running.
    assert not status["isError"]
    assert '"running":false' in status["text"]
    assert "Deskhand: daemon not running" in out["status"]


def test_connects_at_session_start_and_shutdown_closes(pi_desk: Any) -> None:
    """One pi client appears on session_start (not while loading), and session_shutdown
    closes it."""
    desk: PiDesk = pi_desk({"preapproved": ["*"]})
    p = desk.start("lifecycle")
    expect_line(p.stdout, "STARTED")
    deadline = time.monotonic() + 10
    while not desk.pi_clients() and time.monotonic() < deadline:
        time.sleep(0.05)
    clients = desk.pi_clients()
    assert [c["name"] for c in clients] == ["deskhand-pi"]
    assert p.stdin is not None
    p.stdin.write("go\n")
    p.stdin.flush()
    expect_line(p.stdout, "PROMPTED")
    assert len(desk.pi_clients()) == 1  # the tool call reused the session's connection
    p.stdin.write("go\n")
    p.stdin.flush()
    expect_line(p.stdout, "SHUTDOWN")
    deadline = time.monotonic() + 10
    while desk.pi_clients() and time.monotonic() < deadline:
        time.sleep(0.05)
    assert desk.pi_clients() == []
    p.stdin.write("go\n")
    p.stdin.flush()
    out = finish(p)
    assert [r["isError"] for r in out["results"]] == [False]
    assert desk.tool_calls() == ["list_apps"]


def test_jev_run_handoff_opens_native_actions_for_its_steps(jev_factory: Any) -> None:
    """Jev mode from the daemon's default: jev_cua_run returns needs_planner, the native action
    tools appear, a click carries the handoff token and spends a step, and the turn's end hides
    them again."""
    desk: JevDesk = jev_factory([pick(CALC["1"], confidence=0.35)])
    env = node_env({"DESKHAND_SOCKET": str(desk.daemon.socket), "DH_SIM_RECORD": str(desk.record)})
    out = run_harness("jev_handoff", None, env)
    seen = out["seen"]
    assert set(seen["atStart"]) == JEV_SET
    assert set(seen["afterRun"]) == set(OUR_TOOLS)  # the handoff opened the native actions
    run, obs, click = out["results"]
    assert not run["isError"], run["text"]
    assert '"status":"needs_planner"' in run["text"]
    assert run["details"]["status"] == "needs_planner"
    steps = run["details"]["remainingSteps"]
    assert isinstance(steps, int) and steps > 0
    assert "token" not in run["text"]  # the extension keeps the token to itself
    assert "jev_cua_run" in out["updates"]  # the run's progress events became tool updates
    assert not obs["isError"]
    assert not click["isError"], click["text"]
    assert click["details"]["delivery"] == "dispatched"
    assert click["details"]["mode"] == "jev"
    assert click["details"]["remainingSteps"] == steps - 1
    assert [c["tool"] for c in desk.calls("click")] == ["click"]
    assert set(seen["afterTurn"]) == JEV_SET  # the turn ended: so did the handoff


def test_a_failed_jev_run_tells_the_model_its_cause(jev_factory: Any) -> None:
    """The run's error carries the daemon's cause (here the API kept answering 500), never the
    key; before, the model saw only ``jev_unavailable``."""
    desk: JevDesk = jev_factory([{"default": {"status": 500}}])
    env = node_env({"DESKHAND_SOCKET": str(desk.daemon.socket), "DH_SIM_RECORD": str(desk.record)})
    out = run_harness("jev_handoff", None, env)
    run = out["results"][0]
    assert run["isError"]
    assert "Jev run ended with an error (jev_unavailable)" in run["text"]
    assert "Cause: the Jev API kept failing (HTTP 500) after 2 attempt(s)" in run["text"]
    assert KEY not in run["text"]
    assert desk.calls("click") == []


__all__ = ["jev_factory"]
