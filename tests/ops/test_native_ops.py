"""Native ops called directly with a request context, on real services and the simulator.

The same stories as tests/native (observe, act, stateIds, allowlist, approvals, the lock,
modes, sessions, cancel), told to the ops in this process instead of through a spawned daemon.
The simulator is a real child process, so trio's autojump clock cannot run these tests (it
jumps while the daemon waits for the child and the backend's timeouts fire at once); a test
that needs time to pass uses ``mock_clock`` and jumps it by hand.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable

import pytest
import trio
import trio.testing
from dhtest.inproc import FakeClient, RequestWasCancelled, open_desk

from deskhand_d.errors import DeskhandError
from deskhand_d.protocol import (
    ActionDone,
    AllowedApps,
    AppsAdd,
    Cancel,
    Click,
    Done,
    GetAppState,
    LockState,
    ModeGet,
    ModeSet,
    ModeState,
    Observation,
    PressKey,
    SessionClose,
    Status,
    StatusResult,
    Stop,
    TurnEnd,
    Unlock,
)

CALC = {"preapproved": ["Calculator"]}


def display(text: str) -> str:
    """The Calculator's result: the last static text before the keypad buttons."""
    texts = [x.split(" text ", 1)[1] for x in text.splitlines() if re.match(r"^\t*\d+ text ", x)]
    return texts[-1].strip("\u200e ")


async def until(condition: Callable[[], bool], what: str, limit_s: float = 10.0) -> None:
    """Let the daemon's tasks run until ``condition`` holds (for facts another process
    decides, such as the simulator's reply; bounded, never a fixed sleep)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        assert time.monotonic() < deadline, f"still waiting for {what}"
        await trio.testing.wait_all_tasks_blocked(cushion=0.005)


async def observe(c: FakeClient, app: str = "Calculator") -> Observation:
    obs = await c.call(GetAppState(id=c.next_id(), app=app))
    assert isinstance(obs, Observation)
    return obs


async def refused(call: object, code: str, delivery: str | None = "refused") -> DeskhandError:
    """Await ``call`` and check it raised ``code`` with this delivery."""
    with pytest.raises(DeskhandError) as info:
        await call  # type: ignore[misc]
    assert info.value.code == code, info.value.message
    assert info.value.delivery == delivery
    return info.value


async def test_observe_press_and_observe_again_shows_the_sum() -> None:
    """Observe Calculator, press 6 + 7 = with each returned stateId: the display shows 13."""
    async with open_desk(CALC) as desk:
        c = await desk.client("t1")
        obs = await observe(c)
        assert len(obs.state_id) == 32 and obs.screenshot and obs.app == "Calculator"
        assert obs.text.startswith("[Simulated desktop")  # the simulator's note comes first
        sid = obs.state_id
        for key in ("6", "plus", "7", "Return"):
            r = await c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key=key))
            assert isinstance(r, ActionDone)
            assert (r.delivery, r.ok, r.tool) == ("dispatched", True, "press_key")
            assert r.state_id  # a complete tree came back: an action-returned state
            sid = r.state_id
        assert display((await observe(c)).text) == "13"
        assert [x["tool"] for x in desk.calls()] == ["get_app_state"] + ["press_key"] * 4 + [
            "get_app_state"
        ]


async def test_click_by_index_returns_a_state_that_refuses_coordinates() -> None:
    """A click answered with a tree and a screenshot passes both on; its stateId came from an
    action, so coordinates with it are refused locally."""
    async with open_desk(CALC) as desk:
        c = await desk.client()
        sid = (await observe(c)).state_id
        r = await c.call(Click(id=c.next_id(), app="Calculator", state_id=sid, element_index=15))
        assert isinstance(r, ActionDone) and r.ok and r.delivery == "dispatched"
        assert r.screenshot_mime == "image/jpeg" and r.screenshot is not None
        assert r.screenshot.startswith(b"\xff\xd8\xff") and r.state_id
        assert r.handoff_steps_left is None  # native mode: no planner's handoff to count
        before = len(desk.calls())
        await refused(
            c.call(Click(id=c.next_id(), app="Calculator", state_id=r.state_id, x=10, y=10)),
            "coordinates_need_screenshot",
        )
        assert len(desk.calls()) == before


async def test_a_state_id_works_once_and_unknown_ones_send_nothing() -> None:
    """Replaying a consumed stateId, or using one never minted, is refused with no traffic."""
    async with open_desk(CALC) as desk:
        c = await desk.client()
        sid = (await observe(c)).state_id
        r = await c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="5"))
        assert isinstance(r, ActionDone) and r.delivery == "dispatched"
        before = len(desk.calls())
        await refused(
            c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="5")),
            "state_consumed",
        )
        await refused(
            c.call(Click(id=c.next_id(), app="Calculator", state_id="f" * 32, element_index=9)),
            "state_unknown",
        )
        assert len(desk.calls()) == before


async def test_a_state_id_expires_after_60_seconds(mock_clock: trio.testing.MockClock) -> None:
    """At 60 s a stateId still works; past it, it is refused as expired and nothing is sent
    (time moves only when the test jumps the clock)."""
    async with open_desk(CALC) as desk:
        c = await desk.client()
        sid = (await observe(c)).state_id
        mock_clock.jump(60.0)
        r = await c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="1"))
        assert isinstance(r, ActionDone) and r.delivery == "dispatched"
        sid = (await observe(c)).state_id
        mock_clock.jump(60.5)
        before = len(desk.calls())
        await refused(
            c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="1")),
            "state_expired",
        )
        assert len(desk.calls()) == before


async def test_state_rules_wrong_app_missing_element_and_turn_end() -> None:
    """A state of another app, an index not in the observation, a state from before turn_end:
    each refused before any traffic."""
    async with open_desk(
        {"preapproved": ["Calculator", "TextEdit"]}, DESKHAND_ALLOWED_APPS="Calculator,TextEdit"
    ) as desk:
        c = await desk.client()
        sid = (await observe(c)).state_id
        before = len(desk.calls())
        await refused(
            c.call(PressKey(id=c.next_id(), app="TextEdit", state_id=sid, key="a")),
            "state_wrong_app",
        )
        sid = (await observe(c)).state_id
        before = len(desk.calls())
        await refused(
            c.call(Click(id=c.next_id(), app="Calculator", state_id=sid, element_index=999)),
            "element_not_in_state",
        )
        sid = (await observe(c)).state_id
        ended = await c.call(TurnEnd(id=c.next_id()))
        assert isinstance(ended, Done) and ended.detail == "turn 2"
        before = len(desk.calls())
        await refused(
            c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="1")),
            "state_invalidated",
        )
        assert len(desk.calls()) == before


async def test_an_app_off_the_allowlist_never_reaches_the_backend() -> None:
    """TextEdit is not allowed by default: refused with zero calls; apps_add allows it."""
    async with open_desk({"preapproved": ["TextEdit"]}) as desk:
        c = await desk.client()
        err = await refused(c.call(GetAppState(id=c.next_id(), app="TextEdit")), "app_not_allowed")
        assert err.reply_data() == {"app": "TextEdit", "delivery": "refused"}
        assert desk.calls() == []
        added = await c.call(AppsAdd(id=c.next_id(), app="TextEdit"))
        assert isinstance(added, AllowedApps) and added.added is True
        assert "TextEdit" in added.apps and added.in_apps_file == ["TextEdit"]
        assert (await observe(c, "TextEdit")).app == "TextEdit"
        assert [x["tool"] for x in desk.calls()] == ["get_app_state"]


@pytest.mark.parametrize(("choice", "code"), [("accept", None), ("decline", "approval_declined")])
async def test_the_backends_approval_prompt_goes_to_the_person(
    choice: str, code: str | None
) -> None:
    """Sky's prompt reaches the requesting client as a question; its answer decides."""
    async with open_desk() as desk:
        c = await desk.client(answers=True)
        rid = c.next_id()
        async with trio.open_nursery() as nursery:
            pending = c.start(nursery, GetAppState(id=rid, app="Calculator"))
            question = await c.question()
            assert question.text == "Allow ChatGPT to use Calculator?"
            assert (question.request_id, question.question) == (rid, "backend_approval")
            assert question.choices == ["accept", "decline"] and question.app == "Calculator"
            answered = await c.answer_question(question, choice)  # type: ignore[arg-type]
            assert isinstance(answered, Done) and answered.detail == "answered"
            if code is None:
                obs = await pending.wait()
                assert isinstance(obs, Observation) and obs.approval_reason == "user_accepted"
            else:
                with pytest.raises(DeskhandError) as info:
                    await pending.wait()
                assert info.value.code == code
        assert [a["answer"] for a in desk.records("elicitation_answer")] == [choice]


async def test_a_client_that_cannot_answer_gets_the_prompt_cancelled() -> None:
    """No one to ask: the backend's prompt is cancelled, never accepted."""
    async with open_desk() as desk:
        c = await desk.client(answers=False)
        err = await refused(
            c.call(GetAppState(id=c.next_id(), app="Calculator")),
            "approval_cancelled",
        )
        assert err.data["approval_reason"] == "handler_unavailable"
        assert c.events == []
        assert [a["answer"] for a in desk.records("elicitation_answer")] == ["cancel"]


async def test_leaving_while_a_question_is_open_answers_cancel() -> None:
    """The client goes while the person decides: the prompt ends in cancel, never accept."""
    async with open_desk() as desk:
        c = await desk.client(answers=True)
        async with trio.open_nursery() as nursery:
            pending = c.start(nursery, GetAppState(id=c.next_id(), app="Calculator"))
            await c.question()
            c.leave()
            with pytest.raises(RequestWasCancelled):
                await pending.wait()
        await until(lambda: bool(desk.records("elicitation_answer")), "the simulator's answer")
        assert [a["answer"] for a in desk.records("elicitation_answer")] == ["cancel"]


async def test_stop_during_an_action_then_locked_until_unlock() -> None:
    """Stop while a call is in the backend (held there by an open approval question) and
    another waits in the queue: the first is outcome-unknown, the queued one is cancelled
    unsent, the backend is closed and every op is locked until unlock."""
    async with open_desk() as desk:
        a = await desk.client("a", answers=True)
        b = await desk.client("b", answers=True)
        boss = await desk.client("boss", name="boss")
        async with trio.open_nursery() as nursery:
            held = a.start(nursery, GetAppState(id=a.next_id(), app="Calculator"))
            await a.question()  # a's call is in the backend now, waiting for the person
            waiting = b.start(nursery, GetAppState(id=b.next_id(), app="Calculator"))
            await until(lambda: desk.services.status().queue_depth == 1, "b in the queue")
            assert "session a" in desk.services.status().desktop_holder
            stopped = await boss.call(Stop(id=boss.next_id()))
            assert isinstance(stopped, LockState)
            assert stopped.locked is True and stopped.cancelled == 2 and "boss" in stopped.by
            with pytest.raises(DeskhandError) as first:
                await held.wait()
            assert (first.value.code, first.value.delivery) == ("outcome_unknown", "unknown")
            with pytest.raises(DeskhandError) as second:
                await waiting.wait()
            assert (second.value.code, second.value.delivery) == ("cancelled", "refused")
        assert len(desk.calls("get_app_state")) == 1  # b's call never reached the backend
        status = await boss.call(Status(id=boss.next_id()))
        assert isinstance(status, StatusResult)
        assert status.backend is not None and status.backend.running_pid is None
        assert "boss" in status.locked_by
        err = await refused(a.call(GetAppState(id=a.next_id(), app="Calculator")), "locked")
        assert "boss" in err.data["by"]
        unlocked = await boss.call(Unlock(id=boss.next_id()))
        assert isinstance(unlocked, LockState) and unlocked.locked is False
        c = await desk.client("c", answers=True)
        async with trio.open_nursery() as nursery:
            again = c.start(nursery, GetAppState(id=c.next_id(), app="Calculator"))
            await c.answer_question(await c.question(), "accept")
            assert isinstance(await again.wait(), Observation)


async def test_cancel_of_a_queued_request_sends_nothing() -> None:
    """A request waiting in the queue, cancelled by its client, never reaches the backend;
    cancelling a request that is not running is a bad request."""
    async with open_desk() as desk:
        a = await desk.client("a", answers=True)
        b = await desk.client("b")
        async with trio.open_nursery() as nursery:
            held = a.start(nursery, GetAppState(id=a.next_id(), app="Calculator"))
            question = await a.question()
            rid = b.next_id()
            queued = b.start(nursery, GetAppState(id=rid, app="Calculator"))
            await until(lambda: desk.services.status().queue_depth == 1, "b in the queue")
            done = await b.call(Cancel(id=b.next_id(), request_id=rid))
            assert isinstance(done, Done) and done.detail == f"cancelled request {rid}"
            with pytest.raises(RequestWasCancelled) as info:
                await queued.wait()
            report = info.value.report  # it never left the queue: nothing was sent
            assert report is not None
            assert (report.code, report.delivery) == ("cancelled", "refused")
            await a.answer_question(question, "accept")
            assert isinstance(await held.wait(), Observation)
        assert desk.services.status().queue_depth == 0  # the worker skipped the cancelled job
        await refused(b.call(Cancel(id=b.next_id(), request_id=rid)), "bad_request", None)
        assert len(desk.calls("get_app_state")) == 1


async def test_jev_mode_without_a_key_stays_native_and_sends_nothing() -> None:
    """With jev as the default mode and no key, sessions are native (missing_jev_key) and the
    detail says what to set; mode_set jev says the same; nothing reaches the backend."""
    async with open_desk(CALC, DESKHAND_MODE="jev") as desk:
        c = await desk.client("m")
        got = await c.call(ModeGet(id=c.next_id()))
        assert isinstance(got, ModeState)
        assert (got.mode, got.reason) == ("native", "missing_jev_key")
        assert "TYPESAFE_API_KEY" in got.detail and "`mode_set` with mode jev" in got.detail
        asked = await c.call(ModeSet(id=c.next_id(), mode="jev"))
        assert isinstance(asked, ModeState)
        assert (asked.mode, asked.reason) == ("native", "missing_jev_key")
        assert desk.calls() == []


async def test_jev_mode_with_a_key_needs_a_handoff_for_native_actions() -> None:
    """In jev mode (key present) a native action without Jev's handoff is refused unsent;
    mode_set native lifts that."""
    async with open_desk(CALC, DESKHAND_MODE="jev", TYPESAFE_API_KEY="sk-test-0000") as desk:
        c = await desk.client("m")
        got = await c.call(ModeGet(id=c.next_id()))
        assert isinstance(got, ModeState) and (got.mode, got.reason) == ("jev", "")
        sid = (await observe(c)).state_id
        before = len(desk.calls())
        with pytest.raises(DeskhandError) as info:
            await c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="1"))
        assert info.value.code == "handoff_required" and info.value.delivery == "refused"
        assert len(desk.calls()) == before
        native = await c.call(ModeSet(id=c.next_id(), mode="native"))
        assert isinstance(native, ModeState) and native.mode == "native"
        sid = (await observe(c)).state_id
        r = await c.call(PressKey(id=c.next_id(), app="Calculator", state_id=sid, key="1"))
        assert isinstance(r, ActionDone) and r.delivery == "dispatched"


async def test_session_close_ends_it_for_every_connection_now() -> None:
    """session_close retires the session's states and detaches every connection on it; a new
    hello for the same name gets a new session, where the old stateId is unknown."""
    async with open_desk(CALC) as desk:
        c = await desk.client("closing")
        other = await desk.client("closing")
        assert other.session is c.session
        sid = (await observe(c)).state_id
        done = await c.call(SessionClose(id=c.next_id()))
        assert (
            isinstance(done, Done)
            and done.detail == "session closed; 0 queued request(s) cancelled"
        )
        assert c.session is None and other.session is None
        await refused(c.call(GetAppState(id=c.next_id(), app="Calculator")), "bad_request", None)
        await refused(
            other.call(GetAppState(id=other.next_id(), app="Calculator")), "bad_request", None
        )
        again = await desk.client("closing")
        await refused(
            again.call(PressKey(id=again.next_id(), app="Calculator", state_id=sid, key="1")),
            "state_unknown",
        )
        assert [x["tool"] for x in desk.calls()] == ["get_app_state"]


async def test_a_named_session_outlives_its_connection_for_the_grace_period(
    mock_clock: trio.testing.MockClock,
) -> None:
    """A named session keeps its stateId across connections; once its client has been gone
    past session_grace_s it ends (the clock is jumped, nobody sleeps)."""
    async with open_desk(CALC, config_text="[native]\nsession_grace_s = 1.0\n") as desk:
        c = await desk.client("keep")
        sid = (await observe(c)).state_id
        c.leave()
        again = await desk.client("keep")
        r = await again.call(PressKey(id=again.next_id(), app="Calculator", state_id=sid, key="1"))
        assert isinstance(r, ActionDone) and r.delivery == "dispatched"
        sid = (await observe(again)).state_id
        again.leave()
        assert len(desk.services.sessions.sessions) == 1
        mock_clock.jump(2.5)
        await trio.testing.wait_all_tasks_blocked()  # the expiry task has looked
        assert desk.services.sessions.sessions == {}
        later = await desk.client("keep")
        await refused(
            later.call(PressKey(id=later.next_id(), app="Calculator", state_id=sid, key="1")),
            "state_unknown",
        )
