"""Which elements of a tree Jev may act on, ranked. Pure.

What this owns: :class:`Candidate`, :class:`Selection`, the role scores and
:func:`select_candidates`.

Eligible: the acting roles in ``_ROLE_SCORE`` (menu bar items and menu items among them), and
rows and cells that are selectable or selected; never an element flagged ``disabled`` or with
``(disabled)`` anywhere in its raw text. Score: the role's, minus 4 without a usable label
(empty, ``javascript:``, ``javascript:;``); with a goal, plus 4 for each goal word (two or more
letters, digits or CJK ideographs) found in the lowered label, plus 6 when the goal speaks of a
month or a search and the label names one (``previous month``, ``next month``, ``today``,
``search``, ``搜索``), plus 5 for a toggle button when the goal says ``tool`` or ``toolbar``.
Order: highest score first, then by index, then by position.

Speed: a parsed tree whose elements have not been read is ranked from its roles
(:meth:`.tree.Tree.roles`) and the labels of the eligible elements alone; a candidate carries
its index, role and label, and its element is read whole when first asked for (Jev is shown
index, role and label; the loop needs only the element Jev picks). The label tests run once
over all eligible labels joined (one lowering, one search per goal word and a split for those
the labels hold) rather than per element, ``(disabled)`` is searched once over the joined
texts, and the ranking is one sort by score that keeps tree order among equals.
"""

from __future__ import annotations

import re
from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate, compress, count, islice, repeat
from operator import attrgetter, lt
from typing import AnyStr, Final, final

import msgspec

from deskhand_d.ax.grammar import SECONDARY_ACTIONS, flags, head, split_attributes
from deskhand_d.ax.tree import Element, Tree

__all__ = ["Candidate", "Selection", "select_candidates"]

_GOAL_SPLIT: Final = re.compile(r"[^a-z0-9\u4e00-\u9fff]+")
_TOOL_WORD: Final = re.compile(r"\b(?:toolbar|tool)\b")
_DISABLED: Final = re.compile(r"\((?i:disabled)\)")  # starts with "(": a fast literal scan
_HOT: Final = ("previous month", "next month", "today", "search", "搜索")
_HOT_BYTES: Final = tuple(phrase.encode() for phrase in _HOT)
_SEPARATOR: Final = "\x00"  # between joined labels; no goal word or phrase holds it
_SEPARATOR_BYTES: Final = _SEPARATOR.encode()
_DOTTED_I, _KELVIN = "\u0130", "\u212a"  # the characters str.lower() turns into ASCII letters
_NEXT: Final = (1).__add__
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
_MAYBE: Final = frozenset((*_ROLE_SCORE, *_ROW_ROLES))  # roles that can be eligible
_Get = Callable[[str], int | None]  # a role's score, None when the role never is eligible
# What the head of an element gave: source role, label with its clause, body, states.
_Head = tuple[str, str, str, tuple[str, ...]]


@final
class Candidate:
    """An element Jev may act on, and its score.

    ``index``, ``role`` and ``label`` are the element's. ``element`` is the element itself; for
    a candidate ranked from a tree whose elements were not read, it is read whole on first use
    (kept from then on: the one attribute that changes, from "not yet read" to the element).
    """

    __slots__ = ("_element", "_source", "index", "label", "role", "score")

    def __init__(self, *, element: Element, score: int) -> None:
        self._element: Element | None = element
        self._source: tuple[Tree, int, _Head | None] | None = None
        self.index = element.index
        self.role = element.role
        self.label = element.label
        self.score = score

    @property
    def element(self) -> Element:
        if self._element is None:
            assert self._source is not None
            tree, at, part = self._source
            self._element = _read(tree, at, self.label, part)
            self._source = None
        return self._element

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Candidate):
            return NotImplemented
        return self.score == other.score and self.element == other.element

    __hash__ = None  # type: ignore[assignment]  # its element holds a dict

    def __repr__(self) -> str:
        return f"Candidate(element={self.element!r}, score={self.score!r})"


def _unread(
    tree: Tree, at: int, role: str, label: str, score: int, part: _Head | None
) -> Candidate:
    """A candidate for the element at position ``at`` of a tree whose elements are not read."""
    candidate = _NEW(Candidate)
    candidate._element = None
    candidate._source = tree, at, part
    candidate.index = tree.index_at(at)
    candidate.role = role
    candidate.label = label
    candidate.score = score
    return candidate


_NEW: Final = object.__new__


class Selection(msgspec.Struct, frozen=True):
    """The ranked candidates Jev may choose from."""

    candidates: tuple[Candidate, ...]
    total: int  # eligible elements before the limit
    clipped: bool


def select_candidates(tree: Tree, goal: str = "", limit: int = 40) -> Selection:
    """The elements Jev may act on, best first (ties by index), at most ``limit`` of them."""
    if isinstance(limit, bool) or not isinstance(limit, int) or not 1 <= limit <= 200:
        raise ValueError("The candidate limit must be an integer from 1 to 200.")
    lowered = goal.lower()
    get = (_TOOL_SCORES if _TOOL_WORD.search(lowered) else _ROLE_SCORE).get
    if tree.elements_read:
        picked, scores = _eligible(tree.elements, get)
        labels = list(map(_LABEL, picked))
        indices = list(map(_INDEX, picked))
        in_order = all(map(lt, indices, islice(indices, 1, None)))  # tree order: index order
        order = _rank(labels, scores, lowered, limit, None if in_order else indices)
        chosen = tuple(Candidate(element=picked[k], score=scores[k]) for k in order)
    else:
        positions, labels, scores, heads = _eligible_unread(tree, get)
        order = _rank(labels, scores, lowered, limit, None)  # a layout is in index order
        roles = tree.roles()
        chosen = tuple(
            _unread(tree, at, roles[at], labels[k], scores[k], heads.get(k))
            for k, at in zip(order, map(positions.__getitem__, order), strict=True)
        )
    return Selection(chosen, len(scores), len(scores) > limit)


def _eligible(elements: Sequence[Element], get: _Get) -> tuple[list[Element], list[int]]:
    """The eligible elements and the scores of their roles and labels."""
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
        scores.append(score - 4 if element.label in _UNUSABLE else score)
    if picked and _DISABLED.search("\n".join(map(_RAW, picked))) is not None:
        keep = [_DISABLED.search(e.raw) is None for e in picked]
        picked = list(compress(picked, keep))
        scores = list(compress(scores, keep))
    return picked, scores


def _eligible_unread(
    tree: Tree, get: _Get
) -> tuple[list[int], list[str], list[int], dict[int, _Head]]:
    """:func:`_eligible` for a parsed tree whose elements are not read: the eligible elements'
    positions in the tree, labels and scores, and (by number among them) the heads read for
    some of them, kept for reading the chosen ones whole (:func:`_read`).

    The label of an element whose first word settles its role is the rest of its text,
    trimmed; only a label that opens with flags or holds a Secondary Actions clause, or an
    element whose first word does not settle its role, is read further (:func:`.grammar.head`).
    """
    layout = tree.layout
    assert layout is not None
    roles = tree.roles()
    unsettled = tree.unsettled()
    tails, words = layout.tails, layout.words
    positions: list[int] = []
    labels: list[str] = []
    scores: list[int] = []
    heads: dict[int, _Head] = {}
    keep_at, keep_label, keep_score = positions.append, labels.append, scores.append
    part: _Head | None
    for at in compress(count(), map(_MAYBE.__contains__, roles)):
        score = get(roles[at])
        if at in unsettled:
            _, source, label, states, body = head(layout.rest(at), at in tree.in_menu_bar())
            part = source, label, body, states
        else:
            label = tails[at].strip()
            if label[:1] == "(":
                states, body = flags(label)
                part = words[at][1:], label, body, states
            elif SECONDARY_ACTIONS in label:
                part = words[at][1:], label, label, ()
            elif score is None:  # a row or a cell without flags: not selectable
                continue
            else:  # most eligible elements: the label is the tail, there are no flags
                keep_at(at)
                keep_label(label)
                keep_score(score - 4 if label in _UNUSABLE else score)
                continue
        states = part[3]
        if states and "disabled" in states:
            continue
        if score is None:  # a row or a cell
            if "selectable" not in states and "selected" not in states:
                continue
            score = _ROW_SCORE
        if SECONDARY_ACTIONS in part[2]:
            label = split_attributes(label, part[2])[0]
        heads[len(positions)] = part
        keep_at(at)
        keep_label(label)
        keep_score(score - 4 if label in _UNUSABLE else score)
    # "(disabled)" holds no space or newline: it is in an element's word or in its tail
    search = _DISABLED.search
    if search("\n".join(map(tails.__getitem__, positions))) or search(
        "\n".join(map(words.__getitem__, positions))
    ):
        keep = [not (search(words[at]) or search(tails[at])) for at in positions]
        heads = {n: heads[k] for n, k in enumerate(compress(count(), keep)) if k in heads}
        positions = list(compress(positions, keep))
        labels = list(compress(labels, keep))
        scores = list(compress(scores, keep))
    return positions, labels, scores, heads


def _read(tree: Tree, at: int, label: str, part: _Head | None) -> Element:
    """The element at position ``at`` of an unread tree, read whole, given its ranking label
    and what its head gave (None: its first word settles its role, its label is its tail)."""
    layout = tree.layout
    assert layout is not None
    if part is None:
        part = layout.words[at][1:], label, label, ()
    source, label, body, states = part
    label, attributes, actions = split_attributes(label, body)
    return Element(
        index=tree.index_at(at),
        depth=layout.depth(at),
        role=tree.roles()[at],
        source_role=source,
        label=label,
        states=states,
        attributes=attributes,
        secondary_actions=actions,
        raw=layout.raw(at),
    )


def _rank(
    labels: list[str], scores: list[int], lowered: str, limit: int, indices: list[int] | None
) -> list[int]:
    """Add the goal's points to ``scores``; the positions of the best ``limit``, best first.

    ``indices``: the elements' indices when they are not in index order (None: they are).
    """
    tokens = [t for t in _GOAL_SPLIT.split(lowered) if len(t) >= 2]
    hot_goal = "month" in lowered or "搜索" in lowered or "search" in lowered
    if labels and (tokens or hot_goal):
        points: dict[str, int] = {}
        for token in tokens:  # a word said twice in the goal counts twice
            points[token] = points.get(token, 0) + 4
        _score_labels(labels, list(points.items()), _HOT if hot_goal else (), scores)
    if indices is None:
        return sorted(range(len(scores)), key=scores.__getitem__, reverse=True)[:limit]
    ranked = sorted(zip(map(int.__neg__, scores), indices, count(), strict=False))
    return [at for _, _, at in ranked[:limit]]


def _score_labels(
    labels: list[str], needles: list[tuple[str, int]], phrases: tuple[str, ...], scores: list[int]
) -> None:
    """Add the points of the goal words (``needles``: word, points) and, once per label, 6 for
    any of the hot ``phrases`` to the ``scores`` of the ``labels`` that hold them, ignoring case.

    The labels are joined and lowered at once. Text that is not all ASCII is lowered as UTF-8
    bytes (``bytes.lower()`` changes only A-Z; ``str.lower()`` maps every character, much more
    slowly): the goal words and phrases are ASCII letters, digits and CJK ideographs, so the
    same labels hold them either way, unless a label has one of the two characters that lower
    into ASCII (``İ``, ``K``): then every label is lowered on its own.
    """
    joined = _SEPARATOR.join(labels)
    if joined.isascii():
        low = joined.lower()
        _add_points(low, needles, phrases, lambda: list(map(len, labels)), scores)
    elif _DOTTED_I in joined or _KELVIN in joined:
        for at, label in enumerate(labels):
            lowered = label.lower()
            scores[at] += sum(points for needle, points in needles if needle in lowered)
            if any(phrase in lowered for phrase in phrases):
                scores[at] += 6
    else:
        data = joined.encode().lower()
        encoded = [(needle.encode(), points) for needle, points in needles]
        hot = tuple(phrase.encode() for phrase in phrases)
        if joined.count(_SEPARATOR) == len(labels) - 1:  # no label holds the separator
            sizes = lambda: list(map(len, data.split(_SEPARATOR_BYTES)))  # noqa: E731
        else:
            sizes = lambda: list(map(len, map(str.encode, labels)))  # noqa: E731
        _add_points(data, encoded, hot, sizes, scores)


def _add_points(
    text: AnyStr,
    needles: list[tuple[AnyStr, int]],
    phrases: tuple[AnyStr, ...],
    sizes: Callable[[], list[int]],
    scores: list[int],
) -> None:
    """:func:`_score_labels` over the joined, lowered ``text``; ``sizes()`` gives the labels'
    lengths in it (asked for only when some word is found)."""
    ends: list[int] = []
    hot: set[int] = set()
    for needle, points in needles:
        if needle in text:
            ends = ends or list(accumulate(map(_NEXT, sizes())))
            for k in _holding(text, needle, ends):
                scores[k] += points
    for phrase in phrases:
        if phrase in text:
            ends = ends or list(accumulate(map(_NEXT, sizes())))
            hot.update(_holding(text, phrase, ends))
    for k in hot:
        scores[k] += 6


def _holding(text: AnyStr, needle: AnyStr, ends: list[int]) -> set[int]:
    """The labels (by number) of the joined ``text`` that contain ``needle``; the k-th label
    ends where the next one starts, at ``ends[k]`` (after its separator)."""
    pieces = text.split(needle)  # one C pass; the first hit of each label is among the splits
    size = len(needle)
    hits = accumulate([len(piece) + size for piece in pieces[1:-1]], initial=len(pieces[0]))
    return set(map(bisect_right, repeat(ends), hits))
