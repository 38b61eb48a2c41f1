"""The backend's refusals of a call's arguments or target, read into Deskhand's own codes. Pure.

Sky answers a bad argument with an ``isError`` text such as ``Computer Use server error -10005:
invalidParameter`` or ``The element ID is no longer valid``; the Linux and simulated backends
answer with the same texts. Passed on as they are, they leave the reader guessing which
argument was wrong, and some name tools the reader does not have (``tool_search``,
``get_app_state``). :func:`explain` turns each one it knows into a
:class:`~deskhand_d.errors.BackendRefused` (or a state error) whose message says, in our words,
what was wrong with this call and what to do, naming the next step in the caller's vocabulary
(:mod:`deskhand_d.words`); the backend's text stays in ``data.backend_text``. Texts it does not
know (permissions, a locked screen, a timeout) are left to the caller, unchanged.

The texts are matched here on their own, not imported from the simulator, so that a simulator
that drifts from Sky cannot hide the drift: a test checks every simulator text against this.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, Final

from deskhand_d import errors as E
from deskhand_d.words import Words, action

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
_LIMIT = 2000  # of the backend's text kept in data


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
