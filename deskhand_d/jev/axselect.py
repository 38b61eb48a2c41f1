"""Which elements of a tree Jev may act on, ranked (for :func:`.ax.select_candidates`). Pure.

What this owns: :class:`Selection`, the role scores and :func:`select`.

Eligible: the acting roles in ``_ROLE_SCORE`` (menu bar items and menu items among them), and
rows and cells that are selectable or selected; never an element flagged ``disabled`` or with
``(disabled)`` anywhere in its raw text. Score: the role's, minus 4 without a usable label
(empty, ``javascript:``, ``javascript:;``); with a goal, plus 4 for each goal word (two or more
letters, digits or CJK ideographs) found in the lowered label, plus 6 when the goal speaks of a
month or a search and the label names one (``previous month``, ``next month``, ``today``,
``search``, ``搜索``), plus 5 for a toggle button when the goal says ``tool`` or ``toolbar``.
Order: highest score first, then by index, then by position.

Speed: the label tests run once over all eligible labels joined (one ``lower()``, one ``find``
per label that holds a word) rather than per element, ``(disabled)`` is searched once over the
joined raw texts, and the ranking is one sort by score that keeps tree order among equals.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate, compress, count, islice, repeat
from operator import attrgetter, lt, not_
from typing import Final

import msgspec

from deskhand_d.jev.types import Candidate, Element

_GOAL_SPLIT: Final = re.compile(r"[^a-z0-9\u4e00-\u9fff]+")
_TOOL_WORD: Final = re.compile(r"\b(?:toolbar|tool)\b")
_DISABLED: Final = re.compile(r"\((?i:disabled)\)")  # starts with "(": a fast literal scan
_HOT: Final = ("previous month", "next month", "today", "search", "搜索")
_UNUSABLE: Final = frozenset(("", "javascript:", "javascript:;"))
_LABEL: Final = attrgetter("label")
_RAW: Final = attrgetter("raw")
_INDEX: Final = attrgetter("index")

# Roles Jev may act on, with the score each starts from.
_ROLE_SCORE: Final[dict[str, int]] = {
    **dict.fromkeys(
        (
            "button",
            "toggle button",
            "radio button",
            "menu item",
            "menu bar item",
            "pop up button",
            "combo box",
        ),
        3,
    ),
    **dict.fromkeys(("text field", "text area", "search field"), 2),
    "link": 1,
    **dict.fromkeys(
        ("close button", "minimize button", "full screen button", "checkbox", "stepper", "tab"), 0
    ),
    **dict.fromkeys(("list", "date time area", "scroll area"), 0),
}
_ROW_SCORE: Final = 2
_ROW_ROLES: Final = frozenset(("row", "cell"))  # GTK 3 lists and trees select by cell
_TOOL_SCORES: Final = {**_ROLE_SCORE, "toggle button": _ROLE_SCORE["toggle button"] + 5}


class Selection(msgspec.Struct, frozen=True):
    """The ranked candidates Jev may choose from."""

    candidates: tuple[Candidate, ...]
    total: int  # eligible elements before the limit
    clipped: bool


def select(elements: Sequence[Element], goal: str, limit: int) -> Selection:
    """The elements Jev may act on, best first (ties by index), at most ``limit`` of them."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
        raise ValueError("The candidate limit must be an integer from 1 to 200.")
    lowered = goal.lower()
    tokens = [t for t in _GOAL_SPLIT.split(lowered) if len(t) >= 2]
    hot_goal = "month" in lowered or "搜索" in lowered or "search" in lowered
    get = (_TOOL_SCORES if _TOOL_WORD.search(lowered) else _ROLE_SCORE).get
    picked: list[Element] = []
    scores: list[int] = []
    for element in elements:
        score = get(element.role)
        if score is None:
            if element.role not in _ROW_ROLES:
                continue
            states = element.states
            if ("selectable" not in states and "selected" not in states) or "disabled" in states:
                continue
            score = _ROW_SCORE
        elif element.states and "disabled" in element.states:
            continue
        picked.append(element)
        scores.append(score)
    if picked and _DISABLED.search("\n".join(map(_RAW, picked))) is not None:
        keep = [_DISABLED.search(e.raw) is None for e in picked]
        picked = list(compress(picked, keep))
        scores = list(compress(scores, keep))
    labels = list(map(_LABEL, picked))
    for at in compress(count(), map(_UNUSABLE.__contains__, labels)):
        scores[at] -= 4
    if tokens or hot_goal:
        needles = [(token, 4) for token in tokens]
        ascii_ = list(map(str.isascii, labels))
        for group in (compress(count(), ascii_), compress(count(), map(not_, ascii_))):
            _score_labels(labels, list(group), needles, hot_goal, scores)
    indices = list(map(_INDEX, picked))
    if all(map(lt, indices, islice(indices, 1, None))):  # tree order is index order
        order = sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:limit]
    else:
        ranked = sorted(zip(map(int.__neg__, scores), indices, count(), strict=False))
        order = [at for _, _, at in ranked[:limit]]
    chosen = tuple(Candidate(element=picked[at], score=scores[at]) for at in order)
    return Selection(chosen, len(scores), len(scores) > limit)


def _score_labels(
    labels: list[str],
    group: list[int],
    needles: list[tuple[str, int]],
    hot_goal: bool,
    scores: list[int],
) -> None:
    """Add the points of the goal words (``needles``: word, points) and, for a hot goal, of the
    hot phrases to the ``scores`` of the labels numbered in ``group``.

    The labels are joined and lowered at once: ASCII and other labels go in separate groups,
    as ``lower()`` takes a much slower path over text that is not all ASCII.
    """
    joined = "\n".join([labels[at] for at in group])
    low = joined.lower()
    if len(low) != len(joined):  # lower() grew a label ("İ"): offsets no longer line up
        for at in group:
            label = labels[at].lower()
            scores[at] += sum(points for needle, points in needles if needle in label)
            if hot_goal and any(phrase in label for phrase in _HOT):
                scores[at] += 6
        return
    # the k-th label of the group ends where the next one starts, at ends[k] (after its "\n")
    ends = list(accumulate([len(labels[at]) + 1 for at in group]))
    for needle, points in needles:
        for k in _holding(low, needle, ends):
            scores[group[k]] += points
    if hot_goal:
        hot: set[int] = set()
        for phrase in _HOT:
            hot.update(_holding(low, phrase, ends))
        for k in hot:
            scores[group[k]] += 6


def _holding(low: str, needle: str, ends: list[int]) -> set[int]:
    """The labels (by number) of the joined text ``low`` that contain ``needle``."""
    pieces = low.split(needle)  # one C pass; the first hit of each label is among the splits
    if len(pieces) == 1:
        return set()
    size = len(needle)
    hits = accumulate([len(piece) + size for piece in pieces[1:-1]], initial=len(pieces[0]))
    return set(map(bisect_right, repeat(ends), hits))
