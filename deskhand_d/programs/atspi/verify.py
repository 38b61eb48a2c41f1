"""Whether an action can reach its element, and whether it had its effect.

What this owns: three judgements around an action, so that a reply never says an action worked
when it could not have or did not:

* before input to an element: a modal dialog of the app that would take the input instead
  (:func:`blocking_dialog`, on the latest rendering; pure);
* before keys: where the keyboard focus is (:func:`focus_verdict`, from the focus reports the
  apps send, see :attr:`~.events.Events.focus`; pure);
* after a click by index on an element that toggles (a check box, radio button, tab, row or
  expander): whether its own state has changed yet (:func:`toggled_bits`), so the reply is
  read once it has, for at most :data:`TOGGLE_WAIT_S`; apps that update their tree from
  another process (Firefox's web content, GTK 4 stacks) report the change only after the
  events the settling waits for have gone quiet;
* after ``set_value``, ``type_text`` and ``select_text``: what reading the element back shows
  (:class:`Expectation` and :func:`judge`, pure; :func:`read_back` and the readers beside it
  are the only calls to the app here).

Reading back is the only way to know: toolkits answer ``SetTextContents`` with ``true`` and
leave a web page's field as it was (Firefox), and keys that reach a window with no text focus
change nothing. The verdicts are ``changed`` (the element shows the change), ``unchanged`` (it
shows what it showed before) and ``unreadable`` (the toolkit does not let us tell: no text
interface, a password field, an element that went away).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final, Literal

from .bus import Bus, BusError
from .model import ACCESSIBLE, TEXT, VALUE, Node, Ref
from .render import Rendering, format_value
from .roles import Role, State, states_from_words

Verdict = Literal["changed", "unchanged", "unreadable"]
#: Roles whose text is masked or never handed out: nothing can be read back from them.
_SECRET_ROLES: Final = frozenset({Role.PASSWORD_TEXT})


def _size(node: Node) -> int:
    return sum(1 for _ in node.walk())


def blocking_dialog(rendering: Rendering, index: int) -> str | None:
    """The title of a modal dialog that keeps element ``index`` from getting input, or None.

    A modal dialog takes every input of its app until it is answered: an element outside it
    is blocked, unless it lies in a surface in front of it (a menu or popover opened from the
    dialog is listed before it, see :func:`~.apps.order_surfaces`)."""
    nodes = rendering.nodes
    if not 0 <= index < len(nodes):
        return None
    own_surface = rendering.surface_of(index)
    at = 0
    while at < len(nodes):
        node = nodes[at]
        if node.has(State.MODAL) and at != index:
            end = at + _size(node)
            inside = at <= index < end
            in_front = own_surface < rendering.surface_of(at)
            if not inside and not in_front:
                return node.name or "untitled dialog"
        at += 1
    return None


FocusVerdict = Literal["in_app", "elsewhere", "unknown"]


def focus_verdict(focus: Ref | None, known: bool, bus_name: str) -> FocusVerdict:
    """Where keys would go, from the latest focus report: an object of the app's own bus
    connection (``in_app``), another application's (``elsewhere``), or nobody's that we
    know of (``unknown``: no report yet, or the last holder reported losing it)."""
    if not known or focus is None:
        return "unknown"
    return "in_app" if focus[0] == bus_name else "elsewhere"


@dataclass(frozen=True, slots=True)
class Expectation:
    """What an action should leave in one element: ``what`` is ``value`` (set_value),
    ``text`` (type_text: the typed text appears) or ``selection`` (select_text)."""

    ref: Ref
    what: Literal["value", "text", "selection"]
    before: str | None  # what the element showed before, None when unreadable
    wanted: str | None = None  # the value, selected text or caret place asked for
    numeric: bool = False  # a value read through the Value interface, not as text
    #: Whether the element is known to be where the input went. Where it is only presumed
    #: (on Wayland, the field the caret was last put in, when the toolkit reports no focus),
    #: an element left unchanged proves nothing: the verdict is then ``unreadable``.
    known: bool = True


def readable(node: Node) -> bool:
    """Whether reading ``node`` back can tell anything (not a masked field)."""
    return node.role not in _SECRET_ROLES


def judge(expect: Expectation, after: str | None) -> Verdict:
    """The verdict from what the element shows after the action. Pure.

    A value counts as changed when it now reads as asked, or at least differs from before (an
    app may format it: ``42`` shown as ``42.0``); typed text when the element's text differs
    from before; a selection when it is the one asked for (``before`` holds nothing then)."""
    if after is None or (expect.before is None and expect.what != "selection"):
        return "unreadable"
    if expect.what == "selection":
        return "changed" if after == expect.wanted else "unchanged"
    if expect.what == "value" and after == expect.wanted:
        return "changed"
    if after == expect.before:
        return "unchanged" if expect.known else "unreadable"
    return "changed"


# --- reading back (the only part that talks to the app) --------------------------------------

_CARET: Final = "caret "


def caret_at(offset: int) -> str:
    """How an expected caret position is written in :attr:`Expectation.wanted`."""
    return f"{_CARET}{offset}"


async def read_text(bus: Bus, ref: Ref) -> str | None:
    """The whole text of ``ref``; None when it has none to give (no Text interface, a masked
    field, gone)."""
    try:
        (role,) = await bus.call(ref, ACCESSIBLE, "GetRole")
        if int(role) in _SECRET_ROLES:
            return None
        count = int(await bus.get(ref, TEXT, "CharacterCount"))
        if count <= 0:
            return ""
        (text,) = await bus.call(ref, TEXT, "GetText", "ii", (0, count))
    except BusError:
        return None
    return str(text)


async def read_value(bus: Bus, ref: Ref) -> str | None:
    try:
        return format_value(float(await bus.get(ref, VALUE, "CurrentValue")))
    except (BusError, TypeError, ValueError):
        return None


async def _read_selection(bus: Bus, ref: Ref, wanted: str | None) -> str | None:
    try:
        if wanted is not None and wanted.startswith(_CARET):
            return caret_at(int(await bus.get(ref, TEXT, "CaretOffset")))
        (start, end) = await bus.call(ref, TEXT, "GetSelection", "i", (0,))
        if int(end) <= int(start):
            return ""
        (text,) = await bus.call(ref, TEXT, "GetText", "ii", (int(start), int(end)))
    except BusError:
        return None
    return str(text)


async def read_back(bus: Bus, expect: Expectation) -> str | None:
    """What the element shows now, in the form :func:`judge` compares."""
    if expect.what == "selection":
        return await _read_selection(bus, expect.ref, expect.wanted)
    if expect.what == "value" and expect.numeric:
        return await read_value(bus, expect.ref)
    return await read_text(bus, expect.ref)


# --- waiting for a click's own change -------------------------------------------------------

#: The states a click on a check box, radio button, toggle, tab, row or expander changes.
_TOGGLED: Final = (State.CHECKED, State.SELECTED, State.PRESSED, State.EXPANDED)
#: The states that say an element has one of those to change.
_TOGGLES: Final = (State.CHECKABLE, State.SELECTABLE, State.EXPANDABLE)
_TOGGLE_ROLES: Final = frozenset(
    {
        Role.CHECK_BOX,
        Role.RADIO_BUTTON,
        Role.TOGGLE_BUTTON,
        Role.PAGE_TAB,
        Role.CHECK_MENU_ITEM,
        Role.RADIO_MENU_ITEM,
    }
)
#: How long a click's reply waits at most for the clicked element's own state to change.
TOGGLE_WAIT_S: Final = 1.0


def toggled_bits(states: int) -> int:
    """The part of a state set a click on a toggling element changes. Pure."""
    return sum(1 << s for s in _TOGGLED if states & (1 << s))


def toggles(node: Node) -> bool:
    """Whether a click on ``node`` is expected to change one of its own states. Pure."""
    return node.role in _TOGGLE_ROLES or any(node.has(s) for s in _TOGGLES)


def takes_text(states: int | None) -> bool:
    """Whether an element with these states is editable text, which takes typed keys as fast
    as they come. Pure."""
    return (
        states is not None
        and bool(states & (1 << State.EDITABLE))
        and not states & (1 << State.READ_ONLY)
    )


async def read_states(bus: Bus, ref: Ref) -> int | None:
    try:
        (state,) = await bus.call(ref, ACCESSIBLE, "GetState", limit=1.0)
    except BusError:
        return None
    return states_from_words(state)
