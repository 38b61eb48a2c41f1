"""``run`` through the real daemon on the simulated desktop, with the fake Jev over real HTTP."""

from __future__ import annotations

import time
from typing import Any

from dhtest.jev_rig import BUTTON, CALC, JevDesk, pick, run_request

SUM = ["1", "2", "+", "3", "0", "2", "3", "2", "="]  # 12 + 30232
VERIFY = {"role": "text", "label_equals": "30,244"}


def test_twelve_plus_30232_completes_verified(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON[k]) for k in SUM])
    c = desk.client()
    reply, events = run_request(
        c, 1, app="Calculator", goal="Calculate 12 + 30232", max_steps=12, verify=VERIFY
    )
    result = reply["result"]
    assert (result["status"], result["reason"], result["verified"]) == ("done", "verified", True), (
        result
    )
    assert result["steps"] == 9 and result["outcome_unknown"] is False
    clicks = [int(call["arguments"]["element_index"]) for call in desk.calls("click")]
    assert len(clicks) == 9 and clicks[:3] == [CALC["1"], CALC["2"], CALC["+"]]
    assert clicks[3] == CALC["3"] + 1  # the expression line shifted the buttons by one
    decided = [e for e in events if e["kind"] == "progress" and e["phase"] == "decided"]
    assert len(decided) == 9 and all(e["gate"] == "proceed" for e in decided)
    assert events[-1]["phase"] == "finished"
    # Every Jev request carried the key, text only, and the candidates of the current tree.
    requests = desk.jev_requests()
    assert len(requests) == 9 and all(r["auth_ok"] for r in requests)
    body = requests[0]["body"]
    assert list(body) == ["model", "questions", "state"]
    assert list(body["questions"]) == ["target", "action", "done", "risk"]
    assert body["questions"]["target"]["criteria"][f"i{CALC['1']}"].endswith("ID: One")


def test_wrong_answers_end_honestly_without_a_false_done(jev_factory: Any) -> None:
    """Jev keeps pressing 7: the run uses its steps and says so; it never claims done."""
    desk: JevDesk = jev_factory([pick(CALC["7"])])
    reply, _ = run_request(
        desk.client(), 1, app="Calculator", goal="Calculate 12 + 30232", max_steps=3, verify=VERIFY
    )
    result = reply["result"]
    assert (result["status"], result["reason"]) == ("max_steps", "step_budget_exhausted")
    assert result["verified"] is False and result["steps"] == 3


def test_a_claim_of_done_is_not_done_when_the_tree_disagrees(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"], done=0.97)])
    reply, _ = run_request(desk.client(), 1, app="Calculator", goal="Calculate 1", verify=VERIFY)
    assert reply["result"]["status"] == "escalate"
    assert reply["result"]["reason"] == "verification_not_satisfied"
    assert desk.calls("click") == []
    # Without a verify spec it is Jev's claim, reported as such, never as done.
    reply, _ = run_request(desk.client("b"), 2, app="Calculator", goal="Calculate 1")
    assert (reply["result"]["status"], reply["result"]["verified"]) == ("model_done", False)


def test_dry_run_previews_and_dispatches_nothing(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"])])
    reply, _ = run_request(desk.client(), 1, app="Calculator", goal="Enter 1", dry_run=True)
    result = reply["result"]
    assert (result["status"], result["reason"]) == ("dry_run", "preview_only")
    assert result["planned"] == {"kind": "click_element", "index": CALC["1"]}
    assert desk.calls("click") == []


def test_low_confidence_hands_over_with_a_bounded_token(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"], confidence=0.35)])
    c = desk.client()
    reply, _ = run_request(c, 1, app="Calculator", goal="Enter 1", max_steps=3)
    result = reply["result"]
    assert (result["status"], result["reason"]) == ("needs_planner", "uncertain_target")
    handoff = result["handoff"]
    assert handoff["app"] == "Calculator" and handoff["remaining_steps"] == 3
    assert handoff["candidates"] and "instruction" in handoff and handoff["token"]
    token = handoff["token"]
    state = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    # Without the token: refused, nothing dispatched, nothing spent.
    refused = c.call("click", app="Calculator", state_id=state, element_index=CALC["1"])
    assert refused["error"]["code"] == "handoff_required"
    state = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    # A refused attempt with the token (bad index) spends nothing either.
    bad = c.call("click", app="Calculator", state_id=state, element_index=999, handoff=token)
    assert bad["error"]["code"] == "element_not_in_state"
    for _ in range(3):
        state = c.call("get_app_state", app="Calculator")["result"]["state_id"]
        ok = c.call(
            "click", app="Calculator", state_id=state, element_index=CALC["1"], handoff=token
        )
        assert ok["type"] == "result", ok
    state = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    spent = c.call(
        "click", app="Calculator", state_id=state, element_index=CALC["1"], handoff=token
    )
    assert spent["error"]["code"] == "handoff_required"
    assert len(desk.calls("click")) == 3


def test_the_handoff_dies_with_the_turn_and_a_mode_switch(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"], confidence=0.35)])
    c = desk.client()
    for ender in ("turn_end", "mode"):
        reply, _ = run_request(c, 10, app="Calculator", goal="Enter 1")
        token = reply["result"]["handoff"]["token"]
        if ender == "turn_end":
            assert c.call("turn_end")["type"] == "result"
        else:
            assert c.call("mode_set", mode="native")["result"]["mode"] == "native"
            assert c.call("mode_set", mode="jev")["result"]["mode"] == "jev"
        state = c.call("get_app_state", app="Calculator")["result"]["state_id"]
        r = c.call(
            "click", app="Calculator", state_id=state, element_index=CALC["1"], handoff=token
        )
        assert r["error"]["code"] == "handoff_required", ender


def test_risky_and_asking_choices_never_hand_over(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"], confidence=0.2, risk=0.5)])
    reply, _ = run_request(desk.client(), 1, app="Calculator", goal="Enter 1")
    assert (reply["result"]["status"], reply["result"]["reason"]) == ("confirm", "model_risk")
    assert reply["result"]["handoff"] is None


def test_cancel_while_deciding_dispatches_nothing(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([{"delay_s": 30}])
    c = desk.client()
    c.send_obj({"op": "run", "id": 5, "app": "Calculator", "goal": "Enter 1"})
    deadline = time.monotonic() + 10
    while not desk.jev_requests():
        assert time.monotonic() < deadline
        time.sleep(0.02)
    busy = c.call("mode_set", mode="native")
    assert busy["error"]["code"] == "mode_busy"
    c.send_obj({"op": "cancel", "id": 6, "request_id": 5})
    replies = {}
    while len(replies) < 2:
        msg = c.recv_obj()
        if msg["type"] != "event":
            replies[msg["id"]] = msg
    assert replies[5]["error"]["code"] == "cancelled"
    assert replies[5]["error"]["data"]["phase"] == "decide"
    assert desk.calls("click") == []
    assert c.call("mode_set", mode="native")["type"] == "result"  # no longer busy


def test_cancel_during_the_dispatch_is_outcome_unknown(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"])], scenario={"delay_ms": {"click": 3000}})
    c = desk.client()
    c.send_obj({"op": "run", "id": 5, "app": "Calculator", "goal": "Enter 1"})
    deadline = time.monotonic() + 10
    while not desk.calls("click"):
        assert time.monotonic() < deadline
        time.sleep(0.02)
    c.send_obj({"op": "cancel", "id": 6, "request_id": 5})
    replies = {}
    while len(replies) < 2:
        msg = c.recv_obj()
        if msg["type"] != "event":
            replies[msg["id"]] = msg
    assert replies[5]["error"]["code"] == "outcome_unknown"
    assert replies[5]["error"]["data"]["delivery"] == "unknown"
    assert len(desk.calls("click")) == 1  # never retried


def test_the_turn_budget_is_shared_and_only_a_new_turn_resets_it(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"])], config="[jev]\nturn_actions = 2\n")
    c = desk.client()
    first, _ = run_request(c, 1, app="Calculator", goal="Enter 1", max_steps=5)
    assert (first["result"]["status"], first["result"]["reason"]) == (
        "stop",
        "action_budget_exhausted",
    )
    assert first["result"]["steps"] == 2
    second, _ = run_request(c, 2, app="Calculator", goal="Enter 1")
    assert second["error"]["code"] == "action_budget_exhausted"
    assert c.call("mode_set", mode="native")["type"] == "result"
    assert c.call("mode_set", mode="jev")["type"] == "result"
    third, _ = run_request(c, 3, app="Calculator", goal="Enter 1")
    assert third["error"]["code"] == "action_budget_exhausted"  # a mode switch never resets it
    assert c.call("turn_end")["type"] == "result"
    fourth, _ = run_request(c, 4, app="Calculator", goal="Enter 1", max_steps=1)
    assert fourth["result"]["status"] == "max_steps"


def test_run_needs_jev_mode_and_the_allowlist(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(CALC["1"])])
    c = desk.client()
    assert c.call("mode_set", mode="native")["type"] == "result"
    native, _ = run_request(c, 1, app="Calculator", goal="Enter 1")
    assert native["error"]["code"] == "jev_mode_required"
    # Why, and the step in this client's words: an agent on the protocol sends ops.
    message = native["error"]["message"]
    assert message.startswith("this session was switched to native mode")
    assert "`mode_set` with mode jev" in message and "deskhandctl" not in message
    assert c.call("mode_set", mode="jev")["type"] == "result"
    other, _ = run_request(c, 2, app="TextEdit", goal="Type hello")
    assert other["error"]["code"] == "app_not_allowed"
    assert desk.jev_requests() == []
