"""Jev policy: decision validity, action preparation, sensitive labels and the ordered gate table."""

from __future__ import annotations

import math
from typing import Any

import pytest

from deskhand_d.ax import Element
from deskhand_d.jev.policy import (
    HANDOFF_REASONS,
    NAVIGATION_KEYS,
    RULES,
    SENSITIVE_FAMILIES,
    SENSITIVE_WORDS,
    Gate,
    PrepareError,
    evaluate,
    handoff_reason,
    is_valid,
    prepare,
    sensitive_family,
)
from deskhand_d.jev.types import ACTIONS, Decision, Prepared, Resources

# --- helpers ----------------------------------------------------------------------------------


def _decision(**overrides: Any) -> Decision:
    """A confident, harmless click on candidate 3 unless overridden."""
    fields: dict[str, Any] = {
        "action": "click_element",
        "target_index": 3,
        "confidence": 0.9,
        "done": 0.0,
        "risk": 0.0,
    }
    fields.update(overrides)
    return Decision(**fields)


def _element(index: int = 3, role: str = "button", label: str = "OK") -> Element:
    return Element(index=index, depth=1, role=role, source_role=role, label=label)


_UNSET: Any = object()


def _gate(
    decision: Decision | None = None,
    *,
    app: str = "TextEdit",
    allowed: bool = True,
    target: Element | None = _UNSET,
    resources: Resources | None = None,
    prepared: Prepared | None = _UNSET,
    focus: int | None = 3,
) -> Gate:
    """Evaluate with sensible defaults: the target is element 3, prepared from ``resources``."""
    decision = decision or _decision()
    if target is _UNSET:
        target = _element() if decision.target_index is not None else None
    if prepared is _UNSET:
        prepared = prepare(decision, resources or Resources())
    return evaluate(
        app=app,
        allowed=lambda name: allowed,
        decision=decision,
        target=target,
        prepared=prepared,
        focus=focus,
    )


def _field(label: str = "Name") -> Element:
    return _element(role="text field", label=label)


# --- the table itself -------------------------------------------------------------------------


def test_rule_table_order_matches_the_spec() -> None:
    """Seventeen rows, in the documented order, with the documented verdicts."""
    assert [(r.reason, r.verdict) for r in RULES] == [
        ("app_not_allowed", "stop"),
        ("invalid_decision", "escalate"),
        ("unknown_target", "escalate"),
        ("model_claimed_completion", "model_done"),
        ("model_requested_user", "confirm"),
        ("sensitive_{family}", "confirm"),
        ("model_risk", "confirm"),
        ("low_confidence", "stop"),
        ("uncertain_target", "escalate"),
        ("missing_action", "escalate"),
        ("coordinates_require_handoff", "confirm"),
        ("action_target_mismatch", "escalate"),
        ("target_not_editable", "escalate"),
        ("control_characters_require_handoff", "confirm"),
        ("focus_not_target", "escalate"),
        ("key_requires_handoff", "confirm"),
        ("policy_passed", "proceed"),
    ]


# --- one test per row -------------------------------------------------------------------------


def test_row01_app_not_allowed_comes_first() -> None:
    """A disallowed app stops even when every later row would also fire."""
    bad = _decision(confidence=math.nan, done=1.0, action="ask_user")
    assert _gate(bad, allowed=False, prepared=None) == Gate("stop", "app_not_allowed")
    assert _gate(allowed=False) == Gate("stop", "app_not_allowed")
    seen: list[str] = []

    def allowed(name: str) -> bool:
        seen.append(name)
        return True

    evaluate(
        app="Calculator",
        allowed=allowed,
        decision=_decision(),
        target=_element(),
        prepared=None,
        focus=None,
    )
    assert seen == ["Calculator"]


def test_row02_invalid_decision_precedes_unknown_target() -> None:
    """An invalid decision escalates before the target is even looked at."""
    assert _gate(_decision(confidence=math.nan), target=None) == Gate(
        "escalate", "invalid_decision"
    )
    assert _gate(_decision(risk=None, done=1.0), prepared=None) == Gate(
        "escalate", "invalid_decision"
    )
    assert _gate(_decision(action=None), prepared=None) == Gate("escalate", "invalid_decision")


def test_row03_unknown_target_precedes_model_done() -> None:
    """A target index without a matching element escalates, even when the model claims done."""
    assert _gate(target=None) == Gate("escalate", "unknown_target")
    assert _gate(target=_element(index=4)) == Gate("escalate", "unknown_target")
    assert _gate(_decision(done=0.95), target=None) == Gate("escalate", "unknown_target")
    # No index at all is not an unknown target.
    assert _gate(_decision(action="wait", target_index=None)) == Gate("proceed", "policy_passed")


def test_row04_model_done_precedes_ask_user_and_sensitive() -> None:
    """done >= 0.9 ends the run before any confirm or confidence rule."""
    assert _gate(_decision(done=0.9)) == Gate("model_done", "model_claimed_completion")
    done = _decision(done=0.95, action="ask_user", target_index=None, confidence=0.0, risk=1.0)
    assert _gate(done) == Gate("model_done", "model_claimed_completion")
    assert _gate(_decision(done=0.9), target=_element(label="Delete")) == Gate(
        "model_done", "model_claimed_completion"
    )
    assert _gate(_decision(done=0.89)) == Gate("proceed", "policy_passed")


def test_row05_ask_user_confirms_even_when_unsure() -> None:
    """ask_user asks a person; low confidence never turns it into a stop or a handoff."""
    ask = _decision(action="ask_user", target_index=None, confidence=0.1, risk=0.9)
    assert _gate(ask) == Gate("confirm", "model_requested_user")
    assert _gate(_decision(action="ask_user"), target=_element(label="Delete")) == Gate(
        "confirm", "model_requested_user"
    )


def test_row06_sensitive_label_precedes_risk_and_confidence() -> None:
    """A sensitive target label confirms, even on a low-confidence pick (never a handoff)."""
    gate = _gate(_decision(confidence=0.1, risk=0.9), target=_element(label="Delete file"))
    assert gate == Gate("confirm", "sensitive_delete")
    assert not handoff_reason(gate)
    assert _gate(target=_element(label="发送")) == Gate("confirm", "sensitive_send")
    assert _gate(target=_element(label="System Settings…")) == Gate("confirm", "sensitive_settings")
    # The label check also applies when preparation failed.
    assert _gate(target=_element(label="Buy now"), prepared=None) == Gate(
        "confirm", "sensitive_payment"
    )


def test_row07_model_risk_precedes_confidence() -> None:
    """risk >= 0.2 confirms; a low-confidence risky choice still confirms."""
    assert _gate(_decision(risk=0.2)) == Gate("confirm", "model_risk")
    gate = _gate(_decision(risk=0.5, confidence=0.05))
    assert gate == Gate("confirm", "model_risk")
    assert not handoff_reason(gate)
    assert _gate(_decision(risk=0.19)) == Gate("proceed", "policy_passed")


def test_row08_low_confidence_stops_before_missing_action() -> None:
    """confidence < 0.3 stops; it is one of the handoff reasons."""
    gate = _gate(_decision(confidence=0.29), prepared=None)
    assert gate == Gate("stop", "low_confidence")
    assert handoff_reason(gate)
    click_at = _decision(confidence=0.0, action="click_at", target_index=None)
    assert _gate(click_at, resources=Resources(at=(1.0, 1.0))) == gate


def test_row09_uncertain_target_threshold() -> None:
    """confidence in [0.3, 0.5) escalates as an uncertain target (0.4 floor on Calculator buttons)."""
    gate = _gate(_decision(confidence=0.3), prepared=None)
    assert gate == Gate("escalate", "uncertain_target")
    assert handoff_reason(gate)
    assert _gate(_decision(confidence=0.49)) == gate
    assert _gate(_decision(confidence=0.5)) == Gate("proceed", "policy_passed")
    # A wait with middling confidence is uncertain too.
    assert _gate(_decision(action="wait", target_index=None, confidence=0.45)) == gate


@pytest.mark.parametrize(
    "app",
    ["Calculator", "calculator", "CALCULATOR", "com.apple.calculator", "org.gnome.Calculator"],
)
def test_row09_calculator_button_floor(app: str) -> None:
    """0.45 on a Calculator button proceeds, by display name (any case) or bundle id."""
    assert _gate(_decision(confidence=0.45), app=app) == Gate("proceed", "policy_passed")
    assert _gate(_decision(confidence=0.39), app=app) == Gate("escalate", "uncertain_target")


def test_row09_relaxed_floor_needs_calculator_and_a_button_click() -> None:
    """The 0.4 floor applies to Calculator click_element on a button only."""
    uncertain = Gate("escalate", "uncertain_target")
    assert _gate(_decision(confidence=0.45), app="TextEdit") == uncertain
    assert _gate(_decision(confidence=0.45), app="Calculator Pro") == uncertain
    assert (
        _gate(_decision(confidence=0.45), app="Calculator", target=_element(role="static text"))
        == uncertain
    )
    scroll = _decision(action="scroll", confidence=0.45)
    assert _gate(scroll, app="Calculator", resources=Resources(direction="down")) == uncertain


def test_row10_missing_action() -> None:
    """A decision that could not be prepared escalates as missing_action."""
    assert _gate(prepared=None) == Gate("escalate", "missing_action")
    assert _gate(_decision(action="type_text"), target=_field(), prepared=None) == Gate(
        "escalate", "missing_action"
    )


def test_row11_coordinates_confirm() -> None:
    """click_at and drag always need a person, after the confidence rules."""
    click_at = _decision(action="click_at", target_index=None)
    gate = _gate(click_at, resources=Resources(at=(10.0, 20.0)))
    assert gate == Gate("confirm", "coordinates_require_handoff")
    assert not handoff_reason(gate)
    drag = _decision(action="drag", target_index=None)
    assert _gate(drag, resources=Resources(start=(0.0, 0.0), end=(5.0, 5.0))) == gate
    unsure = _decision(action="click_at", target_index=None, confidence=0.45)
    assert _gate(unsure, resources=Resources(at=(1.0, 1.0))) == Gate("escalate", "uncertain_target")


def test_row12_action_target_mismatch_precedes_editability() -> None:
    """A prepared index that is not the target's index escalates."""
    assert _gate(prepared=Prepared(kind="click_element", index=4)) == Gate(
        "escalate", "action_target_mismatch"
    )
    wrong_text = Prepared(kind="set_value", index=4, text="x\n")
    assert _gate(prepared=wrong_text) == Gate("escalate", "action_target_mismatch")
    no_target = _decision(action="wait", target_index=None)
    assert _gate(no_target, prepared=Prepared(kind="click_element", index=3)) == Gate(
        "escalate", "action_target_mismatch"
    )


def test_row13_target_not_editable_precedes_control_characters() -> None:
    """Text goes only into editable roles; a button with newline text is not editable first."""
    set_value = _decision(action="set_value")
    gate = _gate(set_value, resources=Resources(text="a\nb"))
    assert gate == Gate("escalate", "target_not_editable")
    assert handoff_reason(gate)
    typed = _decision(action="type_text")
    assert _gate(typed, target=_element(role="static text"), resources=Resources(text="hi")) == gate
    for role in ("text field", "search field", "text area", "combo box", "Text Field"):
        assert _gate(set_value, target=_element(role=role), resources=Resources(text="hi")) == Gate(
            "proceed", "policy_passed"
        )


@pytest.mark.parametrize(
    "text", ["line\nbreak", "tab\there", "nul\x00", "del\x7f", "unit\x1f", "\r"]
)
def test_row14_control_characters_confirm(text: str) -> None:
    """C0 controls and DEL in the text need a person."""
    for action in ("set_value", "type_text"):
        gate = _gate(_decision(action=action), target=_field(), resources=Resources(text=text))
        assert gate == Gate("confirm", "control_characters_require_handoff")


def test_row14_unicode_text_is_fine_and_control_precedes_focus() -> None:
    """Non-ASCII text proceeds; control characters are reported before a focus mismatch."""
    typed = _decision(action="type_text")
    ok = _gate(typed, target=_field(), resources=Resources(text="héllo 你好 🎉 — ü"))
    assert ok == Gate("proceed", "policy_passed")
    gate = _gate(typed, target=_field(), resources=Resources(text="a\nb"), focus=9)
    assert gate == Gate("confirm", "control_characters_require_handoff")


def test_row15_focus_not_target() -> None:
    """type_text and press_key need the target focused; set_value does not."""
    typed = _decision(action="type_text")
    gate = _gate(typed, target=_field(), resources=Resources(text="hi"), focus=9)
    assert gate == Gate("escalate", "focus_not_target")
    assert handoff_reason(gate)
    assert _gate(typed, target=_field(), resources=Resources(text="hi"), focus=None) == gate
    key = _decision(action="press_key")
    assert _gate(key, resources=Resources(key="Return"), focus=9) == gate
    set_value = _decision(action="set_value")
    assert _gate(set_value, target=_field(), resources=Resources(text="hi"), focus=9) == Gate(
        "proceed", "policy_passed"
    )


@pytest.mark.parametrize(
    "key", ["Tab", "TAB", "shift+tab", "Shift+Tab", "PageDown", "escape", "Up"]
)
def test_row16_navigation_keys_proceed(key: str) -> None:
    """Navigation keys, compared case-insensitively, proceed."""
    gate = _gate(_decision(action="press_key"), resources=Resources(key=key))
    assert gate == Gate("proceed", "policy_passed")


@pytest.mark.parametrize("key", ["Return", "Enter", "cmd+a", "Delete", "space", " Tab", "Tab+Tab"])
def test_row16_other_keys_confirm(key: str) -> None:
    """Every other key needs a person."""
    gate = _gate(_decision(action="press_key"), resources=Resources(key=key))
    assert gate == Gate("confirm", "key_requires_handoff")
    assert not handoff_reason(gate)


def test_row17_policy_passed() -> None:
    """A confident, harmless, well-prepared action proceeds."""
    assert _gate() == Gate("proceed", "policy_passed")
    assert _gate(_decision(action="wait", target_index=None, confidence=0.5)) == Gate(
        "proceed", "policy_passed"
    )
    scroll = _decision(action="scroll")
    assert _gate(scroll, resources=Resources(direction="up"), focus=None) == Gate(
        "proceed", "policy_passed"
    )


# --- handoff ----------------------------------------------------------------------------------


def test_handoff_reasons() -> None:
    """Only the four reasons, and only on escalate or stop, become a planner handoff."""
    assert {
        "uncertain_target",
        "low_confidence",
        "target_not_editable",
        "focus_not_target",
    } == HANDOFF_REASONS
    for reason in HANDOFF_REASONS:
        assert handoff_reason(Gate("escalate", reason))
        assert handoff_reason(Gate("stop", reason))
        assert not handoff_reason(Gate("confirm", reason))
    for rule in RULES:
        if rule.reason not in HANDOFF_REASONS:
            assert not handoff_reason(Gate(rule.verdict, rule.reason))


# --- validity ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("overrides", "valid"),
    [
        ({}, True),
        ({"confidence": 0.0, "risk": 1.0, "done": 0}, True),
        ({"target_index": None}, True),
        ({"target_index": 0}, True),
        ({"action": "wait", "target_index": None}, True),
        ({"confidence": math.nan}, False),
        ({"risk": math.inf}, False),
        ({"done": -math.inf}, False),
        ({"confidence": -0.1}, False),
        ({"risk": 1.1}, False),
        ({"risk": None}, False),
        ({"action": "wait", "done": None}, False),
        ({"confidence": True}, False),
        ({"done": False}, False),
        ({"confidence": "0.9"}, False),
        ({"target_index": -1}, False),
        ({"target_index": True}, False),
        ({"target_index": 2.0}, False),
        ({"target_index": 2**53}, False),
        ({"action": None}, False),
        ({"action": "double_click"}, False),
    ],
)
def test_is_valid(overrides: dict[str, Any], valid: bool) -> None:
    """Known action, three finite scores in [0, 1], optional non-negative integer index."""
    assert is_valid(_decision(**overrides)) is valid


def test_every_action_is_valid() -> None:
    """All nine actions are accepted."""
    assert len(ACTIONS) == 9
    assert all(is_valid(_decision(action=action)) for action in ACTIONS)


# --- preparation ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("action", "index", "resources", "expected"),
    [
        ("wait", None, Resources(), Prepared(kind="wait")),
        ("wait", 3, Resources(text="x", at=(1.0, 1.0)), Prepared(kind="wait")),
        ("ask_user", 3, Resources(), Prepared(kind="ask_user")),
        ("click_at", None, Resources(at=(0.0, 5.5)), Prepared(kind="click_at", at=(0.0, 5.5))),
        ("click_at", 3, Resources(at=(1, 2)), Prepared(kind="click_at", at=(1.0, 2.0))),
        (
            "drag",
            None,
            Resources(start=(1.0, 2.0), end=(3.0, 4.0)),
            Prepared(kind="drag", start=(1.0, 2.0), end=(3.0, 4.0)),
        ),
        ("click_element", 3, Resources(), Prepared(kind="click_element", index=3)),
        ("click_element", 0, Resources(text="ignored"), Prepared(kind="click_element", index=0)),
        ("set_value", 3, Resources(text=""), Prepared(kind="set_value", index=3, text="")),
        (
            "set_value",
            3,
            Resources(text="x" * 10_000),
            Prepared(kind="set_value", index=3, text="x" * 10_000),
        ),
        ("type_text", 3, Resources(text="hi"), Prepared(kind="type_text", index=3, text="hi")),
        ("press_key", 3, Resources(key="Tab"), Prepared(kind="press_key", index=3, key="Tab")),
        (
            "press_key",
            3,
            Resources(key="k" * 100),
            Prepared(kind="press_key", index=3, key="k" * 100),
        ),
        (
            "scroll",
            3,
            Resources(direction="left"),
            Prepared(kind="scroll", index=3, direction="left"),
        ),
    ],
)
def test_prepare_ok(
    action: str, index: int | None, resources: Resources, expected: Prepared
) -> None:
    """Each action combines with exactly the resources it needs."""
    assert prepare(_decision(action=action, target_index=index), resources) == expected


@pytest.mark.parametrize(
    ("action", "index", "resources", "needle"),
    [
        ("click_at", None, Resources(), "'at'"),
        ("click_at", None, Resources(at=(-1.0, 2.0)), "'at'"),
        ("click_at", None, Resources(at=(math.nan, 2.0)), "'at'"),
        ("click_at", None, Resources(at=(1.0, math.inf)), "'at'"),
        ("click_at", None, Resources(at=(1.0,)), "'at'"),  # type: ignore[arg-type]
        ("click_at", None, Resources(at=(1.0, 2.0, 3.0)), "'at'"),  # type: ignore[arg-type]
        ("click_at", None, Resources(at=(True, 2.0)), "'at'"),
        ("drag", None, Resources(start=(1.0, 2.0)), "'start' and 'end'"),
        ("drag", None, Resources(end=(1.0, 2.0)), "'start' and 'end'"),
        ("drag", None, Resources(start=(1.0, 2.0), end=(-3.0, 4.0)), "'start' and 'end'"),
        ("click_element", 3, Resources(at=(1.0, 2.0)), "must leave out"),
        ("set_value", 3, Resources(text="x", start=(1.0, 2.0)), "must leave out"),
        ("scroll", 3, Resources(direction="up", end=(1.0, 2.0)), "must leave out"),
        ("click_element", None, Resources(), "candidate index"),
        ("press_key", None, Resources(key="Tab"), "candidate index"),
        ("click_element", -1, Resources(), "candidate index"),
        ("click_element", True, Resources(), "candidate index"),
        ("set_value", 3, Resources(), "'text' as a string"),
        ("set_value", 3, Resources(text="x" * 10_001), "at most 10000"),
        ("type_text", 3, Resources(), "non-empty"),
        ("type_text", 3, Resources(text=""), "non-empty"),
        ("type_text", 3, Resources(text="x" * 10_001), "non-empty"),
        ("press_key", 3, Resources(), "'key'"),
        ("press_key", 3, Resources(key=""), "'key'"),
        ("press_key", 3, Resources(key="  \t"), "'key'"),
        ("press_key", 3, Resources(key="k" * 101), "at most 100"),
        ("scroll", 3, Resources(), "'direction'"),
        ("scroll", 3, Resources(direction="sideways"), "'direction'"),
        ("scroll", 3, Resources(direction="Up"), "'direction'"),
        (None, 3, Resources(), "no known action"),
        ("double_click", 3, Resources(), "no known action"),
    ],
)
def test_prepare_errors(action: Any, index: Any, resources: Resources, needle: str) -> None:
    """Missing or malformed resources are refused with a message naming what to supply."""
    with pytest.raises(PrepareError, match=needle):
        prepare(_decision(action=action, target_index=index), resources)


def test_prepare_never_defaults_a_key() -> None:
    """Without a key, press_key is refused rather than pressing Return."""
    with pytest.raises(PrepareError, match="Return is ever assumed"):
        prepare(_decision(action="press_key"), Resources())
    assert issubclass(PrepareError, ValueError)


# --- sensitive families -----------------------------------------------------------------------


def test_families_are_data_in_order() -> None:
    """The families are an ordered table matching the word lists."""
    names = ["delete", "send", "payment", "auth", "share", "install", "settings"]
    assert [family for family, _ in SENSITIVE_FAMILIES] == names
    assert [w.family for w in SENSITIVE_WORDS] == names


def test_every_listed_term_hits_its_own_family() -> None:
    """Each word, phrase and Chinese term, alone or inside a sentence, names its own family."""
    for words in SENSITIVE_WORDS:
        for term in (*words.chinese, *words.words, *words.phrases):
            for label in (term, term.upper(), f"Please {term} now", f"请{term}。"):
                assert sensitive_family(label) == words.family, label


@pytest.mark.parametrize(
    ("label", "family"),
    [
        ("Delete", "delete"),
        ("Move to Trash / Remove", "delete"),
        ("Clear All", "delete"),
        ("clear   all history", "delete"),
        ("Clear-all", "delete"),
        ("Clear", None),
        ("Clear allergies", None),
        ("清空回收站", "delete"),
        ("Send", "send"),
        ("Sender", None),
        ("Resend", None),
        ("Deleted items", None),
        ("Payment method", None),
        ("Pay", "payment"),
        ("Post", "send"),
        ("Poster", None),
        ("Sign in", "auth"),
        ("Sign-in", "auth"),
        ("Log In", "auth"),
        ("LOGIN", "auth"),
        ("Logout", None),
        ("Signing", None),
        ("Uninstall", None),
        ("点击send按钮", "send"),
        ("send_later", None),
        ("send2", None),
        ("Export PDF…", "share"),
        ("System Settings", "settings"),
        ("Open system settings…", "settings"),
        ("MySystem Settingsx", "settings"),
        ("Security Settings", "settings"),
        ("打开系统设置", "settings"),
        ("偏好设置", "settings"),
        ("Settings", None),
        ("7", None),
        ("", None),
        ("Delete and send", "delete"),
        ("Send payment", "send"),
        ("Buy and share", "payment"),
        ("Permission settings", "auth"),
    ],
)
def test_sensitive_family_cases(label: str, family: str | None) -> None:
    """English words need ASCII word boundaries; Chinese terms and settings phrases are substrings."""
    assert sensitive_family(label) == family


def test_navigation_keys_are_lower_case() -> None:
    """The key list is stored lower-cased, eleven keys."""
    assert all(key == key.lower() for key in NAVIGATION_KEYS)
    assert len(NAVIGATION_KEYS) == 11
