"""One element line of Sky's accessibility text, for every backend that prints it. Pure.

What this owns: the line grammar (``index role (flags) label, Key: value…`` with the
attributes in Sky's order and the ``Secondary Actions`` list last) and :class:`AxElement`, what
a line is made from. The AT-SPI server fills an :class:`AxElement` for each node and the
simulator's elements extend it, so both print the same grammar byte for byte. Numbering,
indentation and the text around the tree belong to each backend's renderer.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True, kw_only=True)
class AxElement:
    """What one element line shows. The AT-SPI server fills one for each node; the
    simulator's elements extend it (with their key, children and paint)."""

    role: str = ""
    label: str = ""
    flags: tuple[str, ...] = ()
    description: str | None = None
    value: str | None = None
    details: str | None = None
    help: str | None = None
    ident: str | None = None
    url: str | None = None
    placeholder: str | None = None
    actions: tuple[str, ...] = ()


def element_line(index: int, node: AxElement, *, role: str | None = None) -> str:
    """One element line without its indentation. ``role``: the role words to print instead of
    ``node.role`` (a localised role description)."""
    head = [str(index)]
    role = node.role if role is None else role
    if role:
        head.append(role)
    if node.flags:
        head.append(f"({', '.join(node.flags)})")
    if node.label:
        head.append(node.label)
    attrs: list[str] = []
    for key, val in (
        ("Description", node.description),
        ("Value", node.value),
        ("Details", node.details),
        ("Help", node.help),
        ("ID", node.ident),
        ("URL", node.url),
        ("Placeholder", node.placeholder),
    ):
        if val is not None:
            attrs.append(f"{key}: {val}")
    if node.actions:
        attrs.append(f"Secondary Actions: {', '.join(node.actions)}")
    line = " ".join(head)
    if not attrs:
        return line
    sep = ", " if node.label else " "
    return line + sep + ", ".join(attrs)
