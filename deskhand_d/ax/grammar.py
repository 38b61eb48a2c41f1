"""The grammar of one element's text: role, label, states, attributes, actions. Pure.

What this owns: :func:`split_rest` (the text after an element's index -> role, label, states,
attributes, secondary actions), in two steps for callers that need the first only: :func:`head`
(role, label, states) and :func:`split_attributes`.
The role tables and the role rules live in :mod:`.roles`; where an element's text starts and
ends (numbers, continuation lines, the header) is :mod:`.layout`'s.

Roles: see :mod:`.roles`; every child of a ``menu bar`` has the empty role (Sky prints menu
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
from typing import Final

from deskhand_d.ax.roles import ATTRIBUTE_KEYS, PLAIN_ROLES, role_of

__all__ = ["SECONDARY_ACTIONS", "Head", "Parts", "flags", "head", "split_attributes", "split_rest"]

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

# (role, source_role, label, states, attributes, secondary_actions)
Parts = tuple[str, str, str, tuple[str, ...], dict[str, str], tuple[str, ...]]
# (role, source_role, label with any Secondary Actions clause, states, label after the flags)
Head = tuple[str, str, str, tuple[str, ...], str]
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


def head(rest: str, in_menu_bar: bool = False) -> Head:
    """Role, role as written, label (flags and attributes still in it), states, and the body
    (the label after its flags) of what follows an element's index."""
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
    if "(" in label and label[:1] == "(":  # "in" first: it allocates nothing
        flags_end = label.find(")") + 1
        if flags_end:
            body = label[flags_end:].lstrip()
            return role, source, label, _states(label[1 : flags_end - 1]), body
    return role, source, label, (), label


def flags(label: str) -> tuple[tuple[str, ...], str]:
    """The states of a label that opens with ``(``, and the body after them."""
    flags_end = label.find(")") + 1
    if flags_end:
        return _states(label[1 : flags_end - 1]), label[flags_end:].lstrip()
    return (), label


def split_rest(rest: str, in_menu_bar: bool = False) -> Parts:
    """Parse what follows an element's index (continuation lines joined with ``\\n``)."""
    role, source, label, states, body = head(rest, in_menu_bar)
    label, attributes, actions = split_attributes(label, body)
    return role, source, label, states, attributes, actions


def split_attributes(label: str, body: str) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """The label without its Secondary Actions clause, the attributes and the secondary actions
    of a label whose body (the label after its flags) is ``body``."""
    if ":" not in body:
        return label, {}, ()
    # [", " + title (or "" when the body starts with a key), key, value, key, value, ...]
    pieces = _ATTRIBUTE_SPLIT(", " + body)
    count = len(pieces)
    if count == 1:
        return label, {}, ()
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
        return label, attributes, ()
    return _attributes(label, body)


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
