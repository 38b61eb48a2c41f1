"""What Deskhand needs to know about an accessibility-tree text to guard actions. Pure.

Not the full AX parser (the Jev issue builds that): only the element indices an action may
name, the ``App=`` identity line, and whether the text is one complete, untruncated window tree
(a full tree may mint an action-returned stateId; a diff, a partial update or a receipt may not).

Element lines are ``<tabs><index> <rest>``; values may contain raw newlines, so a physical line
that looks like an element only counts when its index is the previous index + 1 (full trees are
numbered contiguously from 0, depth first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from deskhand_d.mcp.results import DIFF_MARKERS

_ELEMENT = re.compile(r"^\t*(\d+) ")
_IDENTITY = re.compile(r"^App=(.+?) \((?:bundleID (\S+), )?pid (\d+)\)\s*$")
TRUNCATION_MARKERS = ("Action completed. Call `get_app_state`",)


@dataclass(frozen=True, slots=True)
class TreeInfo:
    indices: frozenset[int]
    identity: str  # bundle id (or path) from the App= line; "" if none
    pid: int | None
    window_title_seen: bool
    complete: bool  # one full, contiguous tree with no diff/receipt markers


def _identity(line: str) -> tuple[str, int | None] | None:
    m = _IDENTITY.match(line)
    if m is None:
        return None
    path_or_bundle, bundle, pid = m.group(1), m.group(2), int(m.group(3))
    return (bundle or path_or_bundle), pid


def inspect(text: str) -> TreeInfo:
    indices: list[int] = []
    identity, pid = "", None
    window = False
    markers = False
    expected = 0
    for line in text.split("\n"):
        m = _ELEMENT.match(line)
        if m is not None and int(m.group(1)) == expected:
            indices.append(expected)
            expected += 1
            continue
        if not indices:  # header region
            if line.startswith("App=") and not identity:
                found = _identity(line)
                if found is not None:
                    identity, pid = found
            elif line.startswith("Window: "):
                window = True
            elif line.lstrip("+~ ").startswith(DIFF_MARKERS):
                markers = True
        if any(marker in line for marker in TRUNCATION_MARKERS):
            markers = True
    complete = bool(indices) and window and not markers and bool(identity)
    return TreeInfo(
        indices=frozenset(indices),
        identity=identity,
        pid=pid,
        window_title_seen=window,
        complete=complete,
    )
