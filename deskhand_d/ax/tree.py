"""One accessibility tree as Deskhand reads it: its elements, each read when first needed. Pure.

What this owns: :class:`Element`, :class:`Tree`, :func:`parse` (the text of one full tree ->
:class:`Tree`, anything else -> :class:`.layout.AxParseError`) and :func:`find`. A parsed tree
keeps the :class:`.layout.Layout` of its text and reads an element's role, label, flags and
attributes (:func:`.grammar.split_rest`) only when asked: all of them by :attr:`Tree.elements`,
one by :meth:`Tree.element_at`, and the roles alone by :meth:`Tree.roles`, which is what ranking
candidates needs first (:mod:`.candidates`). A tree can also be built from elements (tests, the
backends' conformance checks); it then answers the same questions from them.

Menu bars: every element below a ``menu bar`` (until the next element indented no deeper than
it) is read with ``in_menu_bar`` (:mod:`.grammar`): Sky prints menu titles without a role.

Speed: the roles of most elements are known from the first word alone (one dictionary look-up
per element, in C, over :attr:`.layout.Layout.words`); only the others are read by
:func:`.roles.role_of` (:func:`.roles.word_role` says when the word settles it). When all
elements are read, their reading gives the roles (only the menu bars are found first), and each
distinct text is parsed once per tree (equal texts share the reading, each element getting its
own attributes dict).
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence
from operator import attrgetter
from typing import Final, cast, final

import msgspec

from deskhand_d.ax.grammar import Parts, head, split_rest
from deskhand_d.ax.layout import AxParseError, Layout, read
from deskhand_d.ax.roles import CONTINUATIONS, PLAIN_ROLES, ROLE_ALIASES, role_of, word_role

__all__ = ["SETTLED_ROLES", "Element", "Tree", "find", "parse"]

# Layout.words (the space and the first word after an element's number) -> the role, for the
# roles that word settles alone (the common one-word roles that start no multi-word role).
SETTLED_ROLES: Final[dict[str, str]] = {" " + word: role for word, role in PLAIN_ROLES.items()}
_MENU_BAR: Final = "menu bar"
_MENU_WORD: Final = " menu"  # the word every menu bar's role starts with
_MENU_WORDS: Final = frozenset((_MENU_WORD, " separator"))  # menu role words (grammar._MENU_ROLES)
_NONE: Final[frozenset[int]] = frozenset()


class Element(msgspec.Struct, frozen=True, kw_only=True):
    """One element line of a tree (continuation lines of a multi-line value folded in)."""

    index: int
    depth: int  # nesting level (tabs; the older shifted-root layout is normalised to root = 0)
    role: str  # normalised (e.g. "search field", "button"; zh-Hans roles mapped to English)
    source_role: str  # as written in the tree
    label: str  # the rest of the line after the role, minus a trailing Secondary Actions clause
    states: tuple[str, ...] = ()  # lower-cased words of a leading "(settable, selected)" group
    attributes: dict[str, str] = msgspec.field(default_factory=dict)  # Description, Value, ID, ...
    secondary_actions: tuple[str, ...] = ()
    raw: str = ""  # the original line(s), indentation included


@final
class Tree:
    """One observation: its elements in text order (indices increasing) and header facts.

    ``Tree(elements, focus, app, pid, window, text)`` builds one from elements; :func:`parse`
    builds one from a text, with its :attr:`layout`.
    """

    __slots__ = (
        "_elements",
        "_menu",
        "_roles",
        "_unsettled",
        "app",
        "focus",
        "layout",
        "pid",
        "text",
        "window",
    )

    def __init__(
        self,
        elements: Sequence[Element] = (),
        focus: int | None = None,
        app: str = "",
        pid: int | None = None,
        window: str = "",
        text: str = "",
        *,
        layout: Layout | None = None,
    ) -> None:
        self.focus = focus  # index named by the focus footer
        self.app = app  # from the App= line: the bundle id, else the path or name; "" without
        self.pid = pid
        self.window = window  # the Window: title; "" without the line
        self.text = text  # the text that was parsed
        self.layout = layout  # where each element's text is; None for a tree built from elements
        self._elements: tuple[Element, ...] | None = None if layout is not None else tuple(elements)
        self._roles: list[str] | None = None
        self._menu: frozenset[int] = _NONE
        self._unsettled: frozenset[int] = _NONE

    def __repr__(self) -> str:
        return f"Tree(app={self.app!r}, window={self.window!r}, elements={len(self)})"

    def __len__(self) -> int:
        if self._elements is not None:
            return len(self._elements)
        assert self.layout is not None
        return len(self.layout)

    @property
    def elements(self) -> tuple[Element, ...]:
        """Every element, in text order."""
        if self._elements is None:
            layout = self.layout
            assert layout is not None
            # the elements' reading gives their roles: only the menu bars are needed first
            menu = self._menu if self._roles is not None else _menu_positions(layout)
            self._elements = _read_all(layout, menu)
        return self._elements

    @property
    def elements_read(self) -> bool:
        """Whether :attr:`elements` has been read (or the tree was built from elements)."""
        return self._elements is not None

    def roles(self) -> list[str]:
        """The role of each element, in text order, without reading the rest of them."""
        return self._menu_roles()[0]

    def in_menu_bar(self) -> frozenset[int]:
        """The positions of the elements read as children of a menu bar (none in a tree built
        from elements: their roles are given)."""
        return self._menu_roles()[1]

    def unsettled(self) -> frozenset[int]:
        """The positions of the elements whose role their first word does not settle alone
        (:data:`SETTLED_ROLES`), and of those inside a menu bar."""
        self._menu_roles()
        return self._unsettled

    def index_at(self, at: int) -> int:
        """The index of the element at position ``at``."""
        if self._elements is not None:
            return self._elements[at].index
        assert self.layout is not None
        return self.layout.indices[at]

    def element_at(self, at: int) -> Element:
        """The element at position ``at`` (0 is the first element of the text)."""
        if self._elements is not None:
            return self._elements[at]
        layout = self.layout
        assert layout is not None
        role, source, label, states, attributes, actions = split_rest(
            layout.rest(at), at in self._menu_roles()[1]
        )
        return Element(
            index=layout.indices[at],
            depth=layout.depths()[at],
            role=role,
            source_role=source,
            label=label,
            states=states,
            attributes=attributes,
            secondary_actions=actions,
            raw=layout.raw(at),
        )

    def _menu_roles(self) -> tuple[list[str], frozenset[int]]:
        if self._roles is None:
            if self.layout is None or self._elements is not None:  # the elements say
                self._roles = [e.role for e in self.elements]
                if self.layout is not None:
                    self._menu = self._unsettled = _menu_positions(self.layout)
            else:
                self._roles, self._menu, self._unsettled = _roles(self.layout)
        return self._roles, self._menu


def parse(text: str) -> Tree:
    """Parse one full tree; raises :class:`.layout.AxParseError` for anything else."""
    layout = read(text)
    if layout.refusal:
        raise AxParseError(layout.refusal)
    return Tree(
        focus=layout.focus,
        app=layout.app,
        pid=layout.pid,
        window=layout.window,
        text=text,
        layout=layout,
    )


def find(tree: Tree, index: int) -> Element | None:
    """The element numbered ``index`` in this tree, if any."""
    layout = tree.layout
    if layout is not None and not tree.elements_read:
        at = bisect.bisect_left(layout.indices, index)
        found = at < len(layout.indices) and layout.indices[at] == index
        return tree.element_at(at) if found else None
    elements = tree.elements
    at = bisect.bisect_left(elements, index, key=attrgetter("index"))  # parse() sorts by index
    if at < len(elements) and elements[at].index == index:
        return elements[at]
    return next((e for e in elements if e.index == index), None)  # a tree built by hand


def _roles(layout: Layout) -> tuple[list[str], frozenset[int], frozenset[int]]:
    """Each element's role, the positions of the elements inside a menu bar, and those of the
    elements whose role their first word does not settle alone (menu bars' children too)."""
    words = layout.words
    found = list(map(SETTLED_ROLES.get, words))
    menu, unsettled = _menus(layout, found) if _MENU_WORD in words else (_NONE, [])
    if None in found:
        tails = layout.tails
        by_word: dict[str, str] = {}  # words that settle the role whatever follows them
        at = -1
        try:
            while True:
                at = found.index(None, at + 1)
                word = words[at]
                role = by_word.get(word)
                if role is None:
                    plain = word[1:]
                    following = CONTINUATIONS.get(plain)
                    if following is None:
                        role = word_role(plain)
                        if role is None:
                            role = role_of(layout.rest(at).strip())[0]
                        else:
                            by_word[word] = role
                    elif tails[at].startswith(following):
                        role = role_of(layout.rest(at).strip())[0]
                    else:
                        role = ROLE_ALIASES.get(plain, plain)
                found[at] = role
                unsettled.append(at)
        except ValueError:  # no None left
            pass
    return cast("list[str]", found), menu, menu.union(unsettled)


def _menu_positions(layout: Layout) -> frozenset[int]:
    """The positions of the elements inside menu bars."""
    if _MENU_WORD not in layout.words:
        return _NONE
    return _menus(layout, [None] * len(layout))[0]


def _menus(layout: Layout, found: list[str | None]) -> tuple[frozenset[int], list[int]]:
    """Set the roles of the elements whose first word is ``menu`` and of the elements inside
    menu bars in ``found`` (those that start with a menu role word are left None, to be read as
    usual); the positions inside menu bars, and those of the ``menu`` elements read here."""
    words, indents = layout.words, layout.indents
    inside: list[int] = []
    read: list[int] = []
    at = -1
    try:
        while True:
            at = words.index(_MENU_WORD, at + 1)
            role = found[at] = role_of(layout.rest(at).strip())[0]
            read.append(at)
            if role != _MENU_BAR:
                continue
            width = len(indents[at])
            while at + 1 < len(words) and len(indents[at + 1]) > width:
                at += 1
                word = words[at]
                if word in _MENU_WORDS:
                    found[at] = None
                elif word[:1] == " " and not word[1:2].isspace() and not word[-1].isspace():
                    found[at] = ""  # starts with no menu role word: Sky's bare menu titles
                else:
                    found[at] = head(layout.rest(at), True)[0]
                inside.append(at)
    except ValueError:  # no more menu elements
        return frozenset(inside), read


def _read_all(layout: Layout, menu: frozenset[int]) -> tuple[Element, ...]:
    """Every element of ``layout``; equal texts are parsed once."""
    memo: dict[str, Parts] = {}
    lookup = memo.get
    depths = layout.depths()
    indices, indents, numbers = layout.indices, layout.indents, layout.numbers
    words, tails = layout.words, layout.tails
    elements: list[Element] = []
    append = elements.append
    for at in range(len(indices)):
        word, tail = words[at], tails[at]
        # Layout.rest and Layout.raw, inline: this loop runs once per element
        rest = ((word[1:] if word[:1] == " " else word) + tail).rstrip("\n")
        if at in menu:
            role, source, label, states, attributes, actions = split_rest(rest, True)
        elif (parts := lookup(rest)) is None:  # its attributes dict goes to this element,
            parts = memo[rest] = split_rest(rest)  # copies of it to the others
            role, source, label, states, attributes, actions = parts
        else:
            role, source, label, states, attributes, actions = parts
            attributes = attributes.copy() if attributes else {}
        append(
            Element(
                index=indices[at],
                depth=depths[at],
                role=role,
                source_role=source,
                label=label,
                states=states,
                attributes=attributes,
                secondary_actions=actions,
                raw=(indents[at] + numbers[at] + word + tail).rstrip("\n"),
            )
        )
    return tuple(elements)
