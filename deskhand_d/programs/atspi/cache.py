"""Accessibility caches: one call that answers the structure of a whole application.

What this owns: :class:`Basics` (what identifies an accessible object and its place in the
tree), parsing ``org.a11y.atspi.Cache.GetItems`` into them (:func:`parse_cache_items`), and
reading it (:func:`load_cache`). Pure but for the last.

GTK 4 creates its accessible objects lazily, so its cache lists only objects some client has
already asked for; at-spi2-atk (GTK 3 apps, LibreOffice) lists what it has exposed, and never
the children of a container that manages its descendants (it counts those as -1). Either way a
walk uses the cache only where it is consistent (see :mod:`.walk`).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Final

from . import roles
from .bus import Bus, BusError
from .model import Ref

CACHE_PATH: Final = "/org/a11y/atspi/cache"
CACHE_IFACE: Final = "org.a11y.atspi.Cache"


@dataclass(frozen=True, slots=True)
class Basics:
    """What identifies a node and its place in the tree (the cache holds exactly this).

    ``large``: the object has too many children to list (see :mod:`.bounded`); ``children``
    is then empty and ``count`` says how many there are."""

    role: int
    name: str
    description: str
    states: int
    interfaces: frozenset[str]
    children: tuple[Ref, ...]
    large: bool = False
    count: int = 0


@dataclass(slots=True)
class Cache:
    """An application's cache: basics per object, and each one's child count as the
    application states it (-1 where it does not)."""

    items: dict[Ref, Basics]
    child_counts: dict[Ref, int]


def ref_of(value: Sequence[Any]) -> Ref:
    """A ``(so)`` reference as a :data:`~.model.Ref`."""
    return (str(value[0]), str(value[1]))


def parse_cache_items(items: Sequence[Sequence[Any]]) -> Cache:
    """``Cache.GetItems`` entries -> basics per object. Pure.

    Two shapes exist: at-spi2 >= 2.44 toolkits (GTK 4) send ``((so)(so)(so)iiassusau)``,
    index in parent and child count; older bridges send ``((so)(so)(so)a(so)assusau)`` with the
    children listed. Children of the first shape are ordered by their index in the parent.
    """
    listed: dict[Ref, list[tuple[int, Ref]]] = {}
    raw: dict[Ref, tuple[Any, ...]] = {}
    counts: dict[Ref, int] = {}
    explicit: dict[Ref, tuple[Ref, ...]] = {}
    for item in items:
        ref, parent = ref_of(item[0]), ref_of(item[2])
        if len(item) == 10 and isinstance(item[3], int):
            listed.setdefault(parent, []).append((int(item[3]), ref))
            counts[ref] = int(item[4])
            raw[ref] = tuple(item[5:10])
        elif len(item) == 9:
            kids = tuple(ref_of(c) for c in item[3])
            explicit[ref] = kids
            counts[ref] = len(kids)
            raw[ref] = tuple(item[4:9])
    out: dict[Ref, Basics] = {}
    for ref, (ifaces, name, role, description, states) in raw.items():
        if ref in explicit:
            kids = explicit[ref]
        else:
            kids = tuple(r for _, r in sorted(listed.get(ref, []), key=lambda p: p[0]))
        out[ref] = Basics(
            role=int(role),
            name=str(name),
            description=str(description),
            states=roles.states_from_words(states),
            interfaces=frozenset(str(i) for i in ifaces),
            children=kids,
        )
    return Cache(out, counts)


async def load_cache(bus: Bus, bus_name: str) -> Cache | None:
    """GTK 4's whole-application cache, or None where the toolkit has none."""
    try:
        (items,) = await bus.call((bus_name, CACHE_PATH), CACHE_IFACE, "GetItems")
    except BusError:
        return None
    return parse_cache_items(items)
