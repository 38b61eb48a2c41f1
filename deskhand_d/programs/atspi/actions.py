"""What each action tool does to a live application, given the element it names.

What this owns: the AT-SPI and X11 side of ``click``, ``perform_secondary_action``,
``set_value``, ``select_text``, ``scroll``, ``drag``, ``press_key`` and ``type_text``, and the
pure helpers behind them (finding the text to select, picking the scroll bar a scroll moves).
Failures are raised as :class:`ToolError` carrying the exact text the client receives.

Clicks by index press the element through its Action interface (its press-like action, see
:func:`~.roles.primary_action`); an element without one, or a right or middle click, is clicked
at its centre through XTest. Everything keyboard and coordinate based goes through XTest.

A GTK button pressed through its ``click`` action acts only when GTK's 250 ms activation
timeout ends (:func:`~.model.click_is_delayed`), so a single left click by index on one is
delivered as a pointer click at its centre instead, where that is provably the button a person
would press (:meth:`~.x11.X11.press_in_window` checks it under a server grab: the app's own
window, top-most at that point, nothing of another app or of its own popups over it, no pointer
grab), and through the action anywhere else. The pointer then rests on the button, as after a
click by coordinates.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Final

import trio

from ..core import texts
from . import roles
from .apps import SCREEN_COORDS, WINDOW_COORDS, extents
from .bus import Bus, BusError, BusTimeout, CallFailed, Gone, one_error
from .model import ACTION, COMPONENT, EDITABLE_TEXT, TEXT, VALUE, Node, Ref, click_is_delayed
from .roles import Role, State
from .screen import ScreenUnavailable, Seat, centre, to_screen
from .x11guard import Guard, InputStopped

if TYPE_CHECKING:
    from .x11 import X11

DIRECTIONS = ("up", "down", "left", "right")
SELECTIONS = ("text", "cursor_before", "cursor_after")


class ToolError(Exception):
    """Ends a tool call with ``text`` as an ``isError`` result."""

    def __init__(self, text: str) -> None:
        super().__init__(text)
        self.text = text


def input_unavailable(screen: Seat, why: str) -> str:
    where = "X11 input and screenshots are" if screen.kind == "x11" else "Wayland input is"
    return texts.server_error(-10005, f"{where} unavailable: {why}")


@dataclass(frozen=True, slots=True)
class Target:
    """Where an action lands: the bus, the display, the window's screen origin, and the
    guard that keeps synthesized input inside the app's process."""

    bus: Bus
    screen: Seat
    origin: tuple[int, int]
    guard: Guard | None = None
    window: Ref | None = None  # the app's window (or popup) the element is in, when known
    ancestors: tuple[Node, ...] = ()  # the element's ancestors in the tree, nearest first

    def changing(self) -> None:
        """Say that a call that may change the app is about to go out (see
        :attr:`~.x11guard.Guard.sending`)."""
        if self.guard is not None:
            self.guard.sending.set()


async def _x11(target: Target, what: str, *args: object, **options: object) -> None:
    """Run an :class:`~.x11.X11` input method by name under the target's guard; bad input
    becomes ``invalidParameter``. :class:`~.x11guard.InputStopped` passes through."""
    try:
        await target.screen.send(what, *args, guard=target.guard, **options)
    except ScreenUnavailable as exc:
        raise ToolError(input_unavailable(target.screen, str(exc))) from None
    except ValueError:
        raise ToolError(texts.INVALID_PARAMETER) from None


async def check_alive(bus: Bus, node: Node) -> None:
    """The element still exists (its object answers and is not defunct), else stale."""
    try:
        (state,) = await bus.call(node.ref, "org.a11y.atspi.Accessible", "GetState")
    except (Gone, CallFailed):
        raise ToolError(texts.STALE_ELEMENT) from None
    if roles.has(roles.states_from_words(state), State.DEFUNCT):
        raise ToolError(texts.STALE_ELEMENT)


async def _do_action(target: Target, ref: Ref, index: int) -> None:
    target.changing()
    try:
        await target.bus.call(ref, ACTION, "DoAction", "i", (index,))
    except (Gone, CallFailed):
        raise ToolError(texts.STALE_ELEMENT) from None


async def element_centre(target: Target, node: Node) -> tuple[float, float]:
    """The element's centre on the screen, from its rectangle relative to its window (GTK 4
    answers nothing else) placed at the window's origin, unless that rectangle is not the
    screen rectangle's size: Qt 5 computes window-relative rectangles wrongly (a menu title 34
    x 22 on screen comes back 34 x -20), so its screen rectangle, which it gets right, is
    taken instead."""
    got: dict[int, tuple[int, int, int, int]] = {}

    async def one(coords: int) -> None:
        got[coords] = await extents(target.bus, node.ref, coords)

    try:
        with one_error():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(one, WINDOW_COORDS)
                nursery.start_soon(one, SCREEN_COORDS)
    except BusError:
        raise ToolError(texts.STALE_ELEMENT) from None
    box, screen = got[WINDOW_COORDS], got[SCREEN_COORDS]
    if box[2:] != screen[2:] and screen[2] > 0 and screen[3] > 0:
        return centre(screen)
    if box[2] <= 0 or box[3] <= 0:
        raise ToolError(texts.server_error(-10005, "the element is not on screen"))
    placed = await _in_popup(target, box)
    if placed is not None:
        return placed
    return to_screen(target.origin, *centre(box))


_POPUP_LAYER: Final = 5  # AtspiComponentLayer: ATSPI_LAYER_POPUP


async def _in_popup(target: Target, box: tuple[int, int, int, int]) -> tuple[float, float] | None:
    """Where an element inside a popup (a GTK 4 popover) really is on the screen, or None when
    it is in none. GTK 4.8 measures a popover's contents as if the popover sat on the widget
    it hangs from, not where it is drawn: a drop-down's third item clicked at its reported
    centre chose the second. The popover is its own X window, which the X server places: the
    element's offset from the widget the popover hangs from, taken from that window's origin,
    is where it is drawn."""
    chain = target.ancestors
    guard = target.guard
    if guard is None:
        return None
    found: tuple[Node, Node] | None = None
    try:
        for at, node in enumerate(chain[:-1]):
            if COMPONENT in node.interfaces:
                (layer,) = await target.bus.call(node.ref, COMPONENT, "GetLayer", limit=1.0)
                if int(layer) == _POPUP_LAYER:
                    found = node, chain[at + 1]
                    break
        if found is None:
            return None
        popup = await extents(target.bus, found[0].ref, WINDOW_COORDS)
        anchor = await extents(target.bus, found[1].ref, WINDOW_COORDS)
    except BusError:
        return None
    pid, width = guard.pid, popup[2]

    def origin_of(display: X11) -> tuple[int, int] | None:
        return display.popup_origin(pid, width)

    try:
        origin = await target.screen.run(origin_of)
    except ScreenUnavailable:
        return None
    if origin is None:
        return None
    x, y = centre(box)
    return origin[0] + x - anchor[0], origin[1] + y - anchor[1]


#: Menu items that run their command when chosen (not the ones that open a submenu).
LEAF_MENU_ROLES: Final = frozenset({Role.MENU_ITEM, Role.CHECK_MENU_ITEM, Role.RADIO_MENU_ITEM})
#: List, table and tree cells.
CELL_ROLES: Final = frozenset({56, 57, 58, 10, 47})


async def click_element(
    target: Target,
    node: Node,
    button: str,
    count: int,
    *,
    gtk3: bool = False,
    menus_by_pointer: bool = False,
) -> bool:
    """Click ``node``: its press-like action, else the pointer at its centre. True when the
    click was a pointer press standing in for a delayed button action (see the module notes):
    its effect then comes at once.

    ``gtk3``: the app is a GTK 3 one, whose screen coordinates are right. A menu item is then
    chosen and a list cell clicked with the pointer, at the centre of its screen rectangle, as
    a person does. GTK 3 runs a menu item's command inside the ``DoAction`` call, so a command
    that opens a dialog with ``gtk_dialog_run`` (Geany's Help > About) keeps the app from
    answering anything on the accessibility bus until that dialog closes; a pointer click is
    handled in the app's own loop. A cell's only press-like action activates its row (a double
    click's work) where a click selects it. The open menu lies on top, and a cell answers only
    while it is in view, so the click reaches them (and the input guard checks that it does).

    ``menus_by_pointer``: the same for menu items of any toolkit whose screen rectangles are
    right (every one but GTK 4): Qt runs a menu item's command inside ``DoAction`` too, and a
    command that opens a modal dialog (FeatherPad's Options > Preferences) would hold the call
    until the dialog closed.
    """
    if button == "left" and count == 1 and takes_caret(node):
        target.changing()
        if await focus_text(target.bus, node):
            return False
        x, y = await element_centre(target, node)  # the toolkit declined: click it instead
        await _x11(target, "click", x, y, button, count)
        return False
    primary = roles.primary_action(node.actions)
    by_pointer = button == "left" and (
        (gtk3 and node.role in CELL_ROLES)
        or ((gtk3 or menus_by_pointer) and node.role in LEAF_MENU_ROLES)
    )
    if button == "left" and primary is not None and not by_pointer:
        delayed = count == 1 and click_is_delayed(node.role, node.actions)
        if delayed and await _press_with_pointer(target, node):
            return True
        for _ in range(count):
            await _do_action(target, node.ref, primary)
        return False
    if by_pointer:
        try:
            box = await extents(target.bus, node.ref)
        except BusError:
            raise ToolError(texts.STALE_ELEMENT) from None
        if box[2] <= 0 or box[3] <= 0:
            raise ToolError(texts.server_error(-10005, "the element is not on screen"))
        x, y = centre(box)
    else:
        x, y = await element_centre(target, node)
    try:
        await _x11(target, "click", x, y, button, count)
    except (ToolError, InputStopped):
        # On Wayland the pointer is used only where the compositor proves where it lands; a
        # click by index it cannot place (the app's window is not focused, or draws its own
        # frame) is done by the element's own action instead, as long as nothing went out.
        sent = target.guard is not None and target.guard.sending.is_set()
        if target.screen.kind == "x11" or not by_pointer or primary is None or sent:
            raise
        for _ in range(count):
            await _do_action(target, node.ref, primary)
        return False
    if by_pointer and node.role in LEAF_MENU_ROLES:
        await _menu_closed(target.bus, node.ref)
    return False


async def _press_with_pointer(target: Target, node: Node) -> bool:
    """A left click at the centre of ``node`` through the pointer, when it provably lands on
    that element in the app's own window (:meth:`~.x11.X11.press_in_window`; on Wayland the
    compositor's proofs, :func:`_press_through_compositor`); False, with nothing sent, when it
    cannot be shown to. Both rectangles are the toolkit's, relative to the window (GTK 4 knows
    no other); the X server (the compositor) says where the window is."""
    guard, window = target.guard, target.window
    if guard is None or window is None or COMPONENT not in node.interfaces:
        return False
    got: dict[str, tuple[int, int, int, int]] = {}

    async def one(key: str, ref: Ref) -> None:
        got[key] = await extents(target.bus, ref, WINDOW_COORDS)

    try:
        with one_error():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(one, "element", node.ref)
                nursery.start_soon(one, "window", window)
    except BusError:
        return False  # the action says what became of the element
    walked = node.box
    x, y = target.origin
    if walked is None or got["element"] != (walked[0] - x, walked[1] - y, walked[2], walked[3]):
        return False  # it moved since the tree that placed it was read
    size = got["window"][2], got["window"][3]
    if target.screen.kind != "x11":
        return await _press_through_compositor(target, guard, got["element"])

    def press(display: X11) -> bool:
        return display.press_in_window(size, got["element"], guard, guard.sending)

    try:
        return await target.screen.run(press, stop=guard.stop)
    except ScreenUnavailable as exc:
        if guard.sending.is_set():  # the click may have gone out: never press a second time
            raise ToolError(input_unavailable(target.screen, str(exc))) from None
        return False


async def _press_through_compositor(
    target: Target, guard: Guard, box: tuple[int, int, int, int]
) -> bool:
    """:func:`_press_with_pointer` on Wayland: the seat proves the focused window is the
    app's and that the window shows as it is around the point (see :mod:`.wlscreen`); False,
    with nothing sent, where it cannot, or where the seat would first have to ask the person
    (a click by index does not need it: the element's own action is used instead)."""
    if not target.screen.input_ready():
        return False
    x, y = to_screen(target.origin, *centre(box))
    try:
        await target.screen.send("click", x, y, "left", 1, guard=guard)
    except InputStopped as exc:
        if exc.done == 0 and not guard.sending.is_set():
            return False
        raise
    except (ScreenUnavailable, ValueError) as exc:
        if guard.sending.is_set():  # the click may have gone out: never press a second time
            raise ToolError(input_unavailable(target.screen, str(exc))) from None
        return False
    return True


#: How long a chosen menu item may take to close its menu (GTK closes it, then runs it).
MENU_CLOSE_S: Final = 1.0


async def _menu_closed(bus: Bus, ref: Ref) -> None:
    """Wait (at most :data:`MENU_CLOSE_S`) until a chosen menu item is no longer showing: GTK 3
    closes the menu and then runs the item's command in the same turn of its loop, so the
    command has run by then, as it has when ``DoAction`` answers."""
    with trio.move_on_after(MENU_CLOSE_S):
        while True:
            try:
                (state,) = await bus.call(ref, "org.a11y.atspi.Accessible", "GetState")
            except BusError:
                return  # the item went with its menu
            if not roles.has(roles.states_from_words(state), State.SHOWING):
                return
            await trio.sleep(0.02)


async def click_point(target: Target, x: float, y: float, button: str, count: int) -> None:
    sx, sy = to_screen(target.origin, x, y)
    await _x11(target, "click", sx, sy, button, count)


async def secondary_action(target: Target, node: Node, action: str, given: str) -> None:
    if action not in node.actions:
        raise ToolError(texts.bad_secondary_action(action, given))
    await _do_action(target, node.ref, node.actions.index(action))


async def set_value(target: Target, node: Node, value: str) -> None:
    if node.text_settable:
        target.changing()
        try:
            (ok,) = await target.bus.call(node.ref, EDITABLE_TEXT, "SetTextContents", "s", (value,))
        except (Gone, CallFailed):
            raise ToolError(texts.STALE_ELEMENT) from None
        if not ok:
            raise ToolError(texts.NOT_SETTABLE)
        return
    if node.value_settable:
        try:
            number = float(value)
        except ValueError:
            raise ToolError(texts.INVALID_PARAMETER) from None
        target.changing()
        try:
            await target.bus.set(node.ref, VALUE, "CurrentValue", "d", number)
        except (Gone, CallFailed):
            raise ToolError(texts.STALE_ELEMENT) from None
        return
    raise ToolError(texts.NOT_SETTABLE)


def find_text(whole: str, text: str, prefix: str = "", suffix: str = "") -> tuple[int, int] | None:
    """Offsets of the first ``text`` in ``whole`` with ``prefix`` right before it and
    ``suffix`` right after it. Pure."""
    if not text:
        return None
    start = whole.find(text)
    while start >= 0:
        end = start + len(text)
        before = whole[max(0, start - len(prefix)) : start]
        if before == prefix and whole[end : end + len(suffix)] == suffix:
            return start, end
        start = whole.find(text, start + 1)
    return None


async def select_text(
    target: Target, node: Node, text: str, prefix: str, suffix: str, selection: str
) -> str | None:
    """Select (or put the caret around) ``text``; returns the selected text, if any."""
    if TEXT not in node.interfaces:
        raise ToolError(texts.NO_TEXT_SELECTION)
    bus = target.bus
    try:
        count = int(await bus.get(node.ref, TEXT, "CharacterCount"))
        (whole,) = await bus.call(node.ref, TEXT, "GetText", "ii", (0, count))
        found = find_text(str(whole), text, prefix, suffix)
        if found is None:
            raise ToolError(texts.TEXT_NOT_FOUND)
        start, end = found
        target.changing()
        if selection == "text":
            if not await _select_range(bus, node.ref, start, end):
                raise ToolError(texts.NO_TEXT_SELECTION)
            return text
        offset = start if selection == "cursor_before" else end
        (ok,) = await bus.call(node.ref, TEXT, "SetCaretOffset", "i", (offset,))
        if not ok:
            raise ToolError(texts.NO_TEXT_SELECTION)
        return None
    except Gone:
        raise ToolError(texts.STALE_ELEMENT) from None
    except CallFailed:
        raise ToolError(texts.NO_TEXT_SELECTION) from None


async def _select_range(bus: Bus, ref: Ref, start: int, end: int) -> bool:
    """Make ``start..end`` the text's selection.

    ``SetSelection`` replaces an existing first selection; with none, ``AddSelection`` makes
    one. GTK 4.8 applies ``AddSelection`` but never answers it, so a silent one counts as done
    when a selection exists afterwards.
    """
    try:
        (ok,) = await bus.call(ref, TEXT, "SetSelection", "iii", (0, start, end))
        if ok:
            return True
    except CallFailed:
        pass
    try:
        (ok,) = await bus.call(ref, TEXT, "AddSelection", "ii", (start, end), limit=1.0)
        return bool(ok)
    except BusTimeout:
        (count,) = await bus.call(ref, TEXT, "GetNSelections")
        return int(count) > 0


def scroll_bar_for(node: Node, direction: str) -> Node | None:
    """The scroll bar a scroll of ``node`` in ``direction`` would move: the node itself if it
    is one, else its first descendant scroll bar of the matching orientation. Pure."""
    vertical = direction in ("up", "down")
    want = State.VERTICAL if vertical else State.HORIZONTAL
    for _, candidate, _ in node.walk():
        is_bar = candidate.role == Role.SCROLL_BAR and VALUE in candidate.interfaces
        if is_bar and (candidate.has(want) or candidate is node):
            return candidate
    return None


async def scroll(target: Target, node: Node, direction: str, pages: float) -> None:
    """The mouse wheel over the element; without X11, move its scroll bar's value."""
    try:
        x, y = await element_centre(target, node)
        await _x11(target, "scroll", x, y, direction, pages)
        return
    except ToolError as exc:
        bar = scroll_bar_for(node, direction)
        if bar is None:
            raise exc from None
    bus = target.bus
    try:
        values = await bus.get_many(
            bar.ref, VALUE, ("MinimumValue", "MaximumValue", "CurrentValue")
        )
        low, high = float(values["MinimumValue"]), float(values["MaximumValue"])
        current = float(values["CurrentValue"])
        step = (high - low) / 4 * pages
        new = current - step if direction in ("up", "left") else current + step
        target.changing()
        await bus.set(bar.ref, VALUE, "CurrentValue", "d", min(high, max(low, new)))
    except (Gone, CallFailed, KeyError):
        raise ToolError(texts.STALE_ELEMENT) from None


async def still_focused(bus: Bus, node: Node) -> bool:
    """Whether ``node`` reports the keyboard focus right now."""
    return await ref_focused(bus, node.ref)


async def ref_focused(bus: Bus, ref: Ref) -> bool:
    """Whether the object ``ref`` (of any application) reports the keyboard focus now."""
    try:
        (state,) = await bus.call(ref, "org.a11y.atspi.Accessible", "GetState", limit=1.0)
    except BusError:
        return False
    return roles.has(roles.states_from_words(state), State.FOCUSED)


def takes_caret(node: Node) -> bool:
    """Editable text, where a click puts the caret (its action, ``activate``, would press
    Return in it instead)."""
    return TEXT in node.interfaces and node.has(State.EDITABLE) and COMPONENT in node.interfaces


async def focus_text(bus: Bus, node: Node) -> bool:
    """Give editable text the keyboard focus with the caret after its text, as a click at its
    end would: ``GrabFocus`` (toolkits then select all of an entry's text, as for a Tab into
    it), then the caret at the end, which clears that selection, so that typing adds to the
    text instead of replacing it. False when the toolkit declined the focus."""
    try:
        (ok,) = await bus.call(node.ref, COMPONENT, "GrabFocus", limit=1.0)
        if not ok:
            return False
        count = int(await bus.get(node.ref, TEXT, "CharacterCount"))
        await bus.call(node.ref, TEXT, "SetCaretOffset", "i", (count,))
    except Gone:
        raise ToolError(texts.STALE_ELEMENT) from None
    except (CallFailed, BusTimeout):
        return False
    return True


async def keys(target: Target, key: str) -> None:
    await _x11(target, "press_key", key)


async def type_text(target: Target, text: str, *, into_field: bool = False) -> None:
    """Type ``text``; ``into_field``: the focus is an editable text, which takes keys as fast
    as they come (elsewhere a key is not pressed again until the app has read it, see
    :meth:`~.x11.X11.type_text`)."""
    for char in text:
        if char not in "\n\t\r" and (ord(char) < 32 or ord(char) == 127):
            raise ToolError(texts.no_key_code(char))
    await _x11(target, "type_text", text, into_field=into_field)


async def drag(target: Target, points: Sequence[float]) -> None:
    x1, y1 = to_screen(target.origin, points[0], points[1])
    x2, y2 = to_screen(target.origin, points[2], points[3])
    await _x11(target, "drag", x1, y1, x2, y2)
