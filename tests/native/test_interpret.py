"""The one interpreter of a backend's answer (``deskhand_d.native.interpret``), table-driven.

Each row is an answer as a backend sends it, the call it answers (an observation or an action)
and what the client then gets: the kind :func:`~deskhand_d.backends.mcpclient.results.classify` reads, then
the error code and its delivery, or ``ok`` when the result is used as it is (an action's
``ok: false`` reply included). Sky's answers are written out here as the spec gives them
(docs: /work/shared/specs/sky-protocol.md), not taken from the server's texts module; the
simulator's are produced by its engine, so a simulator that drifts from Sky shows here too.
"""

from __future__ import annotations

from typing import Any

import pytest

from deskhand_d import errors as E
from deskhand_d import surface
from deskhand_d.backends.mcpclient.connection import CallResult
from deskhand_d.backends.mcpclient.results import Kind, classify
from deskhand_d.native import interpret
from deskhand_d.native.sessions import Session
from deskhand_d.programs.core.tools import call_result
from deskhand_d.programs.sim.engine import INJECT_META_KEY, Engine
from deskhand_d.programs.sim.scenario import Scenario

APP = "com.apple.TextEdit"
STOP = (
    "This application session has been explicitly stopped by the user for this turn. Stop your "
    "work and send a final message noting they stopped the session and you're ready to continue "
    "if they want you to. Computer Use can be used again in the next assistant turn."
)
TREE = (
    "Computer Use state (CUA App Version: 1001103)\n<app_state>\n"
    "App=/System/Applications/TextEdit.app/ (bundleID com.apple.TextEdit, pid 412)\n"
    'Window: "Untitled", App: TextEdit.\n0 standard window Untitled\n\t1 text area Value: hi\n'
    "</app_state>"
)
DIFF = 'The following is a diff from the previous accessibility tree for Window: "Untitled"\n'

OBSERVE: tuple[str, dict[str, Any]] = ("get_app_state", {})
CLICK: tuple[str, dict[str, Any]] = ("click", {"element_index": 4})
Expected = tuple[Kind, str, E.Delivery | None]  # the kind, the code ("ok": none), the delivery


def _result(text: str, *, error: bool = True, note: dict[str, Any] | None = None) -> Any:
    result: dict[str, Any] = {"content": [{"type": "text", "text": text}]}
    if error:
        result["isError"] = True
    if note is not None:
        result["_meta"] = {surface.DELIVERY_META: note}
    return result


def _interpret(
    result: Any, call: tuple[str, dict[str, Any]], *, usable: bool = True
) -> tuple[Kind, str, E.Delivery | None, Session]:
    """The kind read, and the code and delivery of the error raised (``ok``, None: none)."""
    output = classify(result)
    res = CallResult(
        output=output, approval_reason=None, approvals_asked=0, usable=usable, elapsed_s=0.0
    )
    session = Session(session_id="s", name="", mode="native")
    tool, args = call
    try:
        if tool == "get_app_state":
            interpret.observed(session, APP, res)
        else:
            interpret.acted(session, APP, tool, args, res, bounds=(800, 600))
    except E.DeskhandError as exc:
        return output.kind, exc.code, exc.delivery, session
    return output.kind, "ok", None, session


def _err(kind: Kind, error: type[E.DeskhandError], delivery: E.Delivery | None = None) -> Expected:
    """An error expected with ``delivery``, or (None) with its class's own."""
    return kind, error.code, delivery or error.default_delivery


T, OK = Kind.TOOL_ERROR, Kind.OK

# (name, the answer, the call, usable, expected)
SKY: list[tuple[str, Any, tuple[str, dict[str, Any]], bool, Expected]] = [
    ("tree", _result(TREE, error=False), OBSERVE, True, (OK, "ok", None)),
    ("action tree", _result(TREE, error=False), CLICK, True, (OK, "ok", None)),
    ("receipt", _result("Action completed. Call `get_app_state` to fetch the updated UI state.",
                        error=False), CLICK, True, (OK, "ok", None)),
    ("stop, observing", _result(STOP), OBSERVE, True,
     _err(Kind.SESSION_STOPPED, E.SessionStopped, "refused")),
    ("stop, acting", _result(STOP), CLICK, True,
     _err(Kind.SESSION_STOPPED, E.SessionStopped, "unknown")),
    ("stop without isError", _result(STOP, error=False), CLICK, True,
     _err(Kind.SESSION_STOPPED, E.SessionStopped, "unknown")),
    ("stop with a code", _result("Computer Use server error -10012: " + STOP), CLICK, True,
     _err(Kind.SESSION_STOPPED, E.SessionStopped, "unknown")),
    ("stop inside a document", _result(TREE.replace("Value: hi", "Value: " + STOP), error=False),
     OBSERVE, True, (OK, "ok", None)),
    ("approval denied",
     _result(f"Computer Use approval denied via MCP elicitation for app '{APP}'."), OBSERVE, True,
     _err(Kind.APPROVAL_DECLINED, E.ApprovalDeclined, "refused")),
    ("approval canceled",
     _result(f"Computer Use permission request canceled for app '{APP}'."), OBSERVE, True,
     _err(Kind.APPROVAL_CANCELLED, E.ApprovalCancelled, "refused")),
    ("not authenticated",
     _result("Computer Use server error -10000: Sender process is not authenticated"), CLICK, True,
     _err(Kind.NOT_AUTHENTICATED, E.BackendUnavailable, "refused")),
    ("partial update, observing", _result(DIFF, error=False), OBSERVE, True,
     _err(Kind.PARTIAL_UPDATE, E.BackendError, "dispatched")),
    ("partial update, acting", _result(DIFF, error=False), CLICK, True,
     (Kind.PARTIAL_UPDATE, "ok", None)),
    ("user changed", _result(
        "The user changed '/System/Applications/TextEdit.app/'. Re-query the latest state with "
        "`get_app_state` before sending more actions."), CLICK, True,
     _err(T, E.StateChanged, "dispatched")),
    ("user changed, observing", _result("The user changed '/Applications/X.app/'."), OBSERVE,
     True, _err(T, E.BackendError, None)),
    ("stale element", _result(
        "The element ID is no longer valid. Try to get the on-screen content again and see if "
        "that resolves the issue."), CLICK, True, _err(T, E.ElementGone, None)),
    ("invalid element id", _result("x7 is an invalid element ID"), CLICK, True,
     _err(T, E.ElementGone, None)),
    ("point outside", _result("Computer Use server error -10005: invalidParameter"),
     ("click", {"x": 900, "y": 40}), True, _err(T, E.CoordinatesOutsideWindow, "dispatched")),
    ("unknown key", _result("Computer Use server error -10005: invalidParameter"),
     ("press_key", {"key": "hyper+q"}), True, _err(T, E.KeyUnknown, None)),
    ("bad value", _result("Computer Use server error -10005: invalidParameter"),
     ("set_value", {"element_index": 4, "value": "ten"}), True, _err(T, E.ValueInvalid, None)),
    ("invalid parameter", _result("Computer Use server error -10005: invalidParameter"),
     CLICK, True, _err(T, E.InvalidArgument, None)),
    ("not settable", _result("Cannot set a value for an element that is not settable"),
     ("set_value", {"element_index": 4, "value": "x"}), True,
     _err(T, E.ElementNotSettable, None)),
    ("text not found", _result("Could not find the requested text to select in the element"),
     ("select_text", {"element_index": 4, "text": "x"}), True, _err(T, E.TextNotFound, None)),
    ("no selection", _result(
        "Cannot select text for an element that does not support a settable selected text "
        "range"), ("select_text", {"element_index": 4, "text": "x"}), True,
     _err(T, E.TextNotSelectable, None)),
    ("secondary action", _result("Raise is not a valid secondary action for 4 button"),
     ("perform_secondary_action", {"element_index": 4, "action": "Raise"}), True,
     _err(T, E.SecondaryActionUnknown, None)),
    ("no key code", _result("Could not find key code for character: é"),
     ("type_text", {"text": "é"}), True, _err(T, E.CharacterNotTypable, None)),
    ("missing scroll direction", _result("Missing scroll direction"),
     ("scroll", {"element_index": 4}), True, _err(T, E.InvalidArgument, None)),
    ("not active", _result(
        f"Computer Use is not active for '{APP}'. You first must call `get_app_state` to get the "
        "latest state before doing other Computer Use actions."), CLICK, True,
     _err(T, E.StateInvalidated, "dispatched")),
    ("app not found", _result('appNotFound("Nope")'), OBSERVE, True,
     _err(T, E.AppNotFound, None)),
    ("forbidden", _result(
        "Computer Use is not allowed to use the app 'com.apple.Terminal' for safety reasons."),
     OBSERVE, True, _err(T, E.AppForbidden, None)),
    ("organization policy", _result(
        f"Computer Use is blocked from using the app '{APP}' by your organization's policy."),
     OBSERVE, True, _err(T, E.AppForbidden, None)),
    ("not running", _result(f"Running application not found: {APP}"), CLICK, True,
     _err(T, E.AppNotRunning, None)),
    ("no windows", _result("Computer Use server error -10005: noWindowsAvailable"), OBSERVE,
     True, _err(T, E.NoWindow, None)),
    ("no cg window", _result("Computer Use server error -10005: cgWindowNotFound"), OBSERVE,
     True, _err(T, E.NoWindow, None)),
    ("timeout, acting", _result("Computer Use server error -10005: timeoutReached"), CLICK,
     True, (T, "ok", None)),
    ("timeout, observing", _result("Computer Use server error -10005: timeoutReached"), OBSERVE,
     True, _err(T, E.BackendError, None)),
    ("locked screen", _result(
        "The Mac is locked and automatic unlock could not unlock it. Ask the user to unlock the "
        "Mac manually before continuing."), CLICK, True, (T, "ok", None)),
    ("permissions missing", _result("Computer Use permissions are not granted"), CLICK, True,
     (T, "ok", None)),
    ("answered while an approval was open", _result(TREE, error=False), CLICK, False,
     _err(OK, E.OutcomeUnknown, "unknown")),
    ("observed while an approval was open", _result(TREE, error=False), OBSERVE, False,
     _err(OK, E.ApprovalCancelled, "refused")),
    ("empty observation", _result("", error=False), OBSERVE, True,
     _err(OK, E.BackendError, None)),
]  # fmt: skip

# Deskhand's own backends' delivery notes (docs/backend.md, "deskhand/delivery").
NOTES: list[tuple[str, dict[str, Any], Expected]] = [
    ("focus moved", {"state": "refused", "reason": "target_changed"},
     _err(Kind.INPUT_STOPPED, E.InputTargetChanged, "refused")),
    ("part-way", {"state": "partial", "reason": "target_changed", "done": 2, "total": 5,
                  "unit": "characters"},
     _err(Kind.INPUT_STOPPED, E.InputTargetChanged, "partial")),
    ("app gone before", {"state": "refused", "reason": "target_gone"},
     _err(Kind.INPUT_STOPPED, E.InputTargetChanged, "refused")),
    ("unknown", {"state": "unknown", "reason": "stopped"},
     _err(Kind.INPUT_STOPPED, E.OutcomeUnknown, "unknown")),
    ("exited while acting", {"state": "unknown", "reason": "app_exited", "during": "acting"},
     _err(Kind.INPUT_STOPPED, E.AppExited, "unknown")),
    ("exited while reading", {"state": "refused", "reason": "app_exited", "during": "reading"},
     _err(Kind.INPUT_STOPPED, E.AppExited, "refused")),
    ("not accessible", {"state": "refused", "reason": "not_accessible"},
     _err(Kind.INPUT_STOPPED, E.AppNotAccessible, "refused")),
    ("modal dialog", {"state": "refused", "reason": "modal_dialog", "dialog": "Save?"},
     _err(Kind.INPUT_STOPPED, E.BlockedByDialog, "refused")),
    ("no effect", {"state": "dispatched", "reason": "no_effect", "what": "value"},
     _err(Kind.INPUT_STOPPED, E.NoEffect, "dispatched")),
    ("not sent, unknown text", {"state": "refused", "reason": "not_sent"},
     _err(T, E.BackendRefused, "refused")),
]  # fmt: skip


@pytest.mark.parametrize(
    ("answer", "call", "usable", "expected"),
    [pytest.param(*row[1:], id=row[0]) for row in SKY],
)
def test_sky_answers(
    answer: Any, call: tuple[str, dict[str, Any]], usable: bool, expected: Expected
) -> None:
    assert _interpret(answer, call, usable=usable)[:3] == expected


@pytest.mark.parametrize(("note", "expected"), [pytest.param(*r[1:], id=r[0]) for r in NOTES])
def test_delivery_notes(note: dict[str, Any], expected: Expected) -> None:
    answer = _result("the backend's sentence", note=note)
    assert _interpret(answer, ("type_text", {"text": "hello"}))[:3] == expected


def test_a_known_refusal_with_a_not_sent_note_says_nothing_was_sent() -> None:
    note = {"state": "refused", "reason": "not_sent"}
    answer = _result("Computer Use server error -10005: timeoutReached", note=note)
    assert _interpret(answer, CLICK)[:3] == _err(T, E.BackendRefused, "refused")
    stale = _result("The element ID is no longer valid", note=note)
    assert _interpret(stale, CLICK)[:3] == _err(T, E.ElementGone, "refused")


def test_what_the_session_keeps() -> None:
    """A stop or a decline bans launching the app; the person's change asks for a new look."""
    *_, stopped = _interpret(_result(STOP), CLICK)
    assert stopped.launch_banned == {APP}
    declined = _result(f"Computer Use approval denied via MCP elicitation for app '{APP}'.")
    assert _interpret(declined, OBSERVE)[3].launch_banned == {APP}
    *_, changed = _interpret(_result("The user changed '/Applications/X.app/'."), CLICK)
    assert changed.recovery == {APP} and not changed.launch_banned


async def _simulated(
    scenario: Scenario, tool: str, args: dict[str, Any], meta: dict[str, Any]
) -> Any:
    """The ``tools/call`` result the simulator's engine answers (approvals accepted)."""

    async def approve(_: object) -> str:
        return "accept"

    outcome = await Engine(scenario).call(tool, args, meta, 1, approve)
    return call_result(outcome, telemetry=True)


# The simulator's injected errors (docs/simulator.md, "inject") and what each becomes.
SIM: list[tuple[str, str, Expected]] = [
    ("stop", "click", _err(Kind.SESSION_STOPPED, E.SessionStopped, "unknown")),
    ("unauthenticated", "click", _err(Kind.NOT_AUTHENTICATED, E.BackendUnavailable, "refused")),
    ("noWindowsAvailable", "get_app_state", _err(T, E.NoWindow, None)),
    ("cgWindowNotFound", "get_app_state", _err(T, E.NoWindow, None)),
    ("timeoutReached", "click", (T, "ok", None)),
    ("invalidParameter", "click", _err(T, E.InvalidArgument, None)),
    ("permissionsPending", "click", (T, "ok", None)),
    ("permissionsMissing", "click", (T, "ok", None)),
    ("screenLocked", "click", (T, "ok", None)),
    ("screenLockedNoThread", "click", (T, "ok", None)),
    ("versionMismatch", "click", (T, "ok", None)),
    ("turnEnded", "click", (T, "ok", None)),
    ("userChangedApp", "click", _err(T, E.StateChanged, "dispatched")),
    ("orgPolicy", "get_app_state", _err(T, E.AppForbidden, None)),
    ("runningAppNotFound", "click", _err(T, E.AppNotRunning, None)),
]


@pytest.mark.parametrize(("inject", "tool", "expected"), SIM, ids=[r[0] for r in SIM])
async def test_simulator_answers(inject: str, tool: str, expected: Expected) -> None:
    args = {"app": "TextEdit", "element_index": 4}
    answer = await _simulated(Scenario(), tool, args, {INJECT_META_KEY: inject})
    call = OBSERVE if tool == "get_app_state" else CLICK
    assert _interpret(answer, call)[:3] == expected


@pytest.mark.parametrize(
    ("tool", "args", "expected"),
    [
        ("get_app_state", {"app": "Nope"}, _err(T, E.AppNotFound, None)),
        ("get_app_state", {"app": "com.googlecode.iterm2"}, _err(T, E.AppForbidden)),
        ("scroll", {"app": "TextEdit", "element_index": 1}, _err(T, E.InvalidArgument, None)),
        ("get_app_state", {"app": "TextEdit"}, (OK, "ok", None)),
    ],
)
async def test_simulator_answers_its_own_calls(
    tool: str, args: dict[str, Any], expected: Expected
) -> None:
    answer = await _simulated(Scenario(preapproved=["com.apple.TextEdit"]), tool, args, {})
    call = OBSERVE if tool == "get_app_state" else (tool, args)
    assert _interpret(answer, call)[:3] == expected
