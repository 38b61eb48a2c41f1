"""What the daemon's stateIds need to know about an observation's text. Pure.

What this owns: :class:`TreeFacts` and :func:`inspect`: the element indices an action may name,
the identity from the ``App=`` line, and whether the text is one complete window tree (only a
complete tree may mint an action-returned stateId; a diff, a partial update, a receipt, a tree
without its ``Window:`` line or the pid form of ``App=``, or one not numbered 0, 1, 2 … may
not). The text is read by :func:`.layout.read`, the same reading Jev's elements come from; no
element's role or attributes are read.
"""

from __future__ import annotations

from dataclasses import dataclass

from deskhand_d.ax.layout import RECEIPT, read


@dataclass(frozen=True, slots=True)
class TreeFacts:
    indices: frozenset[int]
    identity: str  # bundle id (or path) from the App= line with a pid; "" if none
    pid: int | None
    window_title_seen: bool
    complete: bool  # one full tree numbered from 0, with no diff or receipt in it


def inspect(text: str) -> TreeFacts:
    """The facts of ``text``; a text that is not a full tree has no indices."""
    layout = read(text)
    identity = layout.app if layout.pid is not None else ""
    indices = layout.indices
    contiguous = bool(indices) and indices[0] == 0 and indices[-1] == len(indices) - 1
    return TreeFacts(
        indices=frozenset(indices),
        identity=identity,
        pid=layout.pid,
        window_title_seen=layout.window_seen,
        complete=contiguous and layout.window_seen and bool(identity) and RECEIPT not in text,
    )
