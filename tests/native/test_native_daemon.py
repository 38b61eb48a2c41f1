"""Native mode through the real daemon, socket and simulator (a real child process)."""

from __future__ import annotations

import base64
import json
import re
import threading
import time
from typing import Any

import pytest
from dhtest.desk import wait_status
from dhtest.wsclient import SyncClient


def _display(text: str) -> str:
    """The Calculator's result: the last static text before the keypad buttons."""
    texts = [x.split(" text ", 1)[1] for x in text.splitlines() if re.match(r"^\t*\d+ text ", x)]
    return texts[-1].strip("\u200e ")


def test_six_plus_seven_is_thirteen(desk_factory: Any) -> None:
    """Observe Calculator, press 6 + 7 =, observe again: the display shows 13."""
    desk = desk_factory({"preapproved": ["Calculator"]})
    c = desk.client("t1")
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    for key in ("6", "plus", "7", "Return"):
        r = c.call("press_key", app="Calculator", state_id=sid, key=key)["result"]
        assert r["delivery"] == "dispatched" and r["ok"] is True
        sid = r["state_id"]  # a complete tree came back: an action-returned state
        assert sid
    obs = c.call("get_app_state", app="Calculator")["result"]
    assert _display(obs["text"]) == "13"
    assert obs["screenshot"]


def test_consumed_state_replay_sends_nothing(desk_factory: Any) -> None:
    """Replaying a consumed stateId is refused with no backend traffic."""
    desk = desk_factory({"preapproved": ["Calculator"]})
    c = desk.client()
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    assert c.call("press_key", app="Calculator", state_id=sid, key="5")["type"] == "result"
    before = len(desk.calls())
    r = c.call("press_key", app="Calculator", state_id=sid, key="5")
    assert r["error"]["code"] == "state_consumed"
    r = c.call("click", app="Calculator", state_id="f" * 32, element_index=9)
    assert r["error"]["code"] == "state_unknown"
    assert len(desk.calls()) == before


def test_every_state_rule_is_decided_locally(desk_factory: Any) -> None:
    """Wrong app, missing element, coordinates without screenshot, bad click target: no traffic."""
    desk = desk_factory(
        {"preapproved": ["Calculator", "TextEdit"]}, DESKHAND_ALLOWED_APPS="Calculator,TextEdit"
    )
    c = desk.client()
    obs = c.call("get_app_state", app="Calculator")["result"]
    before = len(desk.calls())
    assert (
        c.call("press_key", app="TextEdit", state_id=obs["state_id"], key="a")["error"]["code"]
        == "state_wrong_app"
    )
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    before = len(desk.calls())
    assert (
        c.call("click", app="Calculator", state_id=sid, element_index=999)["error"]["code"]
        == "element_not_in_state"
    )
    sid2 = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    r = c.call("press_key", app="Calculator", state_id=sid2, key="1")["result"]
    returned = r["state_id"]
    before = len(desk.calls())
    assert (
        c.call("click", app="Calculator", state_id=returned, x=10, y=10)["error"]["code"]
        == "coordinates_need_screenshot"
    )
    assert (
        c.call("click", app="Calculator", state_id=sid2, element_index=1, x=1, y=1)["error"]["code"]
        == "bad_request"
    )
    assert len(desk.calls()) == before
    sid3 = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    assert c.call("turn_end")["type"] == "result"
    assert (
        c.call("press_key", app="Calculator", state_id=sid3, key="1")["error"]["code"]
        == "state_invalidated"
    )


def test_not_allowed_app_never_reaches_the_backend(desk_factory: Any) -> None:
    """A non-allowed app is refused with zero backend calls; apps add makes it allowed."""
    desk = desk_factory({"preapproved": ["TextEdit"]})
    c = desk.client()
    r = c.call("get_app_state", app="TextEdit")
    assert r["error"]["code"] == "app_not_allowed" and r["error"]["data"]["delivery"] == "refused"
    assert desk.calls() == []
    added = c.call("apps_add", app="TextEdit")["result"]
    assert added["added"] is True and "TextEdit" in added["apps"]
    assert c.call("get_app_state", app="TextEdit")["type"] == "result"


def _answer_questions(
    c: SyncClient, choice: str | None, reply_id: int
) -> tuple[list[dict[str, Any]], dict[str, Any]]:
    """Read until the reply to request ``reply_id``; answer each question with ``choice``."""
    questions: list[dict[str, Any]] = []
    while True:
        msg = c.recv_obj()
        if msg["type"] == "event" and msg["event"]["kind"] == "question":
            questions.append(msg["event"])
            if choice is not None:
                c.send_obj(
                    {
                        "op": "answer",
                        "id": 900 + len(questions),
                        "question_id": msg["event"]["id"],
                        "choice": choice,
                    }
                )
            continue
        if msg.get("id") == reply_id:
            return questions, msg


@pytest.mark.parametrize(("choice", "code"), [("accept", None), ("decline", "approval_declined")])
def test_backend_approval_goes_to_the_person(
    desk_factory: Any, choice: str, code: str | None
) -> None:
    """Sky's approval prompt reaches the requesting client as a question; its answer decides."""
    desk = desk_factory()
    c = desk.client(answers=True)
    c.send_obj({"op": "get_app_state", "id": 50, "app": "Calculator"})
    questions, reply = _answer_questions(c, choice, 50)
    assert [q["text"] for q in questions] == ["Allow ChatGPT to use Calculator?"]
    assert questions[0]["request_id"] == 50 and questions[0]["question"] == "backend_approval"
    if code is None:
        assert reply["type"] == "result" and reply["result"]["approval_reason"] == "user_accepted"
    else:
        assert reply["error"]["code"] == code


def test_client_without_question_capability_gets_cancel(desk_factory: Any) -> None:
    """No one to ask: the prompt is cancelled, never accepted."""
    desk = desk_factory()
    c = desk.client(answers=False)
    r = c.call("get_app_state", app="Calculator")
    assert r["error"]["code"] == "approval_cancelled"
    assert r["error"]["data"]["approval_reason"] == "handler_unavailable"


def test_disconnect_while_question_pending_cancels(desk_factory: Any) -> None:
    """The client leaves while the person decides: the prompt ends in cancel, never accept."""
    desk = desk_factory()
    c = desk.client(answers=True)
    c.send_obj({"op": "get_app_state", "id": 60, "app": "Calculator"})
    msg = c.recv_obj()
    assert msg["event"]["kind"] == "question"
    c.sock.close()
    other = desk.client(answers=False)
    deadline = time.monotonic() + 10  # bounded by the outcome, not by machine speed
    while time.monotonic() < deadline:
        answers = [
            json.loads(x)
            for x in desk.record.read_text().splitlines()
            if '"elicitation_answer"' in x
        ]
        if answers:
            break
        other.call("ping")
        time.sleep(0.02)
    assert [a["answer"] for a in answers] == ["cancel"]


def test_stop_during_inflight_action(desk_factory: Any) -> None:
    """Stop mid-action: that action is unknown, queued ones cancelled, then locked until unlock."""
    desk = desk_factory({"preapproved": ["Calculator"], "delay_ms": {"press_key": 1500}})
    a = desk.client("a")
    b = desk.client("b")
    sid_a = a.call("get_app_state", app="Calculator")["result"]["state_id"]
    sid_b = b.call("get_app_state", app="Calculator")["result"]["state_id"]
    boss = desk.client("boss", name="boss")
    a.send_obj({"op": "press_key", "id": 70, "app": "Calculator", "state_id": sid_a, "key": "1"})
    # a's action holds the desktop, then b's waits behind it: the order is certain
    holding = wait_status(boss, lambda s: "press_key" in s["desktop_holder"])
    assert "session a" in holding["desktop_holder"]
    b.send_obj({"op": "press_key", "id": 71, "app": "Calculator", "state_id": sid_b, "key": "2"})
    wait_status(boss, lambda s: s["queue_depth"] == 1)
    stopped = boss.call("stop")["result"]
    assert stopped["locked"] is True and stopped["cancelled"] == 2
    ra, rb = a.recv_obj(), b.recv_obj()
    assert ra["error"]["code"] == "outcome_unknown" and ra["error"]["data"]["delivery"] == "unknown"
    assert rb["error"]["code"] == "cancelled"
    assert a.call("get_app_state", app="Calculator")["error"]["code"] == "locked"
    status = boss.call("status")["result"]
    assert "boss" in status["locked_by"]
    assert status["backend"]["running_pid"] is None  # the backend connection was closed
    assert boss.call("unlock")["result"]["locked"] is False
    assert a.call("get_app_state", app="Calculator")["type"] == "result"


def test_sessions_hammering_never_overlap_backend_calls(desk_factory: Any) -> None:
    """Eight sessions act at once: the backend never has two calls in flight; all get one reply."""
    desk = desk_factory({"preapproved": ["Calculator"]})
    errors: list[str] = []
    counts: list[int] = []

    def worker(i: int) -> None:
        c = desk.client(f"s{i}")
        n = 0
        for _ in range(8):
            r = c.call("get_app_state", app="Calculator")
            if r["type"] != "result":
                errors.append(str(r))
                continue
            r2 = c.call(
                "press_key", app="Calculator", state_id=r["result"]["state_id"], key=str(i % 10)
            )
            n += 2 if r2["type"] == "result" else 1
            if r2["type"] != "result":
                errors.append(str(r2))
        counts.append(n)
        c.close()

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(60)
    assert errors == [] and sum(counts) == 8 * 16
    calls = desk.calls()
    assert len(calls) == 8 * 16 and max(c["in_flight"] for c in calls) == 1


def test_an_action_passes_on_the_backends_screenshot(desk_factory: Any) -> None:
    """A click the backend answers with a tree and a screenshot reaches the caller with both;
    the action-returned stateId still counts as one without a screenshot (Sky's rule)."""
    desk = desk_factory({"preapproved": ["Calculator"]})
    c = desk.client()
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    r = c.call("click", app="Calculator", state_id=sid, element_index=15)["result"]
    assert r["ok"] is True and r["screenshot_mime"] == "image/jpeg"
    assert base64.b64decode(r["screenshot"]).startswith(b"\xff\xd8\xff")
    refused = c.call("click", app="Calculator", state_id=r["state_id"], x=10, y=10)
    assert refused["error"]["code"] == "coordinates_need_screenshot"
    keyed = c.call("press_key", app="Calculator", state_id=sid, key="1")
    assert keyed["error"]["code"] == "state_consumed"
