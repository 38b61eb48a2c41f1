"""The deterministic gate between a Jev decision and the desktop.

This module owns: checking that a decision is well formed (:func:`is_valid`), combining it with
what the planner supplied into the exact action that would run (:func:`prepare`), spotting
labels that touch deleting, sending, paying, credentials, sharing, installing or system settings
(:func:`sensitive_family`), the ordered gate table (:data:`RULES`, applied by :func:`evaluate`)
and which gate reasons the loop may hand back to the planner (:func:`handoff_reason`).

Pure code: no I/O, no clock, no randomness. The rules are data so tests can walk them in order.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from typing import Literal, NamedTuple

import msgspec

from deskhand_d.ax import Element
from deskhand_d.jev.types import ACTIONS, Action, Decision, Direction, Prepared, Resources

Verdict = Literal["proceed", "confirm", "escalate", "stop", "model_done"]


class Gate(msgspec.Struct, frozen=True):
    """The policy's answer for one decision: what to do and the rule that said so."""

    verdict: Verdict
    reason: str


# --- thresholds -----------------------------------------------------------------------------

DONE_AT = 0.9  # done at or above this: the model says the task is finished
RISK_CONFIRM_AT = 0.2  # risk at or above this: a person must confirm
STOP_BELOW = 0.3  # confidence below this: stop outright
MIN_CONFIDENCE = 0.5  # confidence below this: hand back as an uncertain target
CALCULATOR_MIN_CONFIDENCE = 0.4  # ...relaxed for Calculator's buttons
MAX_TEXT = 10_000  # characters (code points) of set_value / type_text text
MAX_KEY = 100  # characters of a press_key key
MAX_INDEX = 2**53 - 1  # the predecessor accepted only JSON-safe integers

# Gate reasons the task loop may turn into a planner handoff (``needs_planner``).
HANDOFF_REASONS: frozenset[str] = frozenset(
    {"uncertain_target", "low_confidence", "target_not_editable", "focus_not_target"}
)
# Keys that only move focus or selection; any other key needs a person. Compared lower-cased.
NAVIGATION_KEYS: frozenset[str] = frozenset(
    {"tab", "shift+tab", "escape", "home", "end", "pageup", "pagedown"}
) | {"left", "right", "up", "down"}
EDITABLE_ROLES: frozenset[str] = frozenset({"text field", "search field", "text area", "combo box"})
# Calculator identified by display name or by bundle / application id, all compared case-folded.
# The predecessor matched only the exact display name "Calculator"; that quirk is fixed on purpose.
CALCULATOR_APPS: frozenset[str] = frozenset(
    {"calculator", "com.apple.calculator", "org.gnome.calculator"}
)

_COORDINATE_ACTIONS: frozenset[str] = frozenset({"click_at", "drag"})
_TEXT_ACTIONS: frozenset[str] = frozenset({"set_value", "type_text"})
_FOCUS_ACTIONS: frozenset[str] = frozenset({"type_text", "press_key"})
_DIRECTIONS: dict[str, Direction] = {"up": "up", "down": "down", "left": "left", "right": "right"}
_CONTROL = re.compile(r"[\x00-\x1f\x7f]")  # C0 controls and DEL; \n and \t included


# --- sensitive labels -----------------------------------------------------------------------


class SensitiveWords(NamedTuple):
    """One family's vocabulary. Chinese terms and ``phrases`` match anywhere in the label;
    English ``words`` only when not part of a longer ASCII word."""

    family: str
    chinese: tuple[str, ...]
    words: tuple[str, ...]
    phrases: tuple[str, ...]


def _family(family: str, chinese: str, words: str = "", phrases: str = "") -> SensitiveWords:
    def split(terms: str) -> tuple[str, ...]:
        return tuple(t for t in terms.split("|") if t)

    return SensitiveWords(family, split(chinese), split(words), split(phrases))


# Checked in this order; the first family found in the label names the reason.
SENSITIVE_WORDS: tuple[SensitiveWords, ...] = (
    _family("delete", "删除|移除|清空", "delete|remove|erase|clear all"),
    _family("send", "发送|提交|发布|回复", "send|submit|post|publish|reply"),
    _family("payment", "支付|付款|购买|下单|充值|订阅|开通", "pay|purchase|buy|subscribe|checkout"),
    _family(
        "auth",
        "授权|权限|登录|密码|验证码",
        "authorize|permission|sign in|log in|login|password|captcha|credential",
    ),
    _family("share", "上传|分享|导出", "upload|share|export"),
    _family("install", "安装", "install"),
    _family("settings", "系统设置|偏好设置|安全设置", phrases="system settings|security settings"),
)


def _english(term: str) -> str:
    # Inner spaces of a phrase accept any run of whitespace or hyphens ("sign-in", "clear  all").
    return r"[\s\-]+".join(re.escape(part) for part in term.split())


def _compile(words: SensitiveWords) -> re.Pattern[str]:
    # ASCII word boundaries (as in the predecessor's JavaScript regexes), so an English word
    # written between Chinese characters still counts, while "Sender" does not contain "send".
    options = [re.escape(w) for w in words.chinese]
    options += [rf"(?<![A-Za-z0-9_]){_english(w)}(?![A-Za-z0-9_])" for w in words.words]
    options += [_english(p) for p in words.phrases]
    return re.compile("|".join(options), re.IGNORECASE)


SENSITIVE_FAMILIES: tuple[tuple[str, re.Pattern[str]], ...] = tuple(
    (w.family, _compile(w)) for w in SENSITIVE_WORDS
)


def sensitive_family(label: str) -> str | None:
    """The first family whose vocabulary appears in ``label``, or None when the label is benign."""
    for family, pattern in SENSITIVE_FAMILIES:
        if pattern.search(label):
            return family
    return None


# --- decision validity ----------------------------------------------------------------------


def _number(value: object) -> float | None:
    """``value`` as a finite float, or None for anything else (booleans included)."""
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        return None
    return float(value)


def _unit(value: object) -> bool:
    number = _number(value)
    return number is not None and 0.0 <= number <= 1.0


def _index(value: object) -> bool:
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value <= MAX_INDEX


def is_valid(decision: Decision) -> bool:
    """True when the action is known, all three scores are finite numbers in [0, 1] and the
    target index is absent or a non-negative integer. Booleans do not count as numbers."""
    return (
        decision.action in ACTIONS
        and _unit(decision.confidence)
        and _unit(decision.risk)
        and _unit(decision.done)
        and (decision.target_index is None or _index(decision.target_index))
    )


# --- preparation ----------------------------------------------------------------------------


class PrepareError(ValueError):
    """The planner's resources cannot turn this decision into a concrete action."""


def _point(value: object) -> tuple[float, float] | None:
    if not isinstance(value, tuple | list) or len(value) != 2:
        return None
    x, y = _number(value[0]), _number(value[1])
    if x is None or y is None or x < 0 or y < 0:
        return None
    return (x, y)


def prepare(decision: Decision, resources: Resources) -> Prepared:
    """Combine a decision with the planner's resources into the exact action to dispatch.

    Jev only chooses the action and the element; text, keys, scroll directions and coordinates
    always come from the planner, and nothing is ever filled in by default. Raises
    :class:`PrepareError` naming what is missing or wrong.
    """
    action = decision.action
    if action not in ACTIONS:
        raise PrepareError("The decision names no known action, so there is nothing to prepare.")
    if action in ("wait", "ask_user"):
        return Prepared(kind=action)
    if action == "click_at":
        at = _point(resources.at)
        if at is None:
            raise PrepareError(
                "click_at needs the planner to supply 'at': two finite, non-negative coordinates."
            )
        return Prepared(kind=action, at=at)
    if action == "drag":
        start, end = _point(resources.start), _point(resources.end)
        if start is None or end is None:
            raise PrepareError(
                "drag needs the planner to supply 'start' and 'end', each two finite, "
                "non-negative coordinates."
            )
        return Prepared(kind=action, start=start, end=end)
    return _prepare_element(action, decision.target_index, resources)


def _prepare_element(action: Action, index: int | None, resources: Resources) -> Prepared:
    if resources.at is not None or resources.start is not None or resources.end is not None:
        raise PrepareError(
            f"{action} acts on a candidate element; the planner must leave out "
            "'at', 'start' and 'end'."
        )
    if index is None or not _index(index):
        raise PrepareError(
            f"{action} needs the decision to name a current candidate index; "
            "ask again over fresh candidates."
        )
    if action == "click_element":
        return Prepared(kind=action, index=index)
    if action in _TEXT_ACTIONS:
        text = resources.text
        empty_ok = action == "set_value"  # an empty value clears a field; empty typing is a no-op
        if not isinstance(text, str) or len(text) > MAX_TEXT or not (text or empty_ok):
            need = "a string" if empty_ok else "a non-empty string"
            raise PrepareError(
                f"{action} needs the planner to supply 'text' as {need} "
                f"of at most {MAX_TEXT} characters."
            )
        return Prepared(kind=action, index=index, text=text)
    if action == "press_key":
        key = resources.key
        if not isinstance(key, str) or not key.strip() or len(key) > MAX_KEY:
            raise PrepareError(
                f"press_key needs the planner to supply 'key' (not blank, at most {MAX_KEY} "
                "characters); no key such as Return is ever assumed."
            )
        return Prepared(kind=action, index=index, key=key)
    direction = _DIRECTIONS.get(str(resources.direction))
    if direction is None:
        raise PrepareError(
            "scroll needs the planner to supply 'direction': one of up, down, left or right."
        )
    return Prepared(kind=action, index=index, direction=direction)


# --- the gate table -------------------------------------------------------------------------


class Facts(NamedTuple):
    """Everything a rule may look at; built once per evaluation."""

    app: str
    allowed: Callable[[str], bool]
    decision: Decision
    target: Element | None
    prepared: Prepared | None
    focus: int | None

    def score(self, name: Literal["confidence", "risk", "done"]) -> float:
        """The named score, NaN when absent or not finite (every comparison with NaN is false)."""
        number = _number(getattr(self.decision, name))
        return math.nan if number is None else number

    @property
    def kind(self) -> str | None:
        return self.prepared.kind if self.prepared is not None else None

    @property
    def target_role(self) -> str | None:
        return self.target.role.casefold() if self.target is not None else None

    @property
    def min_confidence(self) -> float:
        calculator = self.app.strip().casefold() in CALCULATOR_APPS
        button = self.decision.action == "click_element" and self.target_role == "button"
        return CALCULATOR_MIN_CONFIDENCE if calculator and button else MIN_CONFIDENCE


def _unknown_target(f: Facts) -> bool:
    wanted = f.decision.target_index
    return wanted is not None and (f.target is None or f.target.index != wanted)


def _index_mismatch(f: Facts) -> bool:
    index = f.prepared.index if f.prepared is not None else None
    return index is not None and (f.target is None or index != f.target.index)


def _control_text(f: Facts) -> bool:
    text = f.prepared.text if f.prepared is not None else None
    return f.kind in _TEXT_ACTIONS and text is not None and _CONTROL.search(text) is not None


def _focus_elsewhere(f: Facts) -> bool:
    index = f.prepared.index if f.prepared is not None else None
    return f.kind in _FOCUS_ACTIONS and (f.focus is None or f.focus != index)


def _non_navigation_key(f: Facts) -> bool:
    key = f.prepared.key if f.prepared is not None else None
    return f.kind == "press_key" and (key or "").lower() not in NAVIGATION_KEYS


class Rule(NamedTuple):
    """One row of the gate table; ``{family}`` in a reason is filled with the sensitive family."""

    reason: str
    verdict: Verdict
    fires: Callable[[Facts], bool]


# Evaluated top to bottom; the first rule that fires decides.
RULES: tuple[Rule, ...] = (
    Rule("app_not_allowed", "stop", lambda f: not f.allowed(f.app)),
    Rule("invalid_decision", "escalate", lambda f: not is_valid(f.decision)),
    Rule("unknown_target", "escalate", _unknown_target),
    Rule("model_claimed_completion", "model_done", lambda f: f.score("done") >= DONE_AT),
    Rule("model_requested_user", "confirm", lambda f: f.decision.action == "ask_user"),
    Rule(
        "sensitive_{family}",
        "confirm",
        lambda f: f.target is not None and sensitive_family(f.target.label) is not None,
    ),
    Rule("model_risk", "confirm", lambda f: f.score("risk") >= RISK_CONFIRM_AT),
    Rule("low_confidence", "stop", lambda f: f.score("confidence") < STOP_BELOW),
    Rule("uncertain_target", "escalate", lambda f: f.score("confidence") < f.min_confidence),
    Rule("missing_action", "escalate", lambda f: f.prepared is None),
    Rule("coordinates_require_handoff", "confirm", lambda f: f.kind in _COORDINATE_ACTIONS),
    Rule("action_target_mismatch", "escalate", _index_mismatch),
    Rule(
        "target_not_editable",
        "escalate",
        lambda f: f.kind in _TEXT_ACTIONS and f.target_role not in EDITABLE_ROLES,
    ),
    Rule("control_characters_require_handoff", "confirm", _control_text),
    Rule("focus_not_target", "escalate", _focus_elsewhere),
    Rule("key_requires_handoff", "confirm", _non_navigation_key),
    Rule("policy_passed", "proceed", lambda f: True),
)


def evaluate(
    *,
    app: str,
    allowed: Callable[[str], bool],
    decision: Decision,
    target: Element | None,
    prepared: Prepared | None,
    focus: int | None,
) -> Gate:
    """Run :data:`RULES` in order and return the first that fires.

    ``target`` is the candidate the decision points at: the caller passes None when the decision's
    index names no current candidate (or names none at all). ``prepared`` is None when
    :func:`prepare` failed; ``focus`` is the index of the focused element, if known.
    """
    facts = Facts(app, allowed, decision, target, prepared, focus)
    rule = next(rule for rule in RULES if rule.fires(facts))  # the last rule always fires
    family = sensitive_family(target.label) if target is not None else None
    return Gate(verdict=rule.verdict, reason=rule.reason.format(family=family))


def handoff_reason(gate: Gate) -> bool:
    """True when the task loop may give this gate back to the planner instead of ending."""
    return gate.reason in HANDOFF_REASONS and gate.verdict in ("escalate", "stop")
