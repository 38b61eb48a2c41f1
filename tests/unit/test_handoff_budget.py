"""The planner handoff's binding rules and the per-turn Jev budget (pure)."""

from __future__ import annotations

import json

import msgspec
import pytest

from deskhand_d.ax import Candidate, Element
from deskhand_d.jev.task import Ending
from deskhand_d.native.handoff import (
    INSTRUCTION,
    MAX_CANDIDATES,
    HandoffBrief,
    candidate_briefs,
    new_handoff,
)
from deskhand_d.native.turnbudget import TurnBudget

H = new_handoff(session_id="s1", turn=3, app="Calculator", goal="add", remaining=2)


@pytest.mark.parametrize(
    ("given", "expect"),
    [
        ({"token": H.token, "session_id": "s1", "turn": 3, "app": "Calculator"}, None),
        ({"token": H.token, "session_id": "s1", "turn": 3, "app": " calculator "}, None),
        ({"token": None, "session_id": "s1", "turn": 3, "app": "Calculator"}, "no handoff token"),
        ({"token": "x" * 32, "session_id": "s1", "turn": 3, "app": "Calculator"}, "does not match"),
        ({"token": H.token, "session_id": "s2", "turn": 3, "app": "Calculator"}, "another session"),
        (
            {"token": H.token, "session_id": "s1", "turn": 4, "app": "Calculator"},
            "another session or turn",
        ),
        ({"token": H.token, "session_id": "s1", "turn": 3, "app": "TextEdit"}, "not 'TextEdit'"),
    ],
)
def test_a_handoff_covers_only_its_session_turn_and_app(
    given: dict[str, object], expect: str | None
) -> None:
    why = H.refusal(**given)  # type: ignore[arg-type]
    assert (why is None) if expect is None else (why is not None and expect in why)


def test_a_spent_handoff_covers_nothing_and_tokens_are_unique() -> None:
    spent = new_handoff(session_id="s", turn=1, app="A", goal="g", remaining=0)
    assert spent.refusal(token=spent.token, session_id="s", turn=1, app="A") is not None
    tokens = {
        new_handoff(session_id="s", turn=1, app="A", goal="g", remaining=1).token
        for _ in range(100)
    }
    assert len(tokens) == 100 and all(len(t) == 32 for t in tokens)


def test_candidate_briefs_are_cut() -> None:
    cands = [
        Candidate(
            element=Element(
                index=i, depth=1, role="button" * 10, source_role="button", label="x" * 200
            ),
            score=1,
        )
        for i in range(MAX_CANDIDATES + 3)
    ]
    briefs, truncated = candidate_briefs(cands)
    assert truncated and len(briefs) == MAX_CANDIDATES
    assert len(briefs[0].role) == 48 and len(briefs[0].label) == 96
    assert candidate_briefs(cands[:2]) == (briefs[:2], False)


def test_the_turn_budget_counts_time_from_the_first_run_and_attempts() -> None:
    b = TurnBudget(seconds=10, actions=2)
    assert b.exhausted(100.0) is None and b.remaining_s(100.0) == 10
    b.start(100.0)
    b.start(105.0)  # a later run does not restart the clock
    assert b.remaining_s(104.0) == 6
    assert b.exhausted(110.0) == "task_deadline_exceeded"
    b.spend()
    b.spend()
    assert b.exhausted(101.0) == "action_budget_exhausted"
    b.reset()
    assert b.exhausted(500.0) is None and b.used == 0 and b.started is None


def test_a_dispatch_spends_one_step_and_the_last_ends_the_handoff() -> None:
    """The handoff is frozen: a dispatch under it gives the next one, and none after the last."""
    h = new_handoff(session_id="s", turn=1, app="A", goal="g", remaining=2)
    once = h.spent()
    assert once is not None and (once.remaining, once.token, h.remaining) == (1, h.token, 2)
    assert once.spent() is None
    with pytest.raises(AttributeError):
        h.remaining = 5  # type: ignore[misc]


def test_what_a_run_hands_back_is_typed_and_traced_as_plain_data() -> None:
    """The brief's fields are typed; the ending's trace form is the same JSON as before."""
    element = Element(index=4, depth=1, role="button", source_role="button", label="OK")
    briefs, truncated = candidate_briefs([Candidate(element=element, score=3)])
    brief = HandoffBrief(
        remaining_steps=2,
        context="ctx",
        recent_actions=("a",),
        candidates=briefs,
        candidates_truncated=truncated,
        instruction=INSTRUCTION,
    )
    ending = Ending(status="needs_planner", reason="low_confidence", steps=1, handoff=brief)
    traced = json.loads(msgspec.json.encode(ending.as_dict()))  # as the trace writer encodes it
    assert traced["handoff"] == {
        "remaining_steps": 2,
        "context": "ctx",
        "recent_actions": ["a"],
        "candidates": [{"index": 4, "role": "button", "label": "OK"}],
        "candidates_truncated": False,
        "instruction": INSTRUCTION,
    }
    assert Ending(status="done", reason="verified", steps=1).as_dict()["handoff"] is None
