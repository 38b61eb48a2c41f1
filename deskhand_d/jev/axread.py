"""Accessibility-tree text -> its elements, focus and identity (for :func:`.ax.parse`). Pure.

What this owns: :class:`AxParseError`, the header checks (where the tree starts, ``App=`` and
``Window:``, refusing diffs and receipts), and reading element lines into :class:`Element`
values: the per-line grammar is :func:`.axgrammar.split_rest`. The layout and the rules for
continuation lines are described in :mod:`.ax`.

Two readings give the same elements. The general one walks line by line with the whole rule
set. The contiguous one handles the common case in bulk (C-level ``map`` passes over all lines,
each distinct element text parsed once per call): tab indentation, and every element-shaped line
of the tree numbered one more than the one before it, so each of them starts an element and
every other line continues the value above. It gives up (returns ``None``) on anything else.
"""

from __future__ import annotations

from collections.abc import Iterable
from itertools import compress, count, islice, repeat
from operator import itemgetter, ne, not_, sub
from typing import Final

import msgspec

from deskhand_d.jev import axgrammar
from deskhand_d.jev.axgrammar import MAX_INDEX, Parts, split_rest
from deskhand_d.jev.types import Element
from deskhand_d.mcp.results import DIFF_MARKERS

RECEIPT: Final = "Action completed. Call `get_app_state`"
_INSTRUCTIONS_OPEN: Final = "<app_specific_instructions>"
_INSTRUCTIONS_CLOSE: Final = "</app_specific_instructions>"
_END: Final = "</app_state>"  # appended to the lines so the last element is always closed
_MARK: Final = itemgetter(0)
_REST: Final = itemgetter(2)
_ROLE: Final = itemgetter(0)

# elements, focus, app, pid, window title
Read = tuple[list[Element], int | None, str, int | None, str]


class AxParseError(ValueError):
    """The text is not one full accessibility tree; the message says what to do instead."""


def refusal(what: str) -> AxParseError:
    return AxParseError(f"The text is {what}; observe again (get_app_state) for a full tree.")


def read(text: str) -> Read:
    """Elements, focus, app, pid and window title of one full tree; refuses anything else."""
    norm = text.replace("\r\n", "\n") if "\r" in text else text
    lines = norm.split("\n")
    start, app, pid, window = _header(lines)
    # Only when some line's indentation holds a space ("\n " or "\t ") is the slow check needed.
    spaced = norm[:1] == " " or "\n " in norm or "\t " in norm
    found = _contiguous(lines, start, spaced)
    if found is None:
        found = _general(lines, start, spaced)
    return found[0], found[1], app, pid, window


def _header(lines: list[str]) -> tuple[int, str, int | None, str]:
    """Where the tree starts, plus app, pid and window title; refuses non-trees."""
    app, pid, window = "", None, ""
    inside = False
    for at, line in enumerate(lines):
        if inside:
            inside = not line.startswith(_INSTRUCTIONS_CLOSE)
        elif axgrammar.index_of(line) is not None:
            return at, app, pid, window
        elif line.startswith(_INSTRUCTIONS_OPEN):
            inside = _INSTRUCTIONS_CLOSE not in line
        elif line.startswith("App=") and not app:
            found = axgrammar.identity(line)
            if found is not None:
                app, pid = found
        elif line.startswith("Window:") and not window:
            window = axgrammar.window_title(line)
        elif line.lstrip("+~ ").startswith(DIFF_MARKERS):
            raise refusal("a diff or partial update, not a full accessibility tree")
        elif RECEIPT in line:
            raise refusal("an action receipt without a tree")
    raise refusal("without any accessibility elements")


def _contiguous(
    lines: list[str], start: int, spaced: bool
) -> tuple[list[Element], int | None] | None:
    """The contiguous, tab-indented reading in bulk; None when the general one is needed."""
    body = every = lines[start:]
    heads = list(map(str.partition, body, repeat(" ")))  # (indentation + number, " ", rest)
    marks = list(map(_MARK, heads))
    nums = list(map(str.lstrip, marks, repeat("\t")))
    shaped = list(map(str.isdigit, nums))  # non-ASCII digits: see _inner
    if not shaped[0]:  # the first element is indented with spaces
        return None
    loose = list(compress(count(), map(not_, shaped)))  # positions of the other lines
    focus = None
    for at, where in enumerate(loose):  # the first line that ends the tree
        line = body[where]
        if not line:
            continue
        if spaced and axgrammar.index_of(line) is not None:  # an element indented with spaces
            return None
        if axgrammar.ends_tree(line, not body[where - 1]):
            focus = axgrammar.focus_index(line)
            del loose[at:], body[where:], heads[where:], marks[where:], nums[where:]
            del shaped[where:]
            break
    numbers = list(compress(nums, shaped)) if loose else nums
    if len(numbers[0]) > 16:
        return None
    first = int(numbers[0])
    inner = _inner(numbers, first)
    if inner is None or first + len(numbers) - len(inner) - 1 > MAX_INDEX:
        return None
    if inner:  # element-shaped lines that continue a value join the loose ones
        at_line = list(compress(count(), shaped)) if loose else range(len(shaped))
        moved = [at_line[at] for at in inner]
        for where in moved:
            shaped[where] = False
        loose = sorted([*loose, *moved])
    if loose:
        body = list(compress(body, shaped))
        heads = list(compress(heads, shaped))
        marks = list(compress(marks, shaped))
        nums = list(compress(nums, shaped))
    widths = list(map(sub, map(len, marks), map(len, nums)))
    rests = list(map(_REST, heads))
    if loose:
        _fold(every, loose, body, rests)
    memo = dict.fromkeys(rests)
    memo = dict(zip(memo, map(split_rest, memo), strict=True))
    parts = list(map(memo.__getitem__, rests))
    if "menu bar" in map(_ROLE, memo.values()):
        _menus(parts, widths, rests)
    low = min(widths)
    depths: Iterable[int] = map(sub, widths, repeat(low)) if low else widths
    return [
        Element(
            index=index,
            depth=depth,
            role=role,
            source_role=source,
            label=label,
            states=states,
            attributes=attributes.copy() if attributes else {},
            secondary_actions=actions,
            raw=raw,
        )
        for index, depth, (role, source, label, states, attributes, actions), raw in zip(
            count(first), depths, parts, body
        )
    ], focus


def _inner(nums: list[str], first: int) -> list[int] | None:
    """Which of these element-shaped lines (their numbers) continue a value, the first one
    numbered ``first`` being an element; None when the elements are not numbered contiguously.

    A line numbered ``e + 1`` after element ``e`` is the next element; any other continues the
    value above when its number is at most ``e``, or when a line numbered ``e + 1`` follows.
    """
    inner: list[int] = []
    rest = iter(nums)
    at, expect = 0, first
    while True:  # each pass runs (in C) to the next line not numbered as expected
        found = next(compress(count(at), map(ne, rest, map(str, count(expect)))), None)
        if found is None:
            return inner
        expect += found - at
        at = found + 1
        num = nums[found]
        if num.isascii():  # other digits never make an element
            value = MAX_INDEX + 1 if len(num) > 16 else int(num)
            if value == expect:  # the next number spelled another way ("007")
                return None
            if value > expect and str(expect) not in islice(nums, at, None):
                return None  # sparse numbering
        inner.append(found)


def _fold(lines: list[str], loose: list[int], raws: list[str], rests: list[str]) -> None:
    """Append the continuation lines (``lines[i]`` for ``i`` in ``loose``) to their elements.

    Each run of them belongs to the element line just above; blank lines that end a run are
    dropped, as no more text of the value follows them.
    """
    at = 0
    while at < len(loose):
        end = at + 1
        while end < len(loose) and loose[end] == loose[end - 1] + 1:
            end += 1
        extra = lines[loose[at] : loose[end - 1] + 1]
        while extra and not extra[-1]:
            extra.pop()
        if extra:
            owner = loose[at] - 1 - at  # its element: the lines above it, minus loose ones
            joined = "\n" + "\n".join(extra)
            raws[owner] += joined
            rests[owner] += joined
        at = end


def _menus(parts: list[Parts], widths: list[int], rests: list[str]) -> None:
    """Re-read every child of a ``menu bar`` (deeper than it) as a bare menu title."""
    roles = list(map(_ROLE, parts))
    memo: dict[str, Parts] = {}
    at = 0
    while True:
        try:
            at = roles.index("menu bar", at)
        except ValueError:
            return
        width = widths[at]
        at += 1
        while at < len(parts) and widths[at] > width:
            found = memo.get(rests[at])
            if found is None:
                found = memo[rests[at]] = split_rest(rests[at], True)
            parts[at] = found
            at += 1


def _general(lines: list[str], start: int, spaced: bool) -> tuple[list[Element], int | None]:
    """The line-by-line reading: any indentation and numbering."""
    lines.append(_END)
    indent_chars = " \t" if spaced else "\t"
    elements: list[Element] = []
    memo: dict[str, Parts] = {}
    menu_memo: dict[str, Parts] = {}
    later: dict[int, int] | None = None
    focus: int | None = None
    base = -1  # indentation width of the first element
    menu_width = -1  # indentation width of the menu bar being read, -1 outside one
    odd_indent = False  # spaces in an element's indentation, or an element left of the first
    cur = -1  # index of the element being read ...
    expect = "-"  # ... and the number the next one carries when the numbering is contiguous
    cur_line = cur_rest = ""
    cur_width = 0
    extra: list[str] = []  # its continuation lines
    blanks = 0  # blank lines not yet known to belong to a value
    for at in range(start, len(lines)):
        line = lines[at]
        stripped = line.lstrip(indent_chars)
        num, _, rest = stripped.partition(" ")
        if num == expect:
            index = cur + 1
        elif num.isdigit() and num.isascii():
            index = MAX_INDEX + 1 if len(num) > 16 else int(num)
            if base >= 0 and index != cur + 1:
                if index <= cur:
                    index = -1
                else:
                    if later is None:
                        later = axgrammar.later_positions(lines, start)
                    if later.get(cur + 1, -1) > at:
                        index = -1
            if index > MAX_INDEX:
                raise refusal(f"numbered beyond the safe index range ({num[:24]})")
        elif not line:
            blanks += 1
            continue
        elif axgrammar.ends_tree(line, blanks > 0):
            index = -2
            focus = axgrammar.focus_index(line)
        else:
            index = -1
        if index == -1:  # a continuation line
            if blanks:
                extra.extend([""] * blanks)
                blanks = 0
            extra.append(line)
            continue
        if cur_line:  # close the element being read
            if extra:
                joined = "\n".join(extra)
                cur_rest = cur_rest + "\n" + joined
                cur_line = cur_line + "\n" + joined
                extra = []
            if menu_width >= 0 and cur_width > menu_width:
                parts = menu_memo.get(cur_rest)
                if parts is None:
                    parts = menu_memo[cur_rest] = split_rest(cur_rest, True)
            else:
                if menu_width >= 0:
                    menu_width = -1
                parts = memo.get(cur_rest)
                if parts is None:
                    parts = memo[cur_rest] = split_rest(cur_rest)
            role, source, label, states, attributes, actions = parts
            if role == "menu bar":
                menu_width = cur_width
            elements.append(
                Element(
                    index=cur,
                    depth=cur_width - base,
                    role=role,
                    source_role=source,
                    label=label,
                    states=states,
                    attributes=attributes.copy() if attributes else {},
                    secondary_actions=actions,
                    raw=cur_line,
                )
            )
        if index == -2:
            break
        blanks = 0
        cur, cur_line, cur_rest = index, line, rest
        expect = str(index + 1)
        cur_width = len(line) - len(stripped)
        if base < 0:
            base = cur_width
        if cur_width < base or (spaced and " " in line[:cur_width]):
            odd_indent = True
    if odd_indent:
        depths = axgrammar.levels([e.raw for e in elements])
        elements = [
            msgspec.structs.replace(e, depth=d) for e, d in zip(elements, depths, strict=True)
        ]
    return elements, focus
