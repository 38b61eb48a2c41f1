"""The one place where a backend's answer to a call becomes Deskhand's result or error.

What this owns: reading what a backend result means for the call and the session, after
:func:`deskhand_d.backends.mcpclient.results.classify` has sorted it into a
:class:`~deskhand_d.backends.mcpclient.results.Kind` (that module reads the wire only: the
kinds, Sky's exact texts, the delivery and effect notes; it stays with the MCP client because
the connection classifies every result, and ``backends/`` never imports ``native/``). The native
service calls :func:`observed` after ``get_app_state`` and :func:`acted` after an action; each
returns when the result is to be used as it is, and otherwise raises the error the client gets,
with the session updated first:

* the kinds (:func:`raise_for_kind`): a stop notice, a declined or cancelled approval, an
  unauthenticated sender and a partial update where a full tree was needed each become their
  own error (a stop or a decline bans launching that app for the rest of the turn); a
  backend's own delivery note (:func:`raise_input_stopped`) says exactly how far the input got;
* the person changing the app under an action (Sky's ``The user changed ...``):
  ``state_changed``, and the app needs a fresh observation;
* the backend's refusals of a call's arguments or target (:func:`explain`).

Sky answers a bad argument with an ``isError`` text such as ``Computer Use server error -10005:
invalidParameter`` or ``The element ID is no longer valid``; the Linux and simulated backends
answer with the same texts. Passed on as they are, they leave the reader guessing which
argument was wrong, and some name tools the reader does not have (``tool_search``,
``get_app_state``). :func:`explain` turns each one it knows into a
:class:`~deskhand_d.errors.BackendRefused` (or a state error) whose message says, in our words,
what was wrong with this call and what to do, naming the next step in the caller's vocabulary
(:mod:`deskhand_d.nextsteps`); the backend's text stays in ``data.backend_text``. Texts it does not
know (permissions, a locked screen, a timeout) are left to the caller, unchanged: an action's
error result is then an ``ok: false`` reply, an observation's a ``backend_error``.

The texts are matched here on their own, not imported from the simulator, so that a simulator
that drifts from Sky cannot hide the drift: a test checks every simulator text against this
(``tests/native/test_interpret.py`` feeds Sky's and the simulator's answers through it).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from deskhand_d import errors as E
from deskhand_d.backends.mcpclient.connection import CallResult
from deskhand_d.backends.mcpclient.results import Kind, Shortfall
from deskhand_d.native.sessions import Session
from deskhand_d.nextsteps import PROTOCOL, Words, action

USER_CHANGED: Final = "The user changed"
"""Sky's answer to an action when the person changed the app since the observation."""
_LIMIT = 2000  # of the backend's text kept in data


def observed(session: Session, app: str, res: CallResult, words: Words = PROTOCOL) -> None:
    """Raise the error a ``get_app_state`` result means, if it is not an observation to use."""
    out = res.output
    raise_for_kind(session, app, res, observing=True, words=words)
    if out.is_error:
        known = explain("get_app_state", {"app": app}, app, out.text, words)
        raise known or E.BackendError(
            f"the backend could not observe {app!r}: {out.text.strip()[:500]}",
            data={"app": app, "text": out.text[:_LIMIT]},
        )
    if not res.usable:
        raise E.ApprovalCancelled(
            "the backend answered before the approval was settled; observe again",
            data={"app": app},
        )
    if not out.text.strip() and not out.images:
        raise E.BackendError("the backend returned an empty observation; observe again")


def acted(
    session: Session,
    app: str,
    tool: str,
    args: Mapping[str, Any],
    res: CallResult,
    words: Words = PROTOCOL,
    *,
    bounds: tuple[int, int] | None = None,
) -> None:
    """Raise the error an action's result means: a refusal the backend gave in its own terms
    becomes ours; other errors stay an ``ok: false`` result (this returns). ``bounds``: the
    observation's screenshot size."""
    out = res.output
    raise_for_kind(session, app, res, observing=False, words=words)
    if not res.usable:
        session.launch_banned.add(app)
        raise E.OutcomeUnknown(
            f"{action(tool)} was answered while an approval was still open; whether it "
            "took effect is unknown, so observe again",
            data={"app": app},
        )
    if out.is_error and USER_CHANGED in out.text:
        session.recovery.add(app)
        session.invalidate("the person changed the app")
        raise E.StateChanged(
            f"the person changed {app!r} meanwhile, so nothing was done; observe it again "
            f"({words.observe(app)}) before anything else",
            data={"app": app, "backend_text": out.text[:_LIMIT]},
            delivery="dispatched",
        )
    if out.kind is Kind.TOOL_ERROR:
        known = explain(tool, args, app, out.text, words, bounds=bounds)
        sent_nothing = out.shortfall is not None and out.shortfall.state == "refused"
        if known is None and sent_nothing:
            known = E.BackendRefused(
                f"the backend did not carry out {action(tool)} on {app!r} and sent it "
                f"nothing: {detail(out.text)}",
                data={"app": app, "tool": tool, "backend_text": out.text[:_LIMIT]},
            )
        if known is not None:
            if sent_nothing:  # the backend's word, stronger than the code's default
                known.delivery = "refused"
                if "nothing was" not in known.message.lower():
                    known.message += "; nothing was sent"
            raise known


# ----- the kinds ----------------------------------------------------------------------------


def raise_for_kind(
    session: Session, app: str, res: CallResult, *, observing: bool, words: Words = PROTOCOL
) -> None:
    kind = res.output.kind
    if kind is Kind.INPUT_STOPPED:
        raise_input_stopped(session, app, res)
    if kind is Kind.SESSION_STOPPED:
        session.launch_banned.add(app)
        session.invalidate("the person stopped the session")
        raise E.SessionStopped(
            "the person stopped computer use for this turn; stop and tell them, and wait for "
            "their next message",
            data={"app": app},
            delivery="refused" if observing else "unknown",
        )
    if kind is Kind.APPROVAL_DECLINED:
        session.launch_banned.add(app)
        person = words.person()
        raise E.ApprovalDeclined(
            f"{person[:1].upper()}{person[1:]} declined the backend's approval for {app!r}, so "
            f"nothing ran. Leave {app!r} alone for the rest of this turn: in a new turn "
            f"({words.new_turn()}) the backend asks again",
            data={"app": app, "approval_reason": res.approval_reason},
            delivery="refused",
        )
    if kind is Kind.APPROVAL_CANCELLED:
        raise E.ApprovalCancelled(
            f"the approval for {app!r} was cancelled ({res.approval_reason or 'no answer'}); "
            "nothing ran",
            data={"app": app, "approval_reason": res.approval_reason},
            delivery="refused",
        )
    if kind is Kind.NOT_AUTHENTICATED:
        raise E.BackendUnavailable(
            "the backend refuses tool calls from this process (not authenticated); run "
            "`deskhandctl doctor`",
            delivery="refused",
        )
    if kind is Kind.PARTIAL_UPDATE and observing:
        raise E.BackendError(
            "the backend sent a partial update instead of a full tree; observe again",
            data={"app": app},
            delivery="dispatched",
        )


def _count(short: Shortfall) -> E.Count | None:
    if short.done is None or short.total is None:
        return None
    return E.Count(short.done, short.total, short.unit)


def raise_input_stopped(session: Session, app: str, res: CallResult) -> None:
    """The backend stopped its input part-way (or before it began): say exactly how far."""
    short = res.output.shortfall
    assert short is not None
    count = _count(short)
    sent = f"; {count.describe()} had been sent" if count is not None else ""
    session.invalidate("the last action was stopped part-way")
    data: dict[str, Any] = {"app": app, "reason": short.reason}
    noted = _noted(session, app, short, count, sent, data)
    if noted is not None:
        raise noted
    if short.state == "unknown":
        session.launch_banned.add(app)
        raise E.OutcomeUnknown(
            f"{app!r} went away or failed while the action was being sent{sent}; what it did "
            "is unknown. Observe it again (nothing is retried)",
            data=data,
            delivered=count,
        )
    if short.reason == "target_gone":
        raise E.InputTargetChanged(
            f"{app!r} quit before the input could be sent; nothing was sent. Observe it again",
            data=data,
            delivery="refused",
            delivered=count,
        )
    where = (
        "another program's window would have received it"
        if short.reason == "target_changed"
        else "it was stopped"
    )
    if short.state == "refused":
        raise E.InputTargetChanged(
            f"no input was sent to {app!r}: {where}. Bring the app back to the front (or "
            "uncover it) and observe it again",
            data=data,
            delivery="refused",
            delivered=count,
        )
    raise E.InputTargetChanged(
        f"the input to {app!r} was stopped part-way because {where}{sent}; nothing more was "
        "sent. Observe the app again to see what it holds now",
        data=data,
        delivery="partial",
        delivered=count,
    )


#: The reply's error code for each note of Deskhand's Linux backend (for the audit log).
NOTE_CODES: dict[str, str] = {
    "app_exited": E.AppExited.code,
    "not_accessible": E.AppNotAccessible.code,
    "focus_elsewhere": E.FocusOutsideApp.code,
    "modal_dialog": E.BlockedByDialog.code,
    "no_effect": E.NoEffect.code,
    "target_changed": E.InputTargetChanged.code,
    "target_gone": E.InputTargetChanged.code,
}

_DURING = {
    "reading": "while its window was being read",
    "starting": "right after it was started, before it showed a window",
    "acting": "while the action's input was being sent",
}


def _noted(
    session: Session,
    app: str,
    short: Shortfall,
    count: E.Count | None,
    sent: str,
    data: dict[str, Any],
) -> E.DeskhandError | None:
    """The error for the notes Deskhand's Linux backend gives (see
    ``deskhand_d.programs.atspi.notes``), or None for the input guard's own stops."""
    reason = short.reason
    if reason == "app_exited":
        how = f" ({short.exit})" if short.exit else ""
        during = _DURING.get(short.during, "while the backend was using it")
        data.update(exit=short.exit, during=short.during)
        if short.state == "unknown":
            session.launch_banned.add(app)
            return E.AppExited(
                f"{app!r} exited{how} {during}{sent}; what it did with the input is unknown "
                "and nothing is retried. Tell the person: unsaved work in it may be lost. "
                "Observe it again only if they want it restarted",
                data=data,
                delivery="unknown",
                delivered=count,
            )
        return E.AppExited(
            f"{app!r} exited{how} {during}; nothing was sent to it. Observing it again starts "
            "it anew (tell the person it crashed: unsaved work in it may be lost)",
            data=data,
            delivery="refused",
        )
    if reason == "not_accessible":
        data["hint"] = short.hint
        if short.hint == "restart_chromium":
            how = (
                "it is a Chromium-based app (a browser or an Electron app) that was started "
                "without --force-renderer-accessibility, and such apps only build their "
                "accessibility tree when started with it"
            )
        else:
            how = (
                "it did not join the desktop's accessibility bus when it started (apps decide "
                "that once, at start)"
            )
        return E.AppNotAccessible(
            f"{app!r} is running, but Deskhand can read nothing of it: {how}. Nothing was sent. "
            f"Ask the person to save their work and quit {app!r}; observing it then starts it "
            "in a way Deskhand can read",
            data=data,
        )
    if reason == "focus_elsewhere":
        return E.FocusOutsideApp(
            f"no keys were sent: the keyboard focus is not on an element inside {app!r}'s "
            "window, so the keys would have gone elsewhere. Click the field to type into by "
            "its element index (that puts the caret there), then type again",
            data=data,
        )
    if reason == "modal_dialog":
        data["dialog"] = short.dialog
        return E.BlockedByDialog(
            f"{app!r} shows the dialog {short.dialog!r}, which takes all input until it is "
            "answered, so nothing was sent to the element behind it. Answer or close the "
            "dialog first (its buttons are in the latest tree), then act again",
            data=data,
        )
    if reason == "no_effect":
        data["what"] = short.what
        what = short.what or "state"
        return E.NoEffect(
            f"the action reached {app!r}, but reading the element back shows its {what} "
            "unchanged: the app did not take it. Setting a value directly is not something "
            "every app honours: click the element by its index and type the text instead, "
            "then check the new tree",
            data=data,
        )
    return None


# ----- the backend's refusals of a call's arguments or target ---------------------------

_PREFIX: Final = re.compile(r"^(?:Computer Use server error|Apple event error) -?\d+: ")
_APP_NOT_FOUND: Final = re.compile(r'^appNotFound\("(.*)"\)$', re.S)
_FORBIDDEN: Final = re.compile(r"^Computer Use is not allowed to use the app '(.*)' for safety")
_POLICY: Final = re.compile(r"^Computer Use is blocked from using the app '(.*)' by your organi")
_AMBIGUOUS: Final = re.compile(r"^Ambiguous app identifier '(.*?)'")
_NOT_ACTIVE: Final = "Computer Use is not active for '"
_RUNNING_GONE: Final = "Running application not found: "
_NO_KEY_CODE: Final = "Could not find key code for character: "
_STALE: Final = (
    "The element ID is no longer valid",
    "The element was invalidated, and an attempt was made to refetch it",
)
_NO_WINDOW: Final = ("noWindowsAvailable", "cgWindowNotFound", "No capturable window found")
_COORDINATE_TOOLS: Final = frozenset({"drag"})
_NO_INPUT: Final = ("X11 input and screenshots are unavailable: ", "Wayland input is unavailable: ")


def detail(text: str) -> str:
    """The backend's sentence without its ``Computer Use server error <code>: `` prefix."""
    text = text.strip()
    match = _PREFIX.match(text)
    return text[match.end() :] if match else text


def _points(tool: str, args: Mapping[str, Any]) -> list[tuple[Any, Any]]:
    if tool == "click" and "x" in args:
        return [(args.get("x"), args.get("y"))]
    if tool in _COORDINATE_TOOLS:
        return [(args.get("from_x"), args.get("from_y")), (args.get("to_x"), args.get("to_y"))]
    return []


def _cap(sentence: str) -> str:
    return sentence[:1].upper() + sentence[1:]


def _shown(value: Any) -> str:
    return f"{value:g}" if isinstance(value, int | float) and not isinstance(value, bool) else "?"


def explain(
    tool: str,
    args: Mapping[str, Any],
    app: str,
    text: str,
    words: Words,
    *,
    bounds: tuple[int, int] | None = None,
) -> E.DeskhandError | None:
    """The Deskhand error for the backend's error ``text`` answering ``tool`` with ``args``
    on ``app``, or None when the text is not one of the refusals read here. ``bounds`` is the
    observation's screenshot size (width, height) when known."""
    said = detail(text)
    data: dict[str, Any] = {"app": app, "tool": tool, "backend_text": text[:_LIMIT]}
    index = args.get("element_index")
    element = f"element {index} of {app!r}"
    observe = f"observe {app!r} again ({words.observe(app)})"

    if said == "invalidParameter":
        return _invalid_parameter(tool, args, app, data, observe, bounds)
    if said.startswith(_STALE) or said.endswith(" is an invalid element ID"):
        return E.ElementGone(
            f"{element} is no longer there: the app changed since the observation, so nothing "
            f"was done. {_cap(observe)} and pick an index from the new tree",
            data=data,
        )
    if said == "the element is not on screen":  # the Linux backend's words
        return E.ElementNotOnScreen(
            f"{element} is not on screen (hidden, or scrolled out of view), so it could not be "
            f"clicked; nothing was done. Scroll it into view or open what holds it, then "
            f"{observe} and try again",
            data=data,
        )
    if said.startswith("Cannot set a value for an element that is not settable"):
        return E.ElementNotSettable(
            f"{element} does not take a value (text fields, sliders and spin buttons do); "
            "nothing was changed. Click it, or type into it once it has the keyboard focus",
            data=data,
        )
    if " is not a valid secondary action for " in said:
        return E.SecondaryActionUnknown(
            f"{args.get('action')!r} is not one of the secondary actions of {element}; nothing "
            "was done. Copy one exactly as it is written in the element's 'Secondary Actions:' "
            "list in the latest observation",
            data=data,
        )
    if said.startswith("Could not find the requested text to select in the element"):
        return E.TextNotFound(
            f"{element} does not contain the text to select as given; nothing was selected. "
            "Copy it exactly as the tree shows it (formatting included), and use the prefix "
            "and suffix only to tell repeated text apart",
            data=data,
        )
    if said.startswith("Cannot select text for an element that does not support"):
        return E.TextNotSelectable(
            f"the text of {element} cannot be selected; nothing was selected. Select text in "
            "a text field or document, or click into it and extend the selection with keys "
            "such as shift+Right",
            data=data,
        )
    if said.startswith(_NO_KEY_CODE):
        char = said[len(_NO_KEY_CODE) :][:1]
        code = f"U+{ord(char):04X}" if char else "a character"
        return E.CharacterNotTypable(
            f"the backend stopped typing: it has no key for the character {char!r} ({code}). "
            f"{_cap(observe)} to see what the field holds now, then type the text without that "
            "character, or set the field's value instead",
            data={**data, "character": char},
        )
    if said.startswith(("Invalid scroll direction: ", "Missing scroll ", "Missing required arg")):
        return E.InvalidArgument(
            f"the backend refused {action(tool)} because an argument is missing or invalid "
            f"({said}); "
            "nothing was done. The backend may not match what Deskhand expects: "
            "`deskhandctl doctor` compares its tools",
            data=data,
        )
    if said.startswith(_NO_INPUT):
        return E.InputUnavailable(
            f"the backend cannot send keys or clicks to {app!r} on this desktop ({said}). "
            "Clicks by element index that the app carries out itself may still work; "
            "`deskhandctl doctor` shows what is missing and how to add it",
            data=data,
        )
    if said.startswith(_NOT_ACTIVE):
        return E.StateInvalidated(
            f"the backend no longer has a current observation of {app!r} (its use of the app "
            "ended, for example because the app restarted), so nothing was done. "
            f"{_cap(observe)} and use the new stateId",
            data=data,
            delivery="dispatched",
        )
    return _about_the_app(said, app, data, words, observe)


def _invalid_parameter(
    tool: str,
    args: Mapping[str, Any],
    app: str,
    data: dict[str, Any],
    observe: str,
    bounds: tuple[int, int] | None,
) -> E.DeskhandError:
    points = _points(tool, args)
    if points:
        shown = [f"({_shown(x)}, {_shown(y)})" for x, y in points]
        size = ""
        if bounds is not None:
            size = f" (the observation's screenshot is {bounds[0]}x{bounds[1]} pixels)"
            data = {**data, "width": bounds[0], "height": bounds[1]}
        x, y = points[0]
        if len(shown) == 2:
            what = f"the drag from {shown[0]} to {shown[1]}: a point of it is"
            done, instead = "dragged", ""
        else:
            what = f"the point {shown[0]}: it is"
            done, instead = "clicked", ", or click an element by its index"
        return E.CoordinatesOutsideWindow(
            f"the backend refused {what} not on the screen inside the window of {app!r}{size}, "
            f"so nothing was {done}. Coordinates count in the screenshot's pixels from its "
            f"top-left corner. {_cap(observe)} and pick points inside the window{instead}",
            data={**data, "x": x, "y": y},
            delivery="dispatched",
        )
    if tool == "press_key":
        return E.KeyUnknown(
            f"the backend does not know the key {args.get('key')!r}, so nothing was pressed. "
            "Name keys as X11 keysyms joined with '+', for example Return, Tab, Escape, "
            "BackSpace, Page_Down, ctrl+a or shift+Tab",
            data=data,
        )
    if tool == "set_value":
        return E.ValueInvalid(
            f"element {args.get('element_index')} of {app!r} cannot take the value "
            f"{str(args.get('value'))[:80]!r}; nothing was changed. An element that holds a "
            "number (a slider, a spin button) takes a number such as 42 or 0.5",
            data=data,
        )
    return E.InvalidArgument(
        f"the backend refused an argument of {action(tool)} as invalid, so nothing was done. Check "
        f"the arguments against the latest observation; {observe} "
        "if it may be out of date",
        data=data,
    )


def _about_the_app(
    said: str, app: str, data: dict[str, Any], words: Words, observe: str
) -> E.DeskhandError | None:
    if match := _APP_NOT_FOUND.match(said):
        return E.AppNotFound(
            f"the backend knows no app called {match.group(1)!r}, so nothing was done. "
            f"{words.list_apps()} shows the apps it can see: use a name or id from there",
            data=data,
        )
    if match := _FORBIDDEN.match(said):
        return E.AppForbidden(
            f"the backend never operates {app!r} ({match.group(1)}): it keeps terminals, "
            "password managers and similar apps out of reach for safety. Nothing was done, "
            "and Deskhand cannot change that; do this part without computer use",
            data={**data, "reason": "safety"},
        )
    if match := _POLICY.match(said):
        return E.AppForbidden(
            f"your organization's policy blocks computer use of {app!r} ({match.group(1)}). "
            "Nothing was done, and Deskhand cannot change that; ask the administrator",
            data={**data, "reason": "organization_policy"},
        )
    if match := _AMBIGUOUS.match(said):
        return E.AppAmbiguous(
            f"{match.group(1)!r} names more than one app, so nothing was done. Name the app by "
            f"its display name or full path instead ({words.list_apps()} shows them)",
            data=data,
        )
    if said.startswith(_RUNNING_GONE):
        return E.AppNotRunning(
            f"{app!r} is no longer running (it quit or restarted), so nothing was done. "
            f"{_cap(observe)} once it runs, and act on the new observation",
            data=data,
        )
    if said.startswith(_NO_WINDOW):
        return E.NoWindow(
            f"the backend found no window of {app!r} it could use (none is open, or it is "
            "minimized or hidden), so nothing was done. Open or show a window of the app, then "
            f"{observe}",
            data=data,
        )
    return None
