"""Sky's accessibility-text grammar, one line (or one element) at a time. Pure.

What this owns: the attribute keys, :func:`split_rest` (the text after an element's index ->
role, label, states, attributes, secondary actions), and the line shapes :mod:`.axread` needs:
which lines look like elements, which end a tree, the focus footer, the ``App=`` and
``Window:`` lines, and depth levels for space-indented trees. The role tables and the role
rules live in :mod:`.axroles` (re-exported here); :mod:`.axread` puts lines together into a
tree (contiguity, continuation lines, header checks).

Roles: see :mod:`.axroles`; every child of a ``menu bar`` has the empty role (Sky prints menu
titles bare: ``32 Calculator``), which :func:`split_rest` gives with ``in_menu_bar``, unless it
starts with a menu role word (``menu bar item``, ``menu item``, ``menu``, ``separator``), as
Deskhand's Linux backend writes a menu bar's titles and the items of an open menu.

Label: the rest minus the role, trimmed, minus the ``Secondary Actions`` clause (wherever it
sits: Sky sometimes prints ``URL`` after it). Flags, ``Description:``, ``Value:`` and the other
attributes stay in the label as written; they are also parsed into ``attributes``.

Speed: one regular-expression split per line with attributes finds every key and its value;
the key-by-key walk (:func:`_attributes`) runs only for a repeated key, a Secondary Actions
clause or an empty value written as ``Value:`` right before the next key.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

from deskhand_d.jev.axroles import (
    ATTRIBUTE_KEYS,
    MULTI_WORD_ROLES,
    PLAIN_ROLES,
    ROLE_ALIASES,
    role_of,
)

__all__ = [
    "ATTRIBUTE_KEYS",
    "MAX_INDEX",
    "MULTI_WORD_ROLES",
    "ROLE_ALIASES",
    "SECONDARY_ACTIONS",
    "Parts",
    "ends_tree",
    "focus_index",
    "identity",
    "index_of",
    "later_positions",
    "levels",
    "split_rest",
    "window_title",
]

SECONDARY_ACTIONS: Final = "Secondary Actions"
_KEYS: Final = frozenset(ATTRIBUTE_KEYS)
_KEY_ALTERNATIVES: Final = "|".join(ATTRIBUTE_KEYS)
# ", " that starts another attribute: a known key, a colon, then whitespace or the end.
_ATTRIBUTE_BREAK: Final = re.compile(f", (?=(?:{_KEY_ALTERNATIVES}):(?:\\s|$))").split
# The same, taking the key (captured) and the whitespace after the colon along: split by it,
# ", " + a body gives [", " + title or "", key, value, key, value, ...].
_ATTRIBUTE_SPLIT: Final = re.compile(f", ({_KEY_ALTERNATIVES}):(?:\\s|$)").split
# ", Key:" as a title: "Key:" right before the next key, an empty value _ATTRIBUTE_SPLIT misses
_KEY_SEGMENTS: Final = frozenset(f", {key}:" for key in ATTRIBUTE_KEYS)
_KEY_SEGMENT_MAX: Final = max(map(len, _KEY_SEGMENTS))
_FOCUS: Final = re.compile(r"focused UI element is\s+([0-9]+)\b", re.IGNORECASE)
_APP_STATE_CLOSE: Final = "</app_state>"
MAX_INDEX: Final = 2**53 - 1
_IDENTITY: Final = re.compile(r"App=(.+?) \((?:bundleID (\S+), )?pid ([0-9]{1,18})\)\s*$")

# (role, source_role, label, states, attributes, secondary_actions)
Parts = tuple[str, str, str, tuple[str, ...], dict[str, str], tuple[str, ...]]
_PLAIN_ROLE: Final = PLAIN_ROLES.get


def _states(flags: str) -> tuple[str, ...]:
    if "," not in flags:
        word = flags.strip().lower()
        return (word,) if word else ()
    return tuple(w for w in map(str.strip, flags.lower().split(",")) if w)


_MENU_ROLES: Final = ("menu bar item", "menu item", "menu", "separator")


def _menu_role(rest: str) -> bool:
    """Whether ``rest`` starts with a menu role word (then a space, a newline or the end)."""
    return any(
        rest.startswith(role) and rest[len(role) : len(role) + 1] in ("", " ", "\n")
        for role in _MENU_ROLES
    )


def split_rest(rest: str, in_menu_bar: bool = False) -> Parts:
    """Parse what follows an element's index (continuation lines joined with ``\\n``)."""
    rest = rest.strip()
    if in_menu_bar and not _menu_role(rest):
        role = source = ""
        label = rest
    else:
        source, _, label = rest.partition(" ")
        plain = _PLAIN_ROLE(source)
        if plain is None:
            role, source, label = role_of(rest)
        else:
            role = plain
            label = label.lstrip()
    states: tuple[str, ...] = ()
    body = label
    if "(" in label and label[:1] == "(":  # "in" first: it allocates nothing
        flags_end = label.find(")") + 1
        if flags_end:
            states = _states(label[1 : flags_end - 1])
            body = label[flags_end:].lstrip()
    if ":" not in body:
        return role, source, label, states, {}, ()
    # [", " + title (or "" when the body starts with a key), key, value, key, value, ...]
    pieces = _ATTRIBUTE_SPLIT(", " + body)
    count = len(pieces)
    if count == 1:
        return role, source, label, states, {}, ()
    if count == 3:
        attributes = {pieces[1]: pieces[2]}
    elif count == 5:
        attributes = {pieces[1]: pieces[2], pieces[3]: pieces[4]}
    else:
        attributes = dict(zip(pieces[1::2], pieces[2::2], strict=True))
    if (
        len(attributes) + len(attributes) + 1 == count
        and SECONDARY_ACTIONS not in attributes
        and (len(pieces[0]) > _KEY_SEGMENT_MAX or pieces[0] not in _KEY_SEGMENTS)
    ):
        return role, source, label, states, attributes, ()
    label, attributes, actions = _attributes(label, body)
    return role, source, label, states, attributes, actions


def _attributes(label: str, body: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """Split ``body`` (``label`` after its flags) at attribute keys; drop the Secondary Actions
    clause from the label.

    A key that repeats can only be text inside the value before it, so it is folded back there.
    """
    segments = _ATTRIBUTE_BREAK(body)
    head = segments[0]
    key = head.partition(":")[0]
    after = head[len(key) + 1 : len(key) + 2]
    if key in _KEYS and head[len(key) : len(key) + 1] == ":" and (not after or after.isspace()):
        first = 0
    elif len(segments) == 1:
        return label, {}, ()
    else:
        first = 1  # segments[0] is the title
    attributes: dict[str, str] = {}
    actions: tuple[str, ...] = ()
    cut: list[int] = []  # segments that make up the Secondary Actions clause
    previous = ""
    for at in range(first, len(segments)):
        segment = segments[at]
        key = segment.partition(":")[0]
        if key == SECONDARY_ACTIONS and not cut:
            value = segment[len(key) + 2 :]
            actions = tuple(value.split(", ")) if value else ()
            cut.append(at)
        elif key in attributes or key == SECONDARY_ACTIONS:
            if previous == SECONDARY_ACTIONS:
                actions += tuple(segment.split(", "))
                cut.append(at)
            else:
                attributes[previous] += ", " + segment
            continue
        else:
            attributes[key] = segment[len(key) + 2 :]
        previous = key
    if cut:
        kept = ", ".join([text for at, text in enumerate(segments) if at not in cut])
        label = (label[: len(label) - len(body)] + kept).strip()
    return label, attributes, actions


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


def later_positions(lines: Sequence[str], start: int) -> dict[int, int]:
    """index -> the last line (from ``start`` to the end of the tree) shaped like that element."""
    seen: dict[int, int] = {}
    blank = False
    for at in range(start, len(lines)):
        line = lines[at]
        index = index_of(line)
        if index is not None:
            seen[index] = at
        elif ends_tree(line, blank):
            break
        blank = not line
    return seen


def levels(raws: Sequence[str]) -> list[int]:
    """Depths from the indentation of element lines indented with spaces (or tabs and spaces).

    One level per tab, or per indentation unit (the smallest run of spaces in use); the
    shallowest element gets depth 0.
    """
    indents = [raw[: len(raw) - len(raw.lstrip(" \t"))] for raw in raws]
    unit = min((i.count(" ") for i in indents if " " in i), default=1)
    found = [i.count("\t") + i.count(" ") // unit for i in indents]
    low = min(found, default=0)
    return [level - low for level in found]
