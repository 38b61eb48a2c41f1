"""What ``deskhandctl ax parse FILE [--goal G] [--json]`` prints. Pure.

:func:`report` parses a tree and lays out its elements, its focus and the candidates Jev would
be offered for the goal, ranked with their scores, either as text for a person or as one JSON
object. Parse failures propagate as :class:`~deskhand_d.ax.AxParseError`; the CLI reports them.
"""

from __future__ import annotations

import json
from typing import Any

from deskhand_d.ax.candidates import select_candidates
from deskhand_d.ax.tree import parse


def _one_line(text: str) -> str:
    """Multi-line labels shown on one line, newlines visible as ``\\n``."""
    return text.replace("\\", "\\\\").replace("\n", "\\n") if "\n" in text else text


def report(text: str, goal: str, *, as_json: bool, limit: int = 40) -> str:
    """The ``ax parse`` output for ``text`` and ``goal`` (no trailing newline)."""
    tree = parse(text)
    selection = select_candidates(tree, goal, limit)
    if as_json:
        document: dict[str, Any] = {
            "elements": [
                {"index": e.index, "depth": e.depth, "role": e.role, "label": e.label}
                for e in tree.elements
            ],
            "focus": tree.focus,
            "app": tree.app,
            "window": tree.window,
            "candidates": [
                {"index": c.index, "role": c.role, "label": c.label, "score": c.score}
                for c in selection.candidates
            ],
            "total": selection.total,
            "clipped": selection.clipped,
        }
        return json.dumps(document, ensure_ascii=False)
    width = len(str(tree.elements[-1].index))
    out = [
        f"app: {tree.app or '-'}" + (f" (pid {tree.pid})" if tree.pid is not None else ""),
        f"window: {tree.window or '-'}",
        f"focus: {'-' if tree.focus is None else tree.focus}",
        f"elements: {len(tree.elements)}",
    ]
    for e in tree.elements:
        role = e.role or "(no role)"
        out.append(f"  {e.index:>{width}}  {'  ' * e.depth}{role}  {_one_line(e.label)}".rstrip())
    shown = len(selection.candidates)
    clipped = f", {selection.total - shown} more not shown" if selection.clipped else ""
    goal_text = f" for goal {json.dumps(goal, ensure_ascii=False)}" if goal else ""
    out.append(f"candidates{goal_text}: {selection.total} eligible{clipped}")
    for c in selection.candidates:
        out.append(f"  {c.score:>4}  {c.index:>{width}}  {c.role}  {_one_line(c.label)}".rstrip())
    return "\n".join(out)
