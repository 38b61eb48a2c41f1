"""The System One wire format: request body, option descriptions, answer normalisation, back-off."""

from __future__ import annotations

import json
import math
from email.utils import formatdate
from typing import Any

import pytest

from deskhand_d.ax import Candidate, Element
from deskhand_d.jev import wire
from deskhand_d.jev.types import ACTIONS, Decision
from deskhand_d.jev.wire import (
    DEFAULT_URL,
    MODEL,
    WireError,
    backoff_s,
    build_body,
    criteria,
    normalize,
    probability,
)


def cand(index: int, role: str = "button", label: str = "OK") -> Candidate:
    el = Element(index=index, depth=1, role=role, source_role=role, label=label)
    return Candidate(element=el, score=0)


CANDS = [cand(56, label="previous month"), cand(57, label="Today"), cand(58, label="next month")]
SENT = criteria(CANDS)


def body(**over: Any) -> dict[str, Any]:
    args: dict[str, Any] = {
        "goal": "switch to the previous month",
        "app": "Calendar",
        "candidates": CANDS,
        "context": "Window: Calendar",
        "recent_actions": [],
        "constraints": "",
    }
    args.update(over)
    return build_body(**args)


def test_constants() -> None:
    assert MODEL == "jev-latest"
    assert DEFAULT_URL == "https://api.typesafe.ai/v1/systemone"


def test_body_keys_and_order() -> None:
    b = body()
    assert list(b) == ["model", "questions", "state"]
    assert b["model"] == MODEL
    assert list(b["questions"]) == ["target", "action", "done", "risk"]
    assert list(b["state"]) == [
        "goal",
        "app",
        "context",
        "candidates",
        "recent_actions",
        "constraints",
    ]
    json.dumps(b)  # serialisable as is


def test_body_model_override() -> None:
    assert body(model="jev-1.13.0")["model"] == "jev-1.13.0"


def test_target_question() -> None:
    q = body()["questions"]["target"]
    assert q["type"] == "choice"
    assert q["criteria"] == {
        "i56": "button: previous month",
        "i57": "button: Today",
        "i58": "button: next month",
    }
    assert q["instructions"].endswith("switch to the previous month")


def test_action_question_lists_the_nine_actions() -> None:
    q = body()["questions"]["action"]
    assert q["type"] == "choice"
    assert tuple(q["criteria"]) == ACTIONS
    assert all(isinstance(v, str) and v for v in q["criteria"].values())
    assert q["instructions"]


def test_noul_questions() -> None:
    qs = body()["questions"]
    assert qs["done"]["type"] == "noul" and "criteria" not in qs["done"]
    risk = qs["risk"]
    assert risk["type"] == "noul"
    assert set(risk["criteria"]) == {"true", "false"}
    text = (risk["instructions"] + risk["criteria"]["true"]).lower()
    for word in ("delet", "send", "pay", "permission", "upload", "captcha", "install"):
        assert word in text
    assert "system settings" in text and "credentials" in text


def test_state_fields() -> None:
    recent = [f"step {i}" for i in range(9)]
    s = body(context="x" * 2000, recent_actions=recent, constraints="Do not edit events")["state"]
    assert s["goal"] == "switch to the previous month"
    assert s["app"] == "Calendar"
    assert s["context"] == "x" * 1500
    assert s["candidates"] == [
        {"id": "i56", "desc": "button: previous month"},
        {"id": "i57", "desc": "button: Today"},
        {"id": "i58", "desc": "button: next month"},
    ]
    assert s["recent_actions"] == recent[-6:]
    assert s["constraints"].startswith(wire.UNTRUSTED_PREFIX)
    assert s["constraints"].endswith("Do not edit events")


def test_constraints_prefix_alone_when_empty() -> None:
    assert body(constraints="  ")["state"]["constraints"] == wire.UNTRUSTED_PREFIX
    assert "untrusted" in wire.UNTRUSTED_PREFIX


@pytest.mark.parametrize(
    ("role", "label", "want"),
    [
        ("link", "Home https://example.com/x?y=1 page", "link: Home page"),
        ("link", "a HTTP://X.COM b", "link: a b"),
        ("link", "song orpheus://song/123?x=y  now", "link: song now"),
        ("link", "f file:///etc/passwd g", "link: f g"),
        ("link", "js javascript:alert(1)", "link: js"),
        ("image", "pic data:image/png;base64,AAAA end", "image: pic end"),
        ("button", "  lots\tof \n space  ", "button: lots of space"),
        ("button", "metadata:kept", "button: metadata:kept"),
        ("text", "mailto:a@b.c stays", "text: mailto:a@b.c stays"),
    ],
)
def test_criteria_sanitising(role: str, label: str, want: str) -> None:
    assert criteria([cand(3, role, label)]) == {"i3": want}


def test_criteria_cut_to_120() -> None:
    label = "Description: " + "Ordinary event details " * 8 + "Delete Event"
    desc = criteria([cand(7, "button", label)])["i7"]
    assert len(desc) == 120
    assert desc.startswith("button: Description: Ordinary")
    assert "Delete" not in desc


def test_criteria_keeps_order_and_refuses_duplicates() -> None:
    assert list(criteria([cand(9), cand(2), cand(5)])) == ["i9", "i2", "i5"]
    with pytest.raises(ValueError, match="more than once"):
        criteria([cand(1), cand(1)])


# -- normalisation ------------------------------------------------------------------------


def answers(
    target: Any = "i56",
    action: Any = "click_element",
    confidence: Any = 0.9,
    done: Any = 0.02,
    risk: Any = 0.01,
) -> dict[str, Any]:
    return {
        "model": "jev-1.13.0",
        "answers": {
            "target": {
                "type": "choice",
                "choice": target,
                "confidence": confidence,
                "probabilities": {"i56": 0.93, "i57": 0.04, "i58": 0.03},
            },
            "action": {"type": "choice", "choice": action, "confidence": 1.0},
            "done": {"type": "noul", "noul": done},
            "risk": {"type": "noul", "noul": risk},
        },
        "usage": {"input_tokens": 912, "output_tokens": 60},
    }


def test_normalize_valid() -> None:
    d = normalize(answers(), SENT, 123)
    assert d == Decision(
        action="click_element",
        target_index=56,
        confidence=0.9,
        done=0.02,
        risk=0.01,
        usage={"input_tokens": 912, "output_tokens": 60},
        latency_ms=123,
    )


@pytest.mark.parametrize(
    ("over", "field", "want"),
    [
        ({"action": "execute_shell"}, "action", None),
        ({"action": None}, "action", None),
        ({"action": "wait"}, "action", "wait"),
        ({"target": "i999"}, "target_index", None),
        ({"target": "56"}, "target_index", None),
        ({"target": "i٥٦"}, "target_index", None),  # non-ASCII digits
        ({"target": 56}, "target_index", None),
        ({"target": "click_element"}, "target_index", None),
        ({"confidence": "0.9"}, "confidence", 0.9),
        ({"confidence": " 0.5 "}, "confidence", 0.5),
        ({"confidence": ""}, "confidence", None),
        ({"confidence": "  "}, "confidence", None),
        ({"confidence": "0x1"}, "confidence", None),
        ({"confidence": "nan"}, "confidence", None),
        ({"confidence": 2}, "confidence", None),
        ({"confidence": -0.1}, "confidence", None),
        ({"confidence": 1}, "confidence", 1.0),
        ({"confidence": 0}, "confidence", 0.0),
        ({"confidence": True}, "confidence", None),
        ({"confidence": None}, "confidence", None),
        ({"done": math.nan}, "done", None),
        ({"done": math.inf}, "done", None),
        ({"done": 1.3}, "done", None),
        ({"risk": -math.inf}, "risk", None),
        ({"risk": [0.5]}, "risk", None),
    ],
)
def test_normalize_table(over: dict[str, Any], field: str, want: object) -> None:
    assert getattr(normalize(answers(**over), SENT, 0), field) == want


def test_probability_falls_back_to_probability_field() -> None:
    payload = answers()
    payload["answers"]["done"] = {"type": "boolean", "probability": 0.95}
    payload["answers"]["risk"] = {"type": "boolean", "probability": "0.3"}
    d = normalize(payload, SENT, 0)
    assert d.done == 0.95 and d.risk == 0.3


def test_invalid_noul_does_not_fall_back() -> None:
    payload = answers(done=2)
    payload["answers"]["done"]["probability"] = 0.1
    assert normalize(payload, SENT, 0).done is None


def test_missing_answer_objects_become_none() -> None:
    d = normalize({"answers": {"target": "i56", "done": None}}, SENT, 5)
    assert d == Decision(
        action=None, target_index=None, confidence=None, done=None, risk=None, latency_ms=5
    )


@pytest.mark.parametrize(
    "payload",
    [
        {},
        {"answers": None},
        {"answers": []},
        {"answers": "target"},
        {"model": "jev-1.13.0", "usage": {}},
        [],
        None,
        "answers",
    ],
)
def test_answers_not_an_object(payload: object) -> None:
    with pytest.raises(WireError, match="invalid answers"):
        normalize(payload, SENT, 0)
    assert issubclass(WireError, ValueError)


def test_usage_copied_only_if_object() -> None:
    payload = answers()
    payload["usage"] = [1, 2]
    assert normalize(payload, SENT, 0).usage == {}
    del payload["usage"]
    assert normalize(payload, SENT, 0).usage == {}


def test_probability_helper() -> None:
    assert probability("1e-1") == 0.1
    assert probability("1_0") is None
    assert probability(object()) is None


# -- back-off -----------------------------------------------------------------------------


@pytest.mark.parametrize(("attempt", "want"), [(0, 1.0), (1, 3.0), (2, 8.0), (3, 8.0), (99, 8.0)])
def test_backoff_without_retry_after(attempt: int, want: float) -> None:
    assert backoff_s(attempt, None) == want


@pytest.mark.parametrize(
    ("header", "want"),
    [("1", 1.0), ("0", 0.0), (" 2 ", 2.0), ("0.2", 0.2), ("120", 30.0), ("30", 30.0)],
)
def test_backoff_retry_after_seconds(header: str, want: float) -> None:
    assert backoff_s(0, header) == want
    assert backoff_s(2, header) == want


@pytest.mark.parametrize("header", ["", "soon", "-1", "inf", "nan", "1,5"])
def test_backoff_unreadable_retry_after_falls_back(header: str) -> None:
    assert backoff_s(1, header) == 3.0


def test_backoff_retry_after_http_date() -> None:
    now = 1_800_000_000.0
    assert backoff_s(0, formatdate(now + 5, usegmt=True), now=now) == pytest.approx(5.0)
    assert backoff_s(0, formatdate(now + 3600, usegmt=True), now=now) == 30.0
    assert backoff_s(0, formatdate(now - 60, usegmt=True), now=now) == 0.0
