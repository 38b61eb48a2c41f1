"""Where the tree sits in an accessibility text, and where each element's text is. Pure.

What this owns: :class:`AxParseError` and the refusals, :data:`RECEIPT`, the header lines
(``App=`` in either form, ``Window:``), the line shapes (element lines, the lines that end a
tree, the focus footer) and :func:`read`, which turns one text into a :class:`Layout`: the header
facts, and per element its number, indentation and text, without reading any role or attribute
(that is :mod:`.grammar`'s, element by element, when asked). Both readers of a tree start here:
the daemon's stateIds (:mod:`.facts`) and the elements Jev chooses from (:mod:`.tree`).

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
refused (:attr:`Layout.refusal`; :class:`AxParseError` where a full tree is required): their
indices cannot be trusted against a full tree.

Speed: the common text (element lines indented with tabs, numbered 0, 1, 2 … with no value
line shaped like an element: every tree Sky and Deskhand's backends write) is cut into its
elements by one regular-expression split, in C. Every element-shaped line is then an element,
so the rules above need no walk: comparing the numbers with ``0, 1, 2 …`` is one list
comparison, and only the elements whose text runs over several lines are looked at line by line
(for the end of the tree). Any other text (sparse numbering, a value line that looks like an
element, indentation with spaces, leading zeros) is walked line by line
(:func:`read_by_lines`). Both give the same layout.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from itertools import compress, count, repeat
from operator import contains
from typing import Final, final

from deskhand_d.surface import DIFF_MARKERS

__all__ = [
    "MAX_INDEX",
    "RECEIPT",
    "AxParseError",
    "Layout",
    "ends_tree",
    "focus_index",
    "identity",
    "index_of",
    "read",
    "read_by_lines",
    "window_title",
]

RECEIPT: Final = "Action completed. Call `get_app_state`"
MAX_INDEX: Final = 2**53 - 1
_INSTRUCTIONS_OPEN: Final = "<app_specific_instructions>"
_INSTRUCTIONS_CLOSE: Final = "</app_specific_instructions>"
_APP_STATE_CLOSE: Final = "</app_state>"  # also appended to the lines, so the last element closes
_FOCUS: Final = re.compile(r"focused UI element is\s+([0-9]+)\b", re.IGNORECASE)
_IDENTITY: Final = re.compile(r"App=(.+?) \((?:bundleID (\S+), )?pid ([0-9]{1,18})\)\s*$")
# An element line after a newline: its tabs, its number, and the space and first word after them
# (up to a space or a newline; "" for a bare number). Splitting a tree by it leaves the rest of
# each element's text, continuation lines included, between the matches.
_ELEMENTS: Final = re.compile(r"\n(\t*+)([0-9]++)(?=[ \n]|$)( ?+[^ \n]*+)").split  # no backtracking
_SPACED_INDENT: Final = re.compile(r"\t* ").match  # the first element line indented with a space
_NEWLINES: Final = repeat("\n")
# In a tail: a line that may end the tree (group 1; ends_tree() decides), or an element line
# indented with a space (which the split does not see; the walk reads those).
_END_OR_SPACED: Final = re.compile(
    r"\n(?:((?i:the focused ui element is)|</app_state>|Selected text:)"
    r"|\t* [ \t]*[0-9]+(?=[ \n]|$))"
).search
# "0", "1", "2", ... for comparing a tree's numbers in one pass; grown to the largest tree read
# (a cache of constants: reading stays a pure function of the text).
_NUMERALS: list[str] = []
_NUMERALS_MAX: Final = 1 << 16


class AxParseError(ValueError):
    """The text is not one full accessibility tree; the message says what to do instead."""


def refusal(what: str) -> str:
    return f"The text is {what}; observe the app again for a full tree."


_DIFF: Final = refusal("a diff or partial update, not a full accessibility tree")
_RECEIPT_ONLY: Final = refusal("an action receipt without a tree")
_EMPTY: Final = refusal("without any accessibility elements")


@final
class Layout:
    """One text read down to its element lines: the header facts, and per element (by position
    in the tree, in text order) its number and its text.

    ``refusal`` is ``""`` for a full tree; otherwise it says why the text is not one, and there
    are no elements. An element's text is kept in four pieces: its indentation and number as
    written (``indents``, ``numbers``), ``words`` (the space after the number and the first
    word, up to a space or a newline: ``" button"``; ``""`` for a bare number) and ``tails``
    (everything after that word, continuation lines included, possibly ending in the newlines
    of blank lines that follow it). The common roles are known from ``words`` alone.
    """

    __slots__ = (
        "_depths",
        "_low",
        "app",
        "focus",
        "indents",
        "indices",
        "numbers",
        "pid",
        "refusal",
        "split",
        "tails",
        "window",
        "window_seen",
        "words",
    )

    def __init__(
        self,
        *,
        app: str = "",
        pid: int | None = None,
        window: str = "",
        window_seen: bool = False,
        refusal: str = "",
        focus: int | None = None,
        indices: Sequence[int] = (),
        indents: Sequence[str] = (),
        numbers: Sequence[str] = (),
        words: Sequence[str] = (),
        tails: Sequence[str] = (),
        depths: Sequence[int] | None = None,
    ) -> None:
        self.app = app  # from the App= line: the bundle id, else the path or name
        self.pid = pid
        self.window = window  # the Window: title
        self.window_seen = window_seen
        self.refusal = refusal
        self.focus = focus  # index named by the focus footer
        self.indices = indices  # increasing
        self.indents = indents
        self.numbers = numbers
        self.words = words
        self.tails = tails
        self._depths = depths
        self._low = -1
        self.split = depths is None and bool(indices)  # read by the split, not walked

    def __len__(self) -> int:
        return len(self.indices)

    def rest(self, at: int) -> str:
        """What follows the number of the element at position ``at`` (and one space),
        continuation lines joined with ``\\n``."""
        word = self.words[at]
        return ((word[1:] if word[:1] == " " else word) + self.tails[at]).rstrip("\n")

    def raw(self, at: int) -> str:
        """The element's line(s) as written, indentation included."""
        return (self.indents[at] + self.numbers[at] + self.words[at] + self.tails[at]).rstrip("\n")

    def width(self, at: int) -> int:
        """How many characters the element's line is indented by."""
        return len(self.indents[at])

    def depth(self, at: int) -> int:
        """The element's depth: indentation levels, the shallowest element at 0."""
        if self._depths is not None:
            return self._depths[at]
        if self._low < 0:  # indented with tabs (the split): one level per tab
            self._low = min(map(len, self.indents), default=0)
        return len(self.indents[at]) - self._low

    def depths(self) -> Sequence[int]:
        """Every element's depth."""
        if self._depths is None:
            widths = list(map(len, self.indents))
            low = min(widths, default=0)
            self._depths = [width - low for width in widths] if low else widths
        return self._depths


def read(text: str) -> Layout:
    """Where the tree of ``text`` is; a text that is not one full tree gets a refusal."""
    return _read(text, split=True)


def read_by_lines(text: str) -> Layout:
    """:func:`read` without the split: every line walked under the rules (for comparisons)."""
    return _read(text, split=False)


# (focus, indices, indents, numbers, words, tails, depths or None)
_Elements = tuple[
    int | None,
    Sequence[int],
    Sequence[str],
    Sequence[str],
    Sequence[str],
    Sequence[str],
    Sequence[int] | None,
]


def _read(text: str, *, split: bool) -> Layout:
    norm = text.replace("\r\n", "\n") if "\r" in text else text
    start, app, pid, window, seen, refused = _header(norm)
    found: _Elements | None = None
    if not refused and start >= 0:
        if split:
            found = _split(norm, start)
        if found is None:
            spaced = norm[:1] == " " or "\n " in norm or "\t " in norm
            try:
                found = _walk(norm[start:].split("\n"), spaced)
            except AxParseError as exc:
                refused = str(exc)
    if found is None:
        return Layout(app=app, pid=pid, window=window, window_seen=seen, refusal=refused or _EMPTY)
    focus, indices, indents, numbers, words, tails, depths = found
    return Layout(
        app=app,
        pid=pid,
        window=window,
        window_seen=seen,
        focus=focus,
        indices=indices,
        indents=indents,
        numbers=numbers,
        words=words,
        tails=tails,
        depths=depths,
    )


# ----- lines -----------------------------------------------------------------------------------


def identity(line: str) -> tuple[str, int | None] | None:
    """``App=…`` in either form -> (bundle id, or the path/name when no bundle id is given; pid)."""
    m = _IDENTITY.match(line)
    if m is None:
        value = line[4:].strip()
        return (value, None) if value else None
    return (m.group(2) or m.group(1)), int(m.group(3))


def window_title(line: str) -> str:
    """``Window: "<title>", App: <name>.`` (or a bare ``Window: <title>``) -> the title."""
    rest = line[len("Window:") :].strip()
    if rest[:1] == '"':
        end = rest.rfind('", App: ')
        if end > 0:
            return rest[1:end]
        return rest[1:-1] if len(rest) > 1 and rest[-1] == '"' else rest[1:]
    end = rest.rfind(", App: ")
    return rest[:end] if end >= 0 and rest.endswith(".") else rest


def index_of(line: str) -> int | None:
    """The number of an element-shaped line (``<spaces/tabs><digits>[ …]``), else None.

    A number too large to be an index comes back as ``MAX_INDEX + 1``.
    """
    num = line.lstrip(" \t").partition(" ")[0]
    if num.isdigit() and num.isascii():
        return MAX_INDEX + 1 if len(num) > 16 else int(num)
    return None


def ends_tree(line: str, after_blank: bool) -> bool:
    """A line (not shaped like an element) after which no element follows: the focus footer,
    ``</app_state>``, or a ``Selected text:`` tail after a blank line."""
    return (
        line[:25].lower() == "the focused ui element is"
        or line.startswith(_APP_STATE_CLOSE)
        or (after_blank and line.startswith("Selected text:"))
    )


def focus_index(line: str) -> int | None:
    """The index named by a focus footer (with or without its final period)."""
    match = _FOCUS.search(line)
    return int(match.group(1)) if match and len(match.group(1)) <= 16 else None


# ----- the header ------------------------------------------------------------------------------


def _header(norm: str) -> tuple[int, str, int | None, str, bool, str]:
    """Where the first element line starts (-1: nowhere), app, pid, window title, whether a
    ``Window:`` line was seen, and the first refusal met (``""``: none).

    The lines after a refusal are still read for the facts (the daemon keeps the pid of a diff).
    """
    app, pid, window, seen, refused = "", None, "", False, ""
    inside = False
    at = 0
    size = len(norm)
    while at <= size:
        stop = norm.find("\n", at)
        if stop < 0:
            stop = size
        line = norm[at:stop]
        if inside:
            inside = not line.startswith(_INSTRUCTIONS_CLOSE)
        elif index_of(line) is not None:
            return at, app, pid, window, seen, refused
        elif line.startswith(_INSTRUCTIONS_OPEN):
            inside = _INSTRUCTIONS_CLOSE not in line
        elif line.startswith("App=") and not app:
            found = identity(line)
            if found is not None:
                app, pid = found
        elif line.startswith("Window:") and not window:
            window = window_title(line)
            seen = True
        elif line.lstrip("+~ ").startswith(DIFF_MARKERS):
            refused = refused or _DIFF
        elif RECEIPT in line:
            refused = refused or _RECEIPT_ONLY
        at = stop + 1
    return -1, app, pid, window, seen, refused


# ----- the elements: one split -----------------------------------------------------------------


def _numerals(first: int, count: int) -> list[str]:
    if first or count > _NUMERALS_MAX:
        return list(map(str, range(first, first + count)))
    if len(_NUMERALS) < count:
        _NUMERALS.extend(map(str, range(len(_NUMERALS), count)))
    return _NUMERALS[:count]


def _split(norm: str, start: int) -> _Elements | None:
    """The elements from ``norm[start]`` (an element line) on, when every element-shaped line
    up to the end of the tree is an element indented with tabs, numbered 0, 1, 2 … (or on from
    the first number); None for any other text."""
    if _SPACED_INDENT(norm, start) is not None:
        return None
    parts = _ELEMENTS(norm[start - 1 :] if start else "\n" + norm)
    tails = parts[4::4]
    end = _end(tails)
    if end is None:
        return None
    count_, focus, last = end
    tails = tails[:count_]
    tails[-1] = last
    numbers = parts[2 : 4 * count_ : 4]
    first = numbers[0]
    if (first[0] == "0" and first != "0") or len(first) > 15:
        return None
    base = int(first)
    if numbers != _numerals(base, count_):
        return None
    tabs, words = parts[1 : 4 * count_ : 4], parts[3 : 4 * count_ : 4]
    return focus, range(base, base + count_), tabs, numbers, words, tails, None


def _end(tails: list[str]) -> tuple[int, int | None, str] | None:
    """Where the tree ends: how many elements it has, the focus footer's index, and the last
    element's tail without the lines from the end on; None when an element line indented with
    a space is met first (the walk reads those).

    Lines that are not element lines sit in the tails, so only tails with a newline hold any.
    """
    for k in compress(count(), map(contains, tails, _NEWLINES)):
        tail = tails[k]
        at = 0
        while (found := _END_OR_SPACED(tail, at)) is not None:
            at = found.start()
            if found.group(1) is None:
                return None
            stop = tail.find("\n", at + 1)
            line = tail[at + 1 : stop if stop >= 0 else len(tail)]
            # a blank line before it: a newline right before this one (at 0, the line before is
            # the element's own)
            if ends_tree(line, at > 0 and tail[at - 1] == "\n"):
                return k + 1, focus_index(line), tail[:at]
            at += 1
    return len(tails), None, tails[-1]


# ----- the elements: line by line --------------------------------------------------------------


def _later_positions(lines: Sequence[str]) -> dict[int, int]:
    """index -> the last line (to the end of the tree) shaped like that element."""
    seen: dict[int, int] = {}
    blank = False
    for at, line in enumerate(lines):
        index = index_of(line)
        if index is not None:
            seen[index] = at
        elif ends_tree(line, blank):
            break
        blank = not line
    return seen


def _levels(indents: Sequence[str]) -> list[int]:
    """Depths from indentation with spaces (or tabs and spaces): one level per tab, or per
    indentation unit (the smallest run of spaces in use); the shallowest element gets 0."""
    unit = min((i.count(" ") for i in indents if " " in i), default=1)
    found = [i.count("\t") + i.count(" ") // unit for i in indents]
    low = min(found, default=0)
    return [level - low for level in found]


def _walk(lines: list[str], spaced: bool) -> _Elements:
    """Read the element lines from ``lines[0]`` (an element line) to the end of the tree."""
    lines = [*lines, _APP_STATE_CLOSE]
    indent = " \t" if spaced else "\t"
    indices: list[int] = []
    indents: list[str] = []
    numbers: list[str] = []
    words: list[str] = []
    tails: list[str] = []
    later: dict[int, int] | None = None
    focus: int | None = None
    extra: list[str] = []  # continuation lines of the element being read
    blanks = 0  # blank lines not yet known to belong to a value
    # the element being read: its indentation, number, word and the rest of its first line
    line = lines[0]
    stripped = line.lstrip(indent)
    num, space, rest = stripped.partition(" ")
    cur = MAX_INDEX + 1 if len(num) > 16 else int(num)
    if cur > MAX_INDEX:
        raise AxParseError(refusal(f"numbered beyond the safe index range ({num[:24]})"))
    cur_indent, cur_num = line[: len(line) - len(stripped)], num
    word = rest.partition(" ")[0]
    cur_word, cur_tail = space + word, rest[len(word) :]
    base = len(cur_indent)
    odd_indent = spaced and " " in cur_indent  # spaces in an element's indentation, or an
    # element left of the first: depths are worked out from the indentation at the end
    expect = str(cur + 1)  # the number the next element carries when numbering is contiguous
    for at in range(1, len(lines)):
        line = lines[at]
        stripped = line.lstrip(indent)
        num, space, rest = stripped.partition(" ")
        if num == expect:
            index = cur + 1
        elif num.isdigit() and num.isascii():
            index = MAX_INDEX + 1 if len(num) > 16 else int(num)
            if index != cur + 1:
                if index <= cur:
                    index = -1
                else:
                    if later is None:
                        later = _later_positions(lines)
                    if later.get(cur + 1, -1) > at:
                        index = -1
            if index > MAX_INDEX:
                raise AxParseError(refusal(f"numbered beyond the safe index range ({num[:24]})"))
        elif not line:
            blanks += 1
            continue
        elif ends_tree(line, blanks > 0):
            index = -2
            focus = focus_index(line)
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
            cur_tail += "\n" + "\n".join(extra)
            extra = []
        indices.append(cur)
        indents.append(cur_indent)
        numbers.append(cur_num)
        words.append(cur_word)
        tails.append(cur_tail)
        if index == -2:
            break
        blanks = 0
        cur = index
        expect = str(index + 1)
        cur_indent, cur_num = line[: len(line) - len(stripped)], num
        word = rest.partition(" ")[0]
        cur_word, cur_tail = space + word, rest[len(word) :]
        if len(cur_indent) < base or (spaced and " " in cur_indent):
            odd_indent = True
    depths = _levels(indents) if odd_indent else [len(i) - base for i in indents]
    return focus, indices, indents, numbers, words, tails, depths
