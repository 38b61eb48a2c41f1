"""The task loop in memory: a scripted desk (real AX text) and either the fake Jev over real
HTTP or a scripted decider. Cancellation is checked at every phase."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
import trio
from peers.fake_jev import serve_fake_jev

from deskhand_d import ax
from deskhand_d import errors as E
from deskhand_d.ax import Candidate
from deskhand_d.jev.client import JevClient
from deskhand_d.jev.loop import TaskLoop
from deskhand_d.jev.task import Task, Verify
from deskhand_d.jev.types import Decision, Prepared
from deskhand_d.native.turnbudget import TurnBudget

CASES = json.loads((Path(__file__).parents[2] / "fixtures" / "cases.json").read_text())
KEY = "tsk-loop-test-31c9"


class Desk:
    """Serves tree texts in turn (the last repeats) and records every action."""

    def __init__(self, *texts: str, block_in: str = "") -> None:
        self.texts = list(texts)
        self.actions: list[Prepared] = []
        self.observed = 0
        self.block_in = block_in  # "observe" or "act": wait forever there

    async def observe(self) -> str:
        self.observed += 1
        if self.block_in == "observe" and self.observed > 1:
            await trio.sleep_forever()
        return self.texts.pop(0) if len(self.texts) > 1 else self.texts[0]

    async def act(self, prepared: Prepared) -> None:
        self.actions.append(prepared)
        if self.block_in == "act":
            await trio.sleep_forever()


class Decider:
    def __init__(self, *decisions: Decision, block: bool = False) -> None:
        self.decisions = list(decisions)
        self.seen: list[list[int]] = []
        self.block = block

    async def decide(self, *, candidates: Sequence[Candidate], **_: Any) -> Decision:
        self.seen.append([c.element.index for c in candidates])
        if self.block:
            await trio.sleep_forever()
        return self.decisions.pop(0) if len(self.decisions) > 1 else self.decisions[0]


def click(index: int, confidence: float = 0.9) -> Decision:
    return Decision(
        action="click_element", target_index=index, confidence=confidence, done=0.0, risk=0.0
    )


def loop(task: Task, desk: Desk, decider: Any, budget: TurnBudget | None = None) -> TaskLoop:
    return TaskLoop(
        task, desk=desk, decider=decider, budget=budget or TurnBudget(), allowed=lambda _: True
    )


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
async def test_seed_cases_rank_and_decide_through_the_fake_jev(case: dict[str, Any]) -> None:
    ranked = [
        c.element.index for c in ax.select_candidates(ax.parse(case["ax"]), case["goal"]).candidates
    ]
    assert case["expectedIndex"] in ranked[:3]
    record: list[dict[str, Any]] = []
    script = [
        {"expect_key": KEY},
        {
            "pick": {
                "target": f"i{case['expectedIndex']}",
                "action": case["expectedAction"],
                "confidence": 0.9,
            }
        },
    ]
    async with trio.open_nursery() as nursery:
        port = await nursery.start(serve_fake_jev, script, record)
        client = JevClient(key=KEY, url=f"http://127.0.0.1:{port}/v1/systemone")
        task = Task(app=case["app"], goal=case["goal"], dry_run=True)
        ending = await loop(task, Desk(case["ax"]), client).run()
        await client.aclose()
        nursery.cancel_scope.cancel()
    assert (ending.status, ending.reason) == ("dry_run", "preview_only")
    assert ending.planned == {"kind": case["expectedAction"], "index": case["expectedIndex"]}
    sent = record[0]["body"]
    assert f"i{case['expectedIndex']}" in sent["questions"]["target"]["criteria"]
    assert sent["state"]["app"] == case["app"] and sent["state"]["goal"] == case["goal"]


CALC = CASES[1]["ax"]  # the zh-Hans Calculator tree: 5 (10), 6 (11), equals (12)


async def test_a_ticking_clock_does_not_abort_but_a_changed_target_does() -> None:
    with_clock = (
        "Window: Clock\n0 standard window Clock\n  1 text 10:00\n  2 button Start\n  3 button Stop"
    )
    later = with_clock.replace("10:00", "10:01")
    desk = Desk(with_clock, later, later)
    ending = await loop(Task(app="Clock", goal="start", max_steps=1), desk, Decider(click(2))).run()
    assert ending.status == "max_steps" and len(desk.actions) == 1
    renamed = with_clock.replace("2 button Start", "2 button Reset")
    desk = Desk(with_clock, renamed)
    ending = await loop(Task(app="Clock", goal="start", max_steps=1), desk, Decider(click(2))).run()
    assert (ending.status, ending.reason) == ("escalate", "observation_changed_before_action")
    assert desk.actions == []
    extra = with_clock + "\n  4 button Lap"
    desk = Desk(with_clock, extra)
    ending = await loop(Task(app="Clock", goal="start", max_steps=1), desk, Decider(click(2))).run()
    assert ending.reason == "observation_changed_before_action" and desk.actions == []


async def test_three_unchanged_observations_stop_the_run() -> None:
    desk = Desk(CALC)
    ending = await loop(
        Task(app="Calculator", goal="Enter digit 6", max_steps=10), desk, Decider(click(11))
    ).run()
    assert (ending.status, ending.reason, ending.steps) == ("escalate", "repeated_no_change", 3)


async def test_verify_before_deciding_finishes_without_any_call() -> None:
    decider = Decider(click(11))
    task = Task(app="Calculator", goal="Enter 6", verify=Verify("text", "0"))
    ending = await loop(task, Desk(CALC), decider).run()
    assert (ending.status, ending.verified) == ("done", True) and decider.seen == []


async def test_no_retries_and_refusals_end_the_run() -> None:
    class Refusing(Desk):
        async def act(self, prepared: Prepared) -> None:
            self.actions.append(prepared)
            raise E.ConsentDenied("no")

    desk = Refusing(CALC)
    ending = await loop(Task(app="Calculator", goal="Enter 6"), desk, Decider(click(11))).run()
    assert (ending.status, ending.reason, ending.steps) == ("stop", "consent_denied", 0)
    assert len(desk.actions) == 1

    class Unknown(Desk):
        async def act(self, prepared: Prepared) -> None:
            self.actions.append(prepared)
            raise E.OutcomeUnknown("lost")

    desk = Unknown(CALC)
    ending = await loop(Task(app="Calculator", goal="Enter 6"), desk, Decider(click(11))).run()
    assert (ending.status, ending.reason, ending.outcome_unknown) == (
        "error",
        "outcome_unknown",
        True,
    )
    assert len(desk.actions) == 1


async def test_jev_errors_end_the_run_without_dispatch() -> None:
    class Failing:
        async def decide(self, **_: Any) -> Decision:
            raise E.JevTimeout("slow")

    desk = Desk(CALC)
    ending = await loop(Task(app="Calculator", goal="Enter 6"), desk, Failing()).run()
    assert (ending.status, ending.reason) == ("error", "jev_timeout") and desk.actions == []


async def test_budget_is_charged_before_dispatch_and_checked_each_step() -> None:
    budget = TurnBudget(actions=1)
    desk = Desk(CALC, CALC.replace("1 文本 0", "1 文本 6"))
    ending = await loop(
        Task(app="Calculator", goal="Enter 6", max_steps=5), desk, Decider(click(11)), budget
    ).run()
    assert (ending.status, ending.reason, ending.steps) == ("stop", "action_budget_exhausted", 1)
    assert budget.used == 1


@pytest.mark.parametrize(
    ("where", "phase", "dispatched"),
    [("decide", "decide", 0), ("observe", "preflight_observe", 0), ("act", "execute", 1)],
)
async def test_cancellation_at_each_phase(where: str, phase: str, dispatched: int) -> None:
    desk = Desk(CALC, block_in=where if where != "decide" else "")
    decider = Decider(click(11), block=where == "decide")
    runner = loop(Task(app="Calculator", goal="Enter 6"), desk, decider)
    with trio.move_on_after(0.5) as scope:
        await runner.run()
    assert scope.cancelled_caught
    assert runner.phase == phase and len(desk.actions) == dispatched
    assert runner.steps == 0  # a dispatch that never returned is not a completed step
