"""Accessibility-tree text -> :class:`Tree`, and what Jev mode derives from a tree. Pure.

What this owns: :class:`Tree`, :func:`parse` (Sky's ``get_app_state`` / action-result text
into elements, focus and identity), :func:`select_candidates` (which elements Jev may choose
from, ranked), :func:`build_context`, :func:`visible_texts` and :func:`summarize_action` (the
short texts sent to Jev as context and history), and :func:`find`. The reading itself lives in
:mod:`.axread`, the per-element grammar (roles, flags, attributes) in :mod:`.axgrammar` and
:mod:`.axroles`, the candidate rules in :mod:`.axselect`.

Layout: optional banner, ``<app_state>`` tags and app-instructions block; the ``App=`` line
(either form) and ``Window:`` line; element lines ``<indent><index> <rest>``; then optionally
the focus footer (``The focused UI element is N …``, final period or not), a ``Selected text:``
tail and ``</app_state>``. CRLF reads as LF. Depth is one level per tab (or per indentation
unit when spaces are used), shifted so the shallowest element is 0: the older layout that
indents the whole tree by one tab reads the same as the newer one.

Continuation lines. Values are printed with their raw newlines, so a physical line that is not
an element belongs to the element above it (blank lines too, when more text of that value
follows). A line shaped like an element (``<indent><digits> …``) is ambiguous; with ``e`` the
index of the element above and ``i`` the line's number, it starts a new element when

* ``i == e + 1`` (Sky numbers a full tree contiguously from 0, depth first), or
* ``i > e + 1`` and no element-shaped line numbered ``e + 1`` follows (so the numbering really
  is sparse, as in hand-written trees such as ``0``, ``1``, ``2``, ``20``, ``21``);

otherwise (``i <= e``, or the contiguous ``e + 1`` is still to come) it continues the value
above. Real captures such as Music's ``85 text 3 June 2025`` / ``1 song, 6 minutes`` therefore
stay one element. A value line that starts with exactly the next index and a space cannot be
told from an element and is read as one.

Diffs, no-change sentences, partial updates, action receipts and texts without elements are
refused with :class:`AxParseError`: their indices cannot be trusted against a full tree.
"""

from __future__ import annotations

import bisect
import json
import unicodedata
from operator import attrgetter
from typing import Final

import msgspec

from deskhand_d.jev import axgrammar, axread, axselect
from deskhand_d.jev.axread import RECEIPT, AxParseError
from deskhand_d.jev.axselect import Selection
from deskhand_d.jev.types import Element

__all__ = [
    "MAX_INDEX",
    "RECEIPT",
    "AxParseError",
    "Selection",
    "Tree",
    "build_context",
    "find",
    "parse",
    "select_candidates",
    "summarize_action",
    "visible_texts",
]

MAX_INDEX: Final = axgrammar.MAX_INDEX
_INSTRUCTIONS_OPEN: Final = "<app_specific_instructions>"
_INSTRUCTIONS_CLOSE: Final = "</app_specific_instructions>"
_APP_STATE_CLOSE: Final = "</app_state>"
_SKIPPED_HEAD: Final = ("Computer Use state (", "<app_state>", _APP_STATE_CLOSE)


class Tree(msgspec.Struct, frozen=True):
    """One parsed observation: its elements in text order (indices increasing) and header facts."""

    elements: tuple[Element, ...]
    focus: int | None  # index named by the focus footer
    app: str  # from the App= line: the bundle id, else the path or name; "" without the line
    pid: int | None
    window: str  # the Window: title; "" without the line
    text: str  # the text that was parsed


def parse(text: str) -> Tree:
    """Parse one full tree; raises :class:`AxParseError` for anything else."""
    elements, focus, app, pid, window = axread.read(text)
    return Tree(tuple(elements), focus, app, pid, window, text)


def find(tree: Tree, index: int) -> Element | None:
    """The element numbered ``index`` in this tree, if any."""
    elements = tree.elements
    at = bisect.bisect_left(elements, index, key=attrgetter("index"))  # parse() sorts by index
    if at < len(elements) and elements[at].index == index:
        return elements[at]
    return next((e for e in elements if e.index == index), None)  # a tree built by hand


def select_candidates(tree: Tree, goal: str = "", limit: int = 40) -> Selection:
    """The elements Jev may act on, best first (ties by index), at most ``limit`` of them.

    The rules are in :mod:`.axselect`.
    """
    return axselect.select(tree.elements, goal, limit)


def _lines(text: str) -> list[str]:
    return (text.replace("\r\n", "\n") if "\r" in text else text).split("\n")


def build_context(tree: Tree, limit: int = 1500) -> str:
    """Headers, the first six text elements and the focus line, cut to ``limit`` characters.

    The headers are the first two non-empty lines once the banner, the ``<app_state>`` tags and
    an app-instructions block are skipped (normally ``App=`` and ``Window:``).
    """
    if limit < 0:
        raise ValueError("The context limit must not be negative.")
    lines = _lines(tree.text)
    head: list[str] = []
    inside = False
    for line in lines:
        if len(head) == 2:
            break
        trimmed = line.strip()
        if inside:
            inside = not trimmed.startswith(_INSTRUCTIONS_CLOSE)
        elif trimmed.startswith(_INSTRUCTIONS_OPEN):
            inside = _INSTRUCTIONS_CLOSE not in trimmed
        elif trimmed and not trimmed.startswith(_SKIPPED_HEAD):
            head.append(trimmed)
    parts = [*head, *(e.raw.strip() for e in _text_elements(tree, 6))]
    lowered = tree.text.lower()
    at = lowered.find("focused ui element")
    if at >= 0:  # lower() can change lengths, but never the number of newlines before `at`
        focused = lines[lowered.count("\n", 0, at)].strip()
        if focused:
            parts.append(focused)
    return "\n".join(parts)[:limit]


def _text_elements(tree: Tree, n: int) -> list[Element]:
    found: list[Element] = []
    for element in tree.elements:
        if len(found) >= n:
            break
        if element.role == "text":
            found.append(element)
    return found


def _visible(text: str) -> str:
    if text.isascii():
        return text
    return "".join(ch for ch in text if unicodedata.category(ch) != "Cf")


def visible_texts(tree: Tree, n: int = 6) -> str:
    """Labels of the first ``n`` text elements, invisible format characters removed."""
    return " | ".join(_visible(e.label) for e in _text_elements(tree, n))[:240]


def summarize_action(
    kind: str, target: Element | None, before: Tree, after: Tree, changed: bool
) -> str:
    """One history entry as compact JSON: action, target, before, after, changed.

    The target is ``"<role>: <label>"`` (just the label when the role is empty), cut to 200
    characters. Indices are left out on purpose: they shift from one observation to the next.
    """
    named = None
    if target is not None:
        named = (f"{target.role}: {target.label}" if target.role else target.label)[:200]
    entry = {
        "action": kind,
        "target": named,
        "before": visible_texts(before),
        "after": visible_texts(after),
        "changed": changed,
    }
    return json.dumps(entry, ensure_ascii=False, separators=(",", ":"))
