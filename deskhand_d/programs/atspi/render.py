"""Sky's accessibility text for an AT-SPI window tree. Pure.

What this owns: numbering (depth first, pre-order, contiguous from 0 on every rendering), one
element line per node in Sky's grammar (role words, the parenthesised flags, label, then
``Description``, ``Value``, ``ID`` and ``Secondary Actions``), the node cap with the truncation
stated in the text, the focus footer, and the two layouts: ``get_app_state`` (banner,
``<app_state>``, the path-form identity line) and action results (short identity line, no
banner). The line format itself is the shared :func:`~deskhand_d.programs.core.axline.
element_line`, so both backends print the same grammar byte for byte; Sky's fixed strings come
from :mod:`deskhand_d.programs.core.texts`.

Mapping an element (see :mod:`.roles` for the role words and GTK quirks):

* flags, in Sky's order: ``disabled`` (not sensitive), ``settable`` + ``string`` (editable
  text) or ``float`` (sliders, scroll bars, spin buttons), ``selected`` / ``selectable``
  (rows, cells, tabs), ``expanded`` / ``collapsed`` (expanders, tree rows, menu buttons, and
  a GTK 3 menu title or submenu item whose items are on screen);
* label: the accessible name; without one, a static text's text or a scalar's value, bare;
* ``Value:``: editable text, a value next to a name, ``1``/``0`` for check boxes, radio
  buttons, switches, check and radio menu items and anything else that says it can be checked
  (toggle buttons only when pressed in); a caller may supply the ticks the toolkit does not
  report (``checked``, see :mod:`.gmenu`);
* ``Details:``: how many children are scrolled out of view (``120 more items scrolled out of
  view (40 above, 80 below)``), so a list cut by its viewport never looks complete;
* ``Secondary Actions:``: every action name except the one a click performs.

Several windows: an application's surfaces (its window, a dialog, a popup) are rendered as
top-level roots one after another in one numbering, the one the person deals with first; the
``Window:`` line names that first one. This is how Sky already prints the menu bar after the
window: a second root at depth 0.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence

import msgspec

from ..core import texts
from ..core.axline import AxElement, element_line
from . import roles
from .model import Node, Ref
from .roles import MENU_PARENTS, Role, State

DEFAULT_MAX_NODES = 5000

_SELECTABLE_ROLES = frozenset({32, 37, 56, 90, 91})  # list item, page tab, cell, row, tree item


class Rendering(msgspec.Struct, frozen=True, kw_only=True):
    """One numbered rendering: its lines and the object behind every index."""

    title: str
    lines: tuple[str, ...]
    refs: tuple[Ref, ...]
    nodes: tuple[Node, ...]
    focus_index: int | None
    total: int  # nodes in the walked tree
    complete: bool  # False when the walk itself stopped early
    roots: tuple[int, ...] = (0,)  # the index each surface starts at

    def surface_of(self, index: int) -> int:
        """Which surface (its position in :attr:`roots`) the element ``index`` belongs to."""
        return max(i for i, start in enumerate(self.roots) if start <= index)

    @property
    def truncated(self) -> bool:
        return len(self.lines) < self.total or not self.complete


def format_value(value: float) -> str:
    """A number as Sky prints one: integral values without a fraction."""
    if math.isfinite(value) and value == int(value) and abs(value) < 1e15:
        return str(int(value))
    return repr(value)


def offscreen_note(clipped: Sequence[int]) -> str | None:
    """``120 more items scrolled out of view (40 above, 80 below)`` from the counts
    (above, below, left, right); None when nothing is. Pure."""
    total = sum(clipped)
    if total == 0:
        return None
    where = ", ".join(
        f"{n} {side}"
        for n, side in zip(clipped, ("above", "below", "to the left", "to the right"), strict=True)
        if n
    )
    noun = "item" if total == 1 else "items"
    return f"{total} more {noun} scrolled out of view ({where})"


def _menu_open(node: Node, parent: Node | None) -> bool:
    """A GTK 3 menu title or submenu item whose items are on screen (its menu is open)."""
    return (
        node.role == Role.MENU
        and parent is not None
        and parent.role in MENU_PARENTS
        and bool(node.children)
    )


#: List and table entries that GTK 4 leaves unnamed (a drop-down's items, a list view's rows):
#: their label is the text they hold.
_ENTRY_ROLES = frozenset({Role.LIST_ITEM, Role.TABLE_ROW, Role.TREE_ITEM, Role.TABLE_CELL})
#: Static text: labels, GTK 4's non-editable text, paragraphs, captions, static.
_TEXT_ROLES = frozenset({Role.LABEL, Role.TEXT, 73, 81, Role.STATIC})
#: What an entry may hold besides text for that text to be its label: pictures and plain
#: containers (a GTK 4 list item wraps its label in a box; a drop-down's item adds a tick).
_PLAIN_ROLES = frozenset({Role.FILLER, Role.PANEL, Role.IMAGE, 26, 3, 4})
#: Where a drop-down keeps the list of its choices (its popup): not the chosen value.
_CHOICE_ROLES = frozenset(
    {Role.LIST, Role.MENU, Role.POPUP_MENU, Role.WINDOW, Role.TABLE, 65, 66, 98}
)


def _text_of(node: Node) -> str:
    """What static text ``node`` shows: its name, else its text."""
    return roles.display_name(node.name) or roles.without_embeds(node.text or "").strip()


def content_label(node: Node) -> str:
    """The label of an entry that has none: the text it holds, in order, when it holds only
    static text, pictures and plain containers; empty when anything else is inside (a check
    box, a button: then the entry is not just a label). Pure."""
    pieces: list[str] = []
    for depth, inner, _ in node.walk():
        if depth == 0:
            continue
        if inner.role in _TEXT_ROLES and not inner.text_settable:
            piece = _text_of(inner)
            if piece:
                pieces.append(piece)
        elif inner.role not in _PLAIN_ROLES:
            return ""
    return " ".join(pieces)


def chosen_value(node: Node) -> str:
    """What a drop-down (combo box) shows as chosen, read from the text inside it outside its
    list of choices; empty when it holds editable text (the entry shows the value) or no
    text (then its list's selection, :attr:`~.model.Node.chosen`, may say). Pure."""
    pieces: list[str] = []
    stack = list(reversed(node.children))
    while stack:
        inner = stack.pop()
        if inner.role in _CHOICE_ROLES:
            continue
        if inner.text_settable:
            return ""
        if inner.role in _TEXT_ROLES:
            piece = _text_of(inner)
            if piece:
                pieces.append(piece)
        stack.extend(reversed(inner.children))
    return " ".join(pieces)


def shown_text(node: Node) -> str | None:
    """``node``'s text as a person reads it. Pure.

    A hypertext (a web page's paragraph) holds U+FFFC where each embedded child object (a
    link) sits: when there are exactly as many of those as children listed, each stands for
    its child's own text (``Read the first link and then ...``); otherwise they are dropped."""
    text = node.text
    if text is None or roles.EMBEDDED_OBJECT not in text:
        return text
    # Chromium also lists the runs of text between the objects as children (static text).
    embedded = [c for c in node.children if c.role != Role.STATIC]
    wanted = text.count(roles.EMBEDDED_OBJECT)
    for children in (node.children, embedded):
        if wanted == len(children):
            pieces = iter([_text_of(child) for child in children])
            text = "".join(next(pieces) if ch == roles.EMBEDDED_OBJECT else ch for ch in text)
            break
    return roles.without_embeds(text)


#: A document's own text repeats everything its children show (Chromium's web document).
_DOCUMENT_ROLES = frozenset({82, 92, 93, 94, 95})


def _whole_page(node: Node) -> bool:
    """A document that cannot be edited and lists its content as children: its text is all
    of theirs run together, and would only repeat the tree below it."""
    return node.role in _DOCUMENT_ROLES and not node.text_settable and bool(node.children)


def _role_words(node: Node, parent: Node | None) -> str:
    """:func:`.roles.role_words`, and for a window of the app's own whose role says nothing
    (GTK 4's About dialog is a ``filler``): ``dialog`` when modal, else ``window``."""
    if parent is None and node.role in (Role.FILLER, Role.PANEL):
        return "dialog" if node.has(State.MODAL) else "window"
    return roles.role_words(node.role, node.states, parent_role=parent.role if parent else -1)


def element_of(node: Node, parent: Node | None, checked: bool | None = None) -> AxElement:
    """The element line's fields for ``node``.

    ``checked``: whether the item is ticked, when known from elsewhere than its states."""
    child_names = [c.name for c in node.children]
    label = roles.display_name(node.name, child_names)
    if not label and node.text is None and node.role in _ENTRY_ROLES:
        label = content_label(node)
    flags: list[str] = []
    if node.disabled:
        flags.append("disabled")
    if node.text_settable:
        flags += ["settable", "string"]
    elif node.value_settable:
        flags += ["settable", "float"]
    if node.has(State.SELECTED):
        flags.append("selected")
    elif node.has(State.SELECTABLE) and node.role in _SELECTABLE_ROLES:
        flags.append("selectable")
    if node.has(State.EXPANDED) or _menu_open(node, parent):
        flags.append("expanded")
    elif node.has(State.EXPANDABLE) or node.has(State.COLLAPSED):
        flags.append("collapsed")

    value: str | None = None
    text = shown_text(node)
    if text is not None:
        if node.text_settable:
            value = text
        elif not label:
            label = text.strip()
        elif text.strip() != label and text.strip() and not _whole_page(node):
            value = text
    elif node.value is not None:
        shown = format_value(node.value)
        if label:
            value = shown
        else:
            label = shown
    if value is None and node.role == Role.COMBO_BOX and not node.text_settable:
        value = chosen_value(node) or roles.display_name(node.chosen) or None
        if value == label:
            value = None
    pressed = node.has(State.CHECKED) or node.has(State.PRESSED)
    # GTK 4.8 gives a toggle button the role of a push button, pressed while it is down.
    toggled = node.role == Role.PUSH_BUTTON and node.has(State.PRESSED)
    if node.role == Role.TOGGLE_BUTTON or toggled:
        if pressed:
            value = "1"
    elif node.role in roles.CHECKABLE_ROLES or node.has(State.CHECKABLE):
        value = "1" if pressed else "0"
    elif checked is not None:
        value = "1" if checked else "0"

    description = node.description.strip()
    return AxElement(
        role=_role_words(node, parent),
        label=label,
        flags=tuple(flags),
        description=description if description and description != label else None,
        value=value,
        details=offscreen_note(node.clipped),
        ident=node.accessible_id or None,
        actions=roles.secondary_actions(node.actions, node.role, node.states),
    )


def render(
    window: Node | Sequence[Node],
    *,
    max_nodes: int = DEFAULT_MAX_NODES,
    complete: bool = True,
    checked: Mapping[Ref, bool] | None = None,
) -> Rendering:
    """Number the surfaces' trees depth first from 0, one root after another, stopping after
    ``max_nodes`` elements. ``checked``: ticks known from elsewhere (see :func:`element_of`)."""
    surfaces = [window] if isinstance(window, Node) else list(window)
    if not surfaces:
        raise ValueError("nothing to render")
    lines: list[str] = []
    refs: list[Ref] = []
    nodes: list[Node] = []
    starts: list[int] = []
    focus: int | None = None
    total = 0
    ticks = checked or {}
    for surface in surfaces:
        starts.append(len(lines))
        for depth, node, parent in surface.walk():
            total += 1
            if len(lines) >= max_nodes:
                continue
            index = len(lines)
            if focus is None and node.has(State.FOCUSED):
                focus = index
            element = element_of(node, parent, ticks.get(node.ref))
            lines.append("\t" * depth + element_line(index, element))
            refs.append(node.ref)
            nodes.append(node)
    first = surfaces[0]
    title = roles.display_name(first.name) or first.name
    return Rendering(
        title=title,
        lines=tuple(lines),
        refs=tuple(refs),
        nodes=tuple(nodes),
        focus_index=focus,
        total=total,
        complete=complete,
        roots=tuple(min(start, max(len(lines) - 1, 0)) for start in starts),
    )


def truncation_note(rendering: Rendering) -> str:
    """Our sentence saying the tree was cut short (placed in the header, never an element)."""
    shown = len(rendering.lines)
    if not rendering.complete:
        return (
            f"Only the first {shown} elements of this window are listed: reading it stopped "
            "at a limit (the number of elements, the time a reading may take, or a list that "
            "does not say which of its items are in view), and the rest was not read."
        )
    return (
        f"Only the first {shown} of {rendering.total} elements of this window are listed; "
        f"the other {rendering.total - shown} were left out to stay within the node limit."
    )


def body_text(rendering: Rendering, app_name: str) -> str:
    """``Window:`` line, truncation note, tree and focus footer (shared by both layouts)."""
    parts = [texts.window_line(rendering.title, app_name)]
    if rendering.truncated:
        parts.append(truncation_note(rendering))
    parts += rendering.lines
    text = "\n".join(parts)
    if rendering.focus_index is not None:
        focused = rendering.lines[rendering.focus_index].lstrip("\t")
        text += "\n\n" + texts.FOCUS_PREFIX + focused
    return text


def state_text(
    rendering: Rendering,
    *,
    app_name: str,
    path: str,
    bundle_id: str,
    pid: int,
    cua_version: str = texts.DEFAULT_CUA_VERSION,
) -> str:
    """The ``get_app_state`` text (the v26.9 layout)."""
    return "\n".join(
        [
            texts.banner(cua_version),
            texts.APP_STATE_OPEN,
            texts.identity_path_form(path, bundle_id, pid),
            body_text(rendering, app_name),
            texts.APP_STATE_CLOSE,
        ]
    )


def action_text(rendering: Rendering, *, app_name: str, bundle_id: str, pid: int) -> str:
    """An action result: the short identity line and the refreshed tree."""
    return texts.identity_short_form(bundle_id, pid) + "\n" + body_text(rendering, app_name)
