"""The ``run`` op in-process: real services on the simulator, Jev played by the scripted fake
Jev server (real HTTP on loopback, served by this test's own trio run)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

import pytest
import trio
from dhtest.inproc import Desk, FakeClient, RequestWasCancelled, open_desk
from dhtest.jev_rig import BUTTON, CALC, KEY, pick
from peers.fake_jev import serve_fake_jev

from deskhand_d.errors import DeskhandError
from deskhand_d.protocol import (
    ActionDone,
    Answer,
    Cancel,
    Click,
    GetAppState,
    ModeSet,
    ModeState,
    Observation,
    Progress,
    QuestionList,
    QuestionsWatch,
    Run,
    RunResult,
    VerifySpec,
)

SUM = ["1", "2", "+", "3", "0", "2", "3", "2", "="]  # 12 + 30232
VERIFY = VerifySpec(role="text", label_equals="30,244")


@dataclass
class JevDesk:
    desk: Desk
    jev: list[dict[str, Any]]  # every request the fake Jev received
    asked: trio.Event  # set at the fake's first request


@asynccontextmanager
async def jev_desk(script: list[dict[str, Any]]) -> AsyncIterator[JevDesk]:
    """Services in jev mode with a key, pointed at a fake Jev that follows ``script``."""
    record: list[dict[str, Any]] = []
    asked = trio.Event()
    async with trio.open_nursery() as nursery:
        port = await nursery.start(
            lambda task_status: serve_fake_jev(
                [{"expect_key": KEY}, *script],
                record,
                on_record=lambda row: asked.set(),
                task_status=task_status,
            )
        )
        async with open_desk(
            {"preapproved": ["*"]},
            DESKHAND_MODE="jev",
            TYPESAFE_API_KEY=KEY,
            DESKHAND_JEV_URL=f"http://127.0.0.1:{port}/v1/systemone",
        ) as desk:
            yield JevDesk(desk, record, asked)
        nursery.cancel_scope.cancel()


def progress(c: FakeClient) -> list[Progress]:
    return [e for e in c.events if isinstance(e, Progress)]


async def test_twelve_plus_30232_completes_verified() -> None:
    """Nine picks press 12 + 30232 =; the display verifies; every step was reported."""
    async with jev_desk([pick(BUTTON[k]) for k in SUM]) as j:  # type: ignore[arg-type]  # pick also takes a description
        c = await j.desk.client("agent")
        rid = c.next_id()
        result = await c.call(
            Run(id=rid, app="Calculator", goal="Calculate 12 + 30232", max_steps=12, verify=VERIFY)
        )
        assert isinstance(result, RunResult)
        assert (result.status, result.reason, result.verified) == ("done", "verified", True)
        assert result.steps == 9 and result.outcome_unknown is False
        clicks = [int(x["arguments"]["element_index"]) for x in j.desk.calls("click")]
        assert len(clicks) == 9 and clicks[:3] == [CALC["1"], CALC["2"], CALC["+"]]
        decided = [e for e in progress(c) if e.phase == "decided"]
        assert len(decided) == 9 and all(
            e.gate == "proceed" and e.request_id == rid for e in decided
        )
        assert progress(c)[-1].phase == "finished"
        assert len(j.jev) == 9 and all(r["auth_ok"] for r in j.jev)
        assert list(j.jev[0]["body"]) == ["model", "questions", "state"]


async def test_dry_run_previews_and_dispatches_nothing() -> None:
    async with jev_desk([pick(CALC["1"])]) as j:
        c = await j.desk.client("agent")
        result = await c.call(Run(id=c.next_id(), app="Calculator", goal="Enter 1", dry_run=True))
        assert isinstance(result, RunResult)
        assert (result.status, result.reason) == ("dry_run", "preview_only")
        assert result.planned == {"kind": "click_element", "index": CALC["1"]}
        assert j.desk.calls("click") == []


async def test_low_confidence_hands_over_with_a_token_for_native_clicks() -> None:
    """An uncertain pick ends in needs_planner with a handoff; a native click needs its token
    and spends one of its steps; without it the click is refused unsent. Every reply, refusals
    included, states the steps the handoff has left, so no client counts them itself."""
    async with jev_desk([pick(CALC["1"], confidence=0.35)]) as j:
        c = await j.desk.client("agent")
        result = await c.call(Run(id=c.next_id(), app="Calculator", goal="Enter 1", max_steps=2))
        assert isinstance(result, RunResult)
        assert (result.status, result.reason) == ("needs_planner", "uncertain_target")
        handoff = result.handoff
        assert handoff is not None and handoff.app == "Calculator"
        assert handoff.remaining_steps == 2 and handoff.token and handoff.candidates

        async def click(token: str | None) -> ActionDone:
            obs = await c.call(GetAppState(id=c.next_id(), app="Calculator"))
            assert isinstance(obs, Observation)
            done = await c.call(
                Click(
                    id=c.next_id(),
                    app="Calculator",
                    state_id=obs.state_id,
                    element_index=CALC["1"],
                    handoff=token,
                )
            )
            assert isinstance(done, ActionDone)
            return done

        with pytest.raises(DeskhandError) as info:
            await click(None)
        assert (info.value.code, info.value.delivery) == ("handoff_required", "refused")
        assert info.value.reply_data()["handoff_steps_left"] == 2  # a refusal spends nothing
        for left in (1, 0):
            done = await click(handoff.token)
            assert (done.delivery, done.handoff_steps_left) == ("dispatched", left)
        with pytest.raises(DeskhandError) as spent:
            await click(handoff.token)
        assert spent.value.code == "handoff_required"
        assert spent.value.reply_data()["handoff_steps_left"] == 0
        assert len(j.desk.calls("click")) == 2


async def test_cancel_while_jev_decides_reports_cancelled_and_dispatches_nothing() -> None:
    """Cancelled while waiting for Jev: the run's own report says cancelled in the decide
    phase, delivery refused; while it ran, a mode switch was refused as busy."""
    async with jev_desk([{"delay_s": 30}]) as j:
        c = await j.desk.client("agent")
        rid = c.next_id()
        async with trio.open_nursery() as nursery:
            running = c.start(nursery, Run(id=rid, app="Calculator", goal="Enter 1"))
            await j.asked.wait()  # the fake Jev has the request and is taking its time
            with pytest.raises(DeskhandError) as busy:
                await c.call(ModeSet(id=c.next_id(), mode="native"))
            assert busy.value.code == "mode_busy"
            await c.call(Cancel(id=c.next_id(), request_id=rid))
            with pytest.raises(RequestWasCancelled) as info:
                await running.wait()
        report = info.value.report
        assert report is not None
        assert (report.code, report.delivery) == ("cancelled", "refused")
        assert report.data["phase"] == "decide" and report.data["steps"] == 0
        assert j.desk.calls("click") == []
        native = await c.call(ModeSet(id=c.next_id(), mode="native"))
        assert isinstance(native, ModeState) and native.mode == "native"  # no longer busy


async def test_declining_the_full_trace_stops_before_jev_is_asked() -> None:
    """full_trace asks the person first; a decline ends the run with nothing read or sent."""
    async with jev_desk([pick(CALC["1"])]) as j:
        c = await j.desk.client("agent", answers=True)
        async with trio.open_nursery() as nursery:
            running = c.start(
                nursery, Run(id=c.next_id(), app="Calculator", goal="Enter 1", full_trace=True)
            )
            question = await c.question()
            assert (question.question, question.app) == ("full_trace", "Calculator")
            await c.answer_question(question, "decline")
            result = await running.wait()
        assert isinstance(result, RunResult)
        assert (result.status, result.reason, result.steps) == ("stop", "consent_declined", 0)
        assert j.jev == [] and j.desk.calls() == []


async def test_a_console_answers_the_full_trace_question_of_a_client_that_cannot_ask() -> None:
    """An agent that cannot ask its person still gets a full trace when the person allows it
    from a console; with no console it runs without one (nobody could say yes)."""
    async with jev_desk([pick(CALC["1"])]) as j:
        agent = await j.desk.client("agent", answers=False, name="agent")
        nobody = await agent.call(
            Run(id=agent.next_id(), app="Calculator", goal="Enter 1", full_trace=True, max_steps=1)
        )
        assert isinstance(nobody, RunResult) and nobody.reason == "consent_declined"
        assert j.jev == []
        console = await j.desk.client("console", answers=True)
        start = await console.call(QuestionsWatch(id=console.next_id(), wait_s=0.0))
        assert isinstance(start, QuestionList)
        async with trio.open_nursery() as nursery:
            running = agent.start(
                nursery,
                Run(id=agent.next_id(), app="Calculator", goal="Enter 1", full_trace=True),
            )
            listed = await console.call(
                QuestionsWatch(id=console.next_id(), after=start.version, wait_s=30.0)
            )
            assert isinstance(listed, QuestionList)
            [question] = listed.questions
            assert (question.kind, question.app, question.client) == (
                "full_trace",
                "Calculator",
                "agent",
            )
            await console.call(
                Answer(id=console.next_id(), question_id=question.id, choice="accept")
            )
            result = await running.wait()
        assert isinstance(result, RunResult) and result.reason != "consent_declined"
        assert result.trace_path and j.jev != []


async def test_run_outside_jev_mode_says_why_and_sends_nothing() -> None:
    """A session switched to native mode refuses run (jev_mode_required); without a key the
    session is native for that reason, and run says so."""
    async with jev_desk([pick(CALC["1"])]) as j:
        c = await j.desk.client("agent")
        await c.call(ModeSet(id=c.next_id(), mode="native"))
        with pytest.raises(DeskhandError) as info:
            await c.call(Run(id=c.next_id(), app="Calculator", goal="Enter 1"))
        assert info.value.code == "jev_mode_required"
        assert info.value.data == {"mode": "native", "reason": ""}
        assert j.jev == [] and j.desk.calls() == []
    async with open_desk({"preapproved": ["*"]}, DESKHAND_MODE="jev") as desk:
        c = await desk.client("agent")
        with pytest.raises(DeskhandError) as keyless:
            await c.call(Run(id=c.next_id(), app="Calculator", goal="Enter 1"))
        assert keyless.value.code == "jev_mode_required"
        assert keyless.value.data == {"mode": "native", "reason": "missing_jev_key"}
        assert "TYPESAFE_API_KEY" in keyless.value.message
        assert desk.calls() == []
