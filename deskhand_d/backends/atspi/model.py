"""What the walk reads from the accessibility bus, as plain values. Pure.

What this owns: :class:`Node`, one accessible object with everything rendering needs (numeric
role, name, description, state bits, interfaces, action names, text and numeric value) and its
children, and :class:`Ref`, the object's address on the bus. Nodes are frozen: a walk builds a
fresh tree every time, so an index always means "position in one rendering", never an object
that may have changed since.
"""

from __future__ import annotations

from collections.abc import Iterator

import msgspec

from . import roles
from .roles import Role, State

#: (unique bus name, object path): how AT-SPI addresses an accessible object.
Ref = tuple[str, str]

ACCESSIBLE = "org.a11y.atspi.Accessible"
ACTION = "org.a11y.atspi.Action"
APPLICATION = "org.a11y.atspi.Application"
COMPONENT = "org.a11y.atspi.Component"
EDITABLE_TEXT = "org.a11y.atspi.EditableText"
SELECTION = "org.a11y.atspi.Selection"
TEXT = "org.a11y.atspi.Text"
VALUE = "org.a11y.atspi.Value"


class Node(msgspec.Struct, frozen=True, kw_only=True):
    """One accessible object and its (visible) children, as read in one walk."""

    ref: Ref
    role: int
    name: str = ""
    description: str = ""
    states: int = 0
    interfaces: frozenset[str] = frozenset()
    actions: tuple[str, ...] = ()
    text: str | None = None
    value: float | None = None
    accessible_id: str = ""
    children: tuple[Node, ...] = ()

    def walk(self) -> Iterator[tuple[int, Node, Node | None]]:
        """Pre-order ``(depth, node, parent)``, this node first at depth 0."""
        stack: list[tuple[int, Node, Node | None]] = [(0, self, None)]
        while stack:
            depth, node, parent = stack.pop()
            yield depth, node, parent
            stack.extend((depth + 1, child, node) for child in reversed(node.children))

    def has(self, state: State) -> bool:
        return roles.has(self.states, state)

    @property
    def text_settable(self) -> bool:
        """Editable text a client may replace (EditableText, editable, not read-only)."""
        return (
            EDITABLE_TEXT in self.interfaces
            and self.has(State.EDITABLE)
            and not self.has(State.READ_ONLY)
        )

    @property
    def value_settable(self) -> bool:
        return VALUE in self.interfaces and self.role in roles.SETTABLE_VALUE_ROLES

    @property
    def settable(self) -> bool:
        return self.text_settable or self.value_settable

    @property
    def disabled(self) -> bool:
        """GTK marks an unusable widget by leaving out ``sensitive`` (GTK 3: also ``enabled``)."""
        return not self.has(State.SENSITIVE) and self.role != Role.APPLICATION

    def count(self) -> int:
        return sum(1 for _ in self.walk())


def hidden(states: int, *, window_showing: bool) -> bool:
    """Whether a child with these states is left out of the tree.

    Invisible objects always are. ``showing`` (visible *and* mapped on screen) is only trusted
    when the window itself reports it: GTK 3 does, so closed menus and inactive stack pages
    drop out; GTK 4.8 sets it on nothing, so it cannot be used there.
    """
    if not roles.has(states, State.VISIBLE):
        return True
    return window_showing and not roles.has(states, State.SHOWING)
