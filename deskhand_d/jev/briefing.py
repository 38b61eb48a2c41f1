"""What Jev is told about a tree besides its candidates. Pure.

What this owns: :func:`build_context` (the headers, the first text elements and the focus line,
sent with every decision), :func:`visible_texts` and :func:`summarize_action` (the short history
entries of the last actions). The tree itself is read by :mod:`deskhand_d.ax`.
"""

from __future__ import annotations

import json
import unicodedata
from typing import Final

from deskhand_d.ax import Element, Tree

__all__ = ["build_context", "summarize_action", "visible_texts"]

_INSTRUCTIONS_OPEN: Final = "<app_specific_instructions>"
_INSTRUCTIONS_CLOSE: Final = "</app_specific_instructions>"
_APP_STATE_CLOSE: Final = "</app_state>"
_SKIPPED_HEAD: Final = ("Computer Use state (", "<app_state>", _APP_STATE_CLOSE)


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
    """The first ``n`` elements whose role is ``text`` (only those are read)."""
    found: list[Element] = []
    for at, role in enumerate(tree.roles()):
        if len(found) >= n:
            break
        if role == "text":
            found.append(tree.element_at(at))
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
