"""Accessibility-tree text -> its elements, focus and identity (for :func:`.ax.parse`). Pure.

What this owns: :class:`AxParseError`, the header checks (where the tree starts, ``App=`` and
``Window:``, refusing diffs and receipts), and reading element lines into :class:`Element`
values: the per-line grammar is :func:`.axgrammar.split_rest`. The layout and the rules for
continuation lines are described in :mod:`.ax`.

Speed: one pass over the lines, the common line (the next number, no continuation lines, not
in a menu bar) on the shortest path, and each distinct text after an index parsed once per call
(a memo local to the call). Passes over all lines at once (``map`` over the split lines) were
measured slower at 10,000 elements: their temporaries outgrow the CPU caches.
"""

from __future__ import annotations

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

# elements, focus, app, pid, window title
Read = tuple[list[Element], int | None, str, int | None, str]


class AxParseError(ValueError):
    """The text is not one full accessibility tree; the message says what to do instead."""


def refusal(what: str) -> AxParseError:
    return AxParseError(f"The text is {what}; observe the app again for a full tree.")


def read(text: str) -> Read:
    """Elements, focus, app, pid and window title of one full tree; refuses anything else."""
    norm = text.replace("\r\n", "\n") if "\r" in text else text
    lines = norm.split("\n")
    start, app, pid, window = _header(lines)
    # Only when some line's indentation holds a space ("\n " or "\t ") is the slow check needed.
    spaced = norm[:1] == " " or "\n " in norm or "\t " in norm
    elements, focus = _elements(lines, start, spaced)
    return elements, focus, app, pid, window


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


def _elements(lines: list[str], start: int, spaced: bool) -> tuple[list[Element], int | None]:
    """Read the element lines from ``lines[start]`` (an element line) to the end of the tree.

    One pass; each distinct text after an index is parsed once per call. The common line (the
    next number, not in a menu bar, no continuation lines) takes the shortest path.
    """
    lines.append(_END)
    indent = " \t" if spaced else "\t"
    elements: list[Element] = []
    append = elements.append
    memo: dict[str, Parts] = {}
    lookup = memo.get
    menu_memo: dict[str, Parts] = {}
    later: dict[int, int] | None = None
    focus: int | None = None
    menu_width = -1  # indentation width of the menu bar being read, -1 outside one
    extra: list[str] = []  # continuation lines of the element being read
    blanks = 0  # blank lines not yet known to belong to a value
    # the element being read: its line, indentation width, index and text after the index
    line = lines[start]
    stripped = line.lstrip(indent)
    num, _, rest = stripped.partition(" ")
    cur = MAX_INDEX + 1 if len(num) > 16 else int(num)
    if cur > MAX_INDEX:
        raise refusal(f"numbered beyond the safe index range ({num[:24]})")
    cur_line, cur_rest = line, rest
    base = cur_width = len(line) - len(stripped)
    odd_indent = spaced and " " in line[:cur_width]  # spaces in an element's indentation, or
    # an element left of the first: depths are worked out again at the end
    expect = str(cur + 1)  # the number the next element carries when numbering is contiguous
    for at in range(start + 1, len(lines)):
        line = lines[at]
        stripped = line.lstrip(indent)
        num, _, rest = stripped.partition(" ")
        if num == expect:
            index = cur + 1
        elif num.isdigit() and num.isascii():
            index = MAX_INDEX + 1 if len(num) > 16 else int(num)
            if index != cur + 1:
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
        # close the element being read
        if extra:
            joined = "\n" + "\n".join(extra)
            cur_rest += joined
            cur_line += joined
            extra = []
        if menu_width < 0 or cur_width <= menu_width:
            menu_width = -1
            parts = lookup(cur_rest)
            if parts is None:  # its attributes dict goes to this element, copies to the others
                parts = memo[cur_rest] = split_rest(cur_rest)
                role, source, label, states, attributes, actions = parts
            else:
                role, source, label, states, attributes, actions = parts
                attributes = attributes.copy() if attributes else {}
            if role == "menu bar":
                menu_width = cur_width
        else:
            parts = menu_memo.get(cur_rest) or menu_memo.setdefault(
                cur_rest, split_rest(cur_rest, True)
            )
            role, source, label, states, attributes, actions = parts
            attributes = attributes.copy() if attributes else {}
        append(
            Element(
                index=cur,
                depth=cur_width - base,
                role=role,
                source_role=source,
                label=label,
                states=states,
                attributes=attributes,
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
        if cur_width < base or (spaced and " " in line[:cur_width]):
            odd_indent = True
    if odd_indent:
        depths = axgrammar.levels([e.raw for e in elements])
        elements = [
            msgspec.structs.replace(e, depth=d) for e, d in zip(elements, depths, strict=True)
        ]
    return elements, focus
