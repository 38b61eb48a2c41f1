"""Consent where timing matters: concurrent selections, revocation in flight, answers that
arrive after a revocation, identities that change while the person decides, relaunches."""

from __future__ import annotations

import json
import time
from typing import Any

from dhtest.consent_rig import RESIGNED_CAL, Rig, closing


def wait_for(predicate: Any, timeout: float = 10.0) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.02)


def test_two_concurrent_selections_of_one_app_ask_once(rig_factory: Any) -> None:
    rig: Rig = rig_factory()
    agent = rig.person()
    first = agent.send("get_app_state", app="Calculator")
    second = agent.send("get_app_state", app="Calculator")
    question = agent.next_question()
    agent.answer(question, "once")
    replies = {}
    while len(replies) < 2:
        msg = agent.c.recv_obj()
        if closing(msg):
            continue  # the answered question closing, not a second one
        assert msg["type"] != "event", f"a second question: {msg}"
        if msg.get("id") in (first, second):
            replies[msg["id"]] = msg
    assert all(r["type"] == "result" for r in replies.values()), replies
    assert len(agent.questions) == 1
    assert len(rig.calls("get_app_state")) == 2


def test_revocation_cancels_the_action_in_flight_and_retires_its_states(rig_factory: Any) -> None:
    rig: Rig = rig_factory({"delay_ms": {"click": 3000}})
    agent = rig.person()
    obs = agent.request("get_app_state", ["always"], app="Calculator")["result"]
    other = rig.person("other")  # another task holding a state from the same backend
    held = other.request("get_app_state", app="Calculator")["result"]["state_id"]
    pid_before = rig.backend_pid()
    click = agent.send("click", app="Calculator", state_id=obs["state_id"], element_index=1)
    wait_for(lambda: len(rig.calls("click")) == 1)
    revoked = rig.admin().call("grants_revoke", app="Calculator")["result"]
    assert revoked["cancelled"] == 1 and revoked["grants"][0]["revoked_at"]
    reply = agent.wait_reply(click)
    assert reply["error"]["code"] == "outcome_unknown"
    assert reply["error"]["data"]["delivery"] == "unknown"
    assert rig.backend_pid() is None  # the connection is closed
    stale = other.request("click", app="Calculator", state_id=held, element_index=1)
    assert stale["error"]["code"] == "state_invalidated", stale
    # Re-authorization: a fresh backend process, never the old one.
    assert rig.admin().call("grants_restore", app="Calculator")["type"] == "result"
    again = agent.request("get_app_state", app="Calculator")
    assert again["type"] == "result"
    pid_after = rig.backend_pid()
    assert pid_before is not None and pid_after is not None and pid_after != pid_before
    assert len(rig.calls("click")) == 1  # never retried


def test_an_answer_after_a_revocation_is_void(rig_factory: Any) -> None:
    rig: Rig = rig_factory()
    agent = rig.person()
    assert agent.request("get_app_state", ["always"], app="Calculator")["type"] == "result"
    asker = rig.person("second-task")
    rid = asker.send("get_app_state", app="TextEdit")
    question = asker.next_question()
    assert rig.admin().call("grants_revoke", app="Calculator")["type"] == "result"
    asker.answer(question, "once")
    reply = asker.wait_reply(rid)
    assert reply["error"]["code"] == "consent_denied"
    assert reply["error"]["data"]["reason"] == "revoked_meanwhile"
    assert not [c for c in rig.calls("get_app_state") if c["arguments"]["app"] == "TextEdit"]


def test_always_is_not_saved_when_a_revocation_began_first(rig_factory: Any) -> None:
    """The revoked app is asked about again; an "always" given to a question that was open
    when the revocation happened must not bring the grant back."""
    rig: Rig = rig_factory()
    agent = rig.person()
    assert agent.request("get_app_state", ["always"], app="Calculator")["type"] == "result"
    assert rig.admin().call("grants_revoke", app="Calculator")["type"] == "result"
    asker = rig.person("second-task")
    rid = asker.send("get_app_state", app="Calendar")
    question = asker.next_question()
    assert rig.admin().call("grants_revoke", app="Calculator")["error"]["code"] == "grant_not_found"
    assert rig.admin().call("grants_restore", app="Calculator")["type"] == "result"
    assert rig.admin().call("grants_revoke", app="Calculator")["type"] == "result"
    asker.answer(question, "always")
    assert asker.wait_reply(rid)["error"]["data"]["reason"] == "revoked_meanwhile"
    assert [g["path"] for g in rig.saved() if g["revoked_at"] is None] == []


def test_cold_selection_rechecks_the_program_before_launching(rig_factory: Any) -> None:
    """Calendar is not running: the decision guards its launch, and a program swapped while
    the person decided is not launched."""
    rig: Rig = rig_factory()
    agent = rig.person()
    rid = agent.send("get_app_state", app="Calendar")
    question = agent.next_question()
    rig.change("Calendar", requirement=RESIGNED_CAL, signer="EVIL123456")
    agent.answer(question, "once")
    reply = agent.wait_reply(rid)
    assert reply["error"]["code"] == "identity_changed", reply
    assert rig.calls("get_app_state") == []  # nothing launched
    # Asked again, the person now sees the new signer and may allow it.
    rid = agent.send("get_app_state", app="Calendar")
    question = agent.next_question()
    assert "EVIL123456" in question["text"]
    agent.answer(question, "once")
    assert agent.wait_reply(rid)["type"] == "result"


def test_a_relaunched_app_under_a_task_grant_is_asked_about_again(rig_factory: Any) -> None:
    rig: Rig = rig_factory({"relaunch": [{"tool": "get_app_state", "call": 2}]})
    agent = rig.person()
    first = agent.request("get_app_state", ["once"], app="TextEdit")
    assert "pid 2211)" in first["result"]["text"]
    rid = agent.send("get_app_state", app="TextEdit")
    question = agent.next_question()
    assert "restarted" in question["text"]
    agent.answer(question, "deny")
    reply = agent.wait_reply(rid)
    assert reply["error"]["code"] == "consent_denied"
    assert reply["error"]["data"]["withheld"] is True  # observed, but not handed over
    # The state from before the relaunch is gone too.
    click = agent.request(
        "click", app="TextEdit", state_id=first["result"]["state_id"], element_index=1
    )
    assert click["error"]["code"].startswith("state_")


def test_actions_are_gated_too(rig_factory: Any) -> None:
    """Consent is checked at every dispatch, not only on observation: a refusal recorded
    after the observation (a new task) stops the action before the backend."""
    rig: Rig = rig_factory()
    agent = rig.person()
    obs = agent.request("get_app_state", ["once"], app="Calculator")["result"]
    rig.change("Calculator", requirement=RESIGNED_CAL.replace("iCal", "calculator"))
    reply = agent.request(
        "click", ["deny"], app="Calculator", state_id=obs["state_id"], element_index=1
    )
    assert reply["error"]["code"] == "consent_denied"
    assert rig.calls("click") == []


def test_an_unsafe_grants_file_refuses_and_is_never_overwritten(rig_factory: Any) -> None:
    rig: Rig = rig_factory()
    agent = rig.person()
    assert agent.request("get_app_state", ["always"], app="Calculator")["type"] == "result"
    rig.grants_path.write_text('{"version": 1, "grants": [')  # corrupt
    corrupt = rig.grants_path.read_bytes()
    reply = agent.request("get_app_state", app="TextEdit")
    assert reply["error"]["code"] == "grants_file_invalid"
    assert str(rig.grants_path) in reply["error"]["message"]
    listed = rig.admin().call("grants_list")
    assert listed["error"]["code"] == "grants_file_invalid"
    assert rig.grants_path.read_bytes() == corrupt
    rig.grants_path.write_text(json.dumps({"version": 1, "grants": []}))
    rig.grants_path.chmod(0o644)  # readable by others: refused too
    assert agent.request("get_app_state", app="Calculator")["error"]["code"] == (
        "grants_file_invalid"
    )
    assert oct(rig.grants_path.stat().st_mode & 0o777) == "0o644"
