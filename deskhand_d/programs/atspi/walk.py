"""Reading a window's accessibility tree: live, concurrently, from a cache, always bounded.

What this owns: turning an object on the bus into a :class:`~.model.Node` tree, within a node
budget, tolerating objects that vanish while it reads, and keeping to what is on screen.

Theory of operation. A live walk reads each object with about five calls that do not depend on
each other (properties, role, states, interfaces, children) plus its rectangle, issued
together; children are read concurrently with their parent's details (actions, text, value),
under a limit on calls in flight. A child that is not on screen is dropped with its whole
subtree before anything below it is read (see :mod:`.model`: invisible, not showing, no area,
or scrolled out of view, the last counted on the parent), and an object that disappears
mid-walk (:class:`~.bus.Gone`) is simply not in the tree.

Rectangles are read in screen coordinates, so every object is measured from one origin: GTK 3
answers screen coordinates correctly (its table cells answer nonsense for window ones), GTK 4
answers window coordinates whatever is asked, which is the same origin for one window. Text is
read up to the object's character count: GTK 3's table cells crash their application when asked
for text past their end.

The first walk of an application is always live; afterwards the application's cache
(:mod:`.cache`: GTK 4's, and at-spi2-atk's for GTK 3 apps and LibreOffice) answers role,
name, description, states, interfaces and the parent/child structure in one call; a node whose
cached child count disagrees with the cached children (a subtree created since, or a container
that manages its descendants, which the cache does not list) is read live, and one too large to
list is read by window (:mod:`.bounded`) on either path. Text, values and actions are always
read live, since they change while the cache entry does not say so.

Every walk is bounded: by a node budget, by a time budget (past its deadline nothing more is
read), by reading at most :data:`MAX_TEXT` characters of a text, and by never listing a
container that is too large (:mod:`.bounded`). A walk cut by any of them says so
(:attr:`Walk.complete`). Where the toolkit does not keep ``showing`` (GTK 4), the stack pages
it swapped out but left their rectangles are told from the page on screen by :mod:`.pages`.

Rectangles on the cached path are read ahead. A child can only be judged once its rectangle is
known, so reading each rectangle when its parent has been judged costs one round trip to the
application per level of the tree, and right after input a GTK 4 app answers each round trip
only between the frames of its animations (5-20 ms each under software GL). Since the cache
already names every object below the window, the rectangles of all of them that could be
judged (see :func:`~.model.needs_box`) are asked for at once when the walk begins, and the walk
takes each from there as it reaches it. Reads nobody takes (the contents of a stack page with
no area, say) are cancelled when the walk ends. The number of rectangles is the same as read
one by one: on GTK 4 nothing but the rectangle itself tells an unmapped widget (zero-sized) from
a mapped one, so none can be left out without changing the tree (docs/performance.md).
"""

from __future__ import annotations

__all__ = [
    "DEFAULT_BUDGET",
    "DEFAULT_TIME_BUDGET",
    "Basics",
    "Cache",
    "Facts",
    "Walk",
    "load_cache",
    "parse_cache_items",
    "read_tree",
]

import math
from dataclasses import dataclass, field, replace
from typing import Any, Final

import trio

from . import bounded, model, pages, roles
from .bus import Bus, BusError, BusTimeout, CallFailed, Gone, one_error
from .cache import Basics, Cache, load_cache, parse_cache_items, ref_of
from .model import ACCESSIBLE, ACTION, COMPONENT, SELECTION, TEXT, VALUE, Box, Node, Ref
from .roles import Role, State

DEFAULT_BUDGET: Final = 5000
#: Seconds a walk may take: past it, nothing more is read and the tree is reported cut.
DEFAULT_TIME_BUDGET: Final = 10.0
#: Characters of one object's text that are read: a huge document is shown by its beginning.
MAX_TEXT: Final = 20_000
MAX_IN_FLIGHT: Final = 48
SCREEN_COORDS: Final = 0  # AtspiCoordType
_BASIC_PROPERTIES: Final = ("Name", "Description", "ChildCount")


@dataclass(slots=True)
class Facts:
    """What never changes for one accessible object: role, interfaces, action names."""

    role: int
    interfaces: frozenset[str]
    actions: tuple[str, ...] | None = None


class _Ahead:
    """A rectangle asked for before the walk reached its object (see the module notes)."""

    __slots__ = ("box", "done", "error")

    def __init__(self) -> None:
        self.done = trio.Event()
        self.box: Box | None = None
        self.error: BusError | None = None  # raised where the rectangle is taken, if ever


@dataclass(slots=True)
class Walk:
    """One read of one window: the budgets (nodes, and a deadline on the trio clock), the
    optional cache and what was skipped."""

    bus: Bus
    budget: int = DEFAULT_BUDGET
    deadline: float = math.inf
    cache: Cache | None = None
    limiter: trio.CapacityLimiter = field(
        default_factory=lambda: trio.CapacityLimiter(MAX_IN_FLIGHT)
    )
    seen: int = 0
    complete: bool = True
    vanished: int = 0
    window_showing: bool = False
    box: Box | None = None  # the root's rectangle
    prefetched: dict[Ref, Basics] = field(default_factory=dict)
    facts: dict[Ref, Facts] = field(default_factory=dict)
    ahead: dict[Ref, _Ahead] = field(default_factory=dict)

    def read_ahead(self, nursery: trio.Nursery, window: Ref) -> None:
        """Ask for the rectangles of every cached object below ``window`` that the walk may
        judge, breadth first (the limiter serves callers in order, so shallow ones come
        first), at most the budget's worth. Needs the cache; does nothing without it."""
        cache = self.cache
        if cache is None:
            return
        level = [window]
        queued = 0
        while level and queued < self.budget:
            below: list[Ref] = []
            for ref in level:
                b = cache.items.get(ref)
                if b is None or len(b.children) != cache.child_counts.get(ref, -1):
                    continue  # read live when reached: its children are not known here
                if bounded.is_large(b.states, len(b.children)):
                    continue  # read by window when reached (see .bounded)
                if not model.needs_box(b.states) and ref != window:
                    continue  # left out on its states alone, with everything below it
                if COMPONENT in b.interfaces and ref not in self.ahead:
                    slot = self.ahead[ref] = _Ahead()
                    nursery.start_soon(self._fill, ref, slot)
                    queued += 1
                below.extend(b.children)
            level = below

    async def _fill(self, ref: Ref, slot: _Ahead) -> None:
        try:
            slot.box = await self._box(ref, None)
        except BusError as exc:  # a timeout, a lost bus: it matters only if the walk gets here
            slot.error = exc
        finally:
            slot.done.set()

    async def basics(self, ref: Ref) -> Basics:
        """From the cache when it is consistent for ``ref``, else read live."""
        early = self.prefetched.pop(ref, None)
        if early is not None:
            return early
        if self.cache is not None:
            cached = self.cache.items.get(ref)
            if cached is not None:
                return await self._cached_basics(ref, cached, self.cache.child_counts.get(ref, -1))
        return await self._live_basics(ref)

    async def _cached_basics(self, ref: Ref, cached: Basics, count: int) -> Basics:
        """The cache's entry, with its children read live where the cache does not list them
        all (created since; at-spi2-atk counts a container that manages its descendants as
        -1 and lists none), and by window where there are too many to list."""
        if len(cached.children) == count and not bounded.is_large(cached.states, count):
            return cached
        if count < 0 or bounded.is_large(cached.states, count):
            async with self.limiter:
                count = int(await self.bus.get(ref, ACCESSIBLE, "ChildCount"))
            if bounded.is_large(cached.states, count):
                return replace(cached, children=(), large=True, count=count)
            if count == 0:
                return replace(cached, children=())
        async with self.limiter:
            (kids,) = await self.bus.call(ref, ACCESSIBLE, "GetChildren")
        return replace(cached, children=tuple(ref_of(k) for k in kids))

    async def _live_basics(self, ref: Ref) -> Basics:
        """Properties and states always; role and interfaces unless known from an earlier
        walk (they never change for one object); children only when it has any, and never
        when it has too many to list (:func:`.bounded.is_large`: they are read by window)."""
        got: dict[str, Any] = {}
        known = self.facts.get(ref)

        async def one(key: str, method: str) -> None:
            async with self.limiter:
                got[key] = await self.bus.call(ref, ACCESSIBLE, method)

        async def props() -> None:
            async with self.limiter:
                got["props"] = await self.bus.get_many(ref, ACCESSIBLE, _BASIC_PROPERTIES)

        with one_error():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(props)
                nursery.start_soon(one, "state", "GetState")
                if known is None:
                    nursery.start_soon(one, "role", "GetRole")
                    nursery.start_soon(one, "ifaces", "GetInterfaces")
        if known is None:
            known = Facts(int(got["role"][0]), frozenset(str(i) for i in got["ifaces"][0]))
            self.facts[ref] = known
        info = got["props"]
        states = roles.states_from_words(got["state"][0])
        count = int(info.get("ChildCount", 1))
        large = bounded.is_large(states, count)
        if count > 0 and not large:
            await one("children", "GetChildren")
        return Basics(
            role=known.role,
            name=str(info.get("Name", "")),
            description=str(info.get("Description", "")),
            states=states,
            interfaces=known.interfaces,
            children=tuple(ref_of(k) for k in got.get("children", ((),))[0]),
            large=large,
            count=count if large else 0,
        )

    async def details(
        self, ref: Ref, b: Basics
    ) -> tuple[tuple[str, ...], str | None, float | None]:
        """Action names, text and numeric value (whichever interfaces the object has).

        Action names are read once per object and remembered; a label's text is not read
        when it has a name (GTK names labels by their text)."""
        actions: tuple[str, ...] = ()
        text: str | None = None
        value: float | None = None
        if ACTION in b.interfaces:
            known = self.facts.get(ref)
            if known is not None and known.actions is not None:
                actions = known.actions
            else:
                actions = await self._action_names(ref)
                if known is not None:
                    known.actions = actions
                else:
                    self.facts[ref] = Facts(b.role, b.interfaces, actions)
        if TEXT in b.interfaces and not (b.role == Role.LABEL and b.name):
            # GetText(0, -1) gives "" on GTK 4, and an end past the text crashes GTK 3's
            # table cells: ask for exactly the characters there are, and never more than
            # MAX_TEXT of them (a whole book in an editor would be one huge reply).
            async with self.limiter:
                count = int(await self.bus.get(ref, TEXT, "CharacterCount"))
            text = ""
            if count > 0:
                end = min(count, MAX_TEXT)
                async with self.limiter:
                    (text,) = await self.bus.call(ref, TEXT, "GetText", "ii", (0, end))
                if end < count:
                    text = f"{text}[… {count - end} more characters not read]"
        if VALUE in b.interfaces:
            async with self.limiter:
                value = float(await self.bus.get(ref, VALUE, "CurrentValue"))
        return actions, text, value

    async def _action_names(self, ref: Ref) -> tuple[str, ...]:
        """The object's action names: from ``GetActions``, or one ``GetName`` each where that
        answer cannot be trusted (see :func:`.roles.action_names`)."""
        async with self.limiter:
            (listed,) = await self.bus.call(ref, ACTION, "GetActions")
        names = roles.action_names(listed)
        if names is not None:
            return names
        got = [""] * len(listed)

        async def one(at: int) -> None:
            async with self.limiter:
                (got[at],) = await self.bus.call(ref, ACTION, "GetName", "i", (at,))

        with one_error():
            async with trio.open_nursery() as nursery:
                for at in range(len(listed)):
                    nursery.start_soon(one, at)
        return tuple(str(name) for name in got)

    async def _chosen(self, kids: tuple[Ref, ...]) -> str:
        """The name of the item a drop-down's list has selected (``Selection`` on its list,
        read even while the list is closed and left out), or "" where none says."""
        for kid in kids[:4]:
            try:
                async with self.limiter:
                    (item,) = await self.bus.call(kid, SELECTION, "GetSelectedChild", "i", (0,))
                    if not item[0] or str(item[1]).endswith("/null"):
                        continue
                    return str(await self.bus.get(ref_of(item), ACCESSIBLE, "Name"))
            except BusError:
                continue  # no Selection interface there
        return ""

    async def _showing_maintained(self, window: Basics) -> bool:
        """Whether ``showing`` can be trusted below this window: the window has it and so
        does at least one of its children (GTK 3 keeps it up to date; GTK 4.8 sets it on the
        window only). Reads the children's basics early, for :meth:`basics` to reuse."""
        if not roles.has(window.states, State.SHOWING):
            return False

        async def one(ref: Ref) -> None:
            try:
                self.prefetched[ref] = await self.basics(ref)
            except (Gone, CallFailed, BusTimeout):
                pass  # read again (or not) when the walk gets there

        with one_error():
            async with trio.open_nursery() as nursery:
                for ref in window.children:
                    nursery.start_soon(one, ref)
        return any(roles.has(b.states, State.SHOWING) for b in self.prefetched.values())

    async def _box(self, ref: Ref, known: frozenset[str] | None) -> Box | None:
        """The object's rectangle in screen coordinates; None when it has none."""
        if known is not None and COMPONENT not in known:
            return None
        try:
            async with self.limiter:
                (box,) = await self.bus.call(ref, COMPONENT, "GetExtents", "u", (SCREEN_COORDS,))
        except (Gone, CallFailed):  # no Component interface (or gone: basics will say)
            return None
        x, y, w, h = (int(v) for v in box)
        return x, y, w, h

    async def _read(self, ref: Ref, *, root: bool = False) -> tuple[Basics, Box | None]:
        """Basics and rectangle, read together; the rectangle from the read-ahead when it was
        asked for there, and not at all for a child its states already leave out."""
        cached = self.cache.items.get(ref) if self.cache is not None else None
        slot = self.ahead.get(ref)
        if slot is not None or (cached is not None and not root):
            b = await self.basics(ref)
            if COMPONENT not in b.interfaces or not (root or model.needs_box(b.states)):
                return b, None
            if slot is None:
                return b, await self._box(ref, b.interfaces)
            await slot.done.wait()
            if slot.error is not None:
                raise slot.error
            return b, slot.box
        got: list[Box | None] = []
        known = self.facts.get(ref)
        ifaces = cached.interfaces if cached else (known.interfaces if known else None)

        async def measure() -> None:
            got.append(await self._box(ref, ifaces))

        with one_error():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(measure)
                b = await self.basics(ref)
        box = got[0] if got and COMPONENT in b.interfaces else None
        return b, box

    async def node(
        self, ref: Ref, *, root: bool = False, clip: Box | None = None
    ) -> tuple[Node | None, str]:
        """Read ``ref`` and its on-screen subtree, and where it is: ``(node, SHOWN)``, or
        ``(None, why)`` when it vanished, is hidden or lies outside ``clip`` (the visible
        rectangle of the scrolled view around it)."""
        out_of_time = trio.current_time() >= self.deadline
        if not root and (self.seen >= self.budget or out_of_time):
            self.complete = False
            return None, model.NOT_DRAWN
        self.seen += 1
        try:
            b, box = await self._read(ref, root=root)
        except (Gone, CallFailed):
            if root:
                raise
            self.vanished += 1
            return None, model.NOT_DRAWN
        except BusTimeout:
            if root:
                raise
            # A busy app (GTK 3 filling a list of 3,000 files) may not answer one object in
            # time: the rest of the tree is still worth having, and it says it is cut.
            self.complete = False
            return None, model.NOT_DRAWN
        if root:
            self.window_showing = await self._showing_maintained(b)
            self.box = box
            inner = box if box is not None and box[2] > 0 and box[3] > 0 else None
        else:
            place = model.where(b.states, box, clip, window_showing=self.window_showing)
            if place != model.SHOWN:
                return None, place
            inner = model.child_clip(b.role, box, clip)
        kids, unread = b.children, (0, 0, 0, 0)
        if b.large:
            window = await bounded.read_window(
                self.bus, ref, b.count, box, b.interfaces, self.limiter
            )
            kids, unread = window.refs, (window.above, window.below, window.left, window.right)
            self.complete = self.complete and window.located
            inner = model.child_clip(Role.SCROLL_PANE, box, inner)  # its rectangle is its view
        children: list[tuple[Node | None, str]] = [(None, model.NOT_DRAWN)] * len(kids)
        detail: list[tuple[tuple[str, ...], str | None, float | None]] = []

        async def child(i: int, child_ref: Ref) -> None:
            children[i] = await self.node(child_ref, clip=inner)

        async def own() -> None:
            try:
                detail.append(await self.details(ref, b))
            except (Gone, CallFailed):
                self.vanished += 1
            except BusTimeout:
                self.complete = False

        with one_error():
            async with trio.open_nursery() as nursery:
                nursery.start_soon(own)
                for i, child_ref in enumerate(kids):
                    nursery.start_soon(child, i, child_ref)
        if not self.window_showing:
            async with self.limiter:
                await pages.drop_hidden(self.bus, ref, children)
        chosen = await self._chosen(kids) if b.role == Role.COMBO_BOX else ""
        places = [place for _, place in children]
        if not root and model.hollow(box, places):
            return None, model.NOT_DRAWN  # a page object whose content is not drawn
        actions, text, value = detail[0] if detail else ((), None, None)
        places = model.resolve_sides(places)
        clipped = (
            places.count(model.ABOVE) + unread[0],
            places.count(model.BELOW) + unread[1],
            places.count(model.LEFT) + unread[2],
            places.count(model.RIGHT) + unread[3],
        )
        return (
            Node(
                ref=ref,
                role=b.role,
                name=b.name,
                description=b.description,
                states=b.states,
                interfaces=b.interfaces,
                actions=actions,
                text=text,
                value=value,
                box=box,
                clipped=clipped,
                chosen=chosen,
                children=tuple(c for c, _ in children if c is not None),
            ),
            model.SHOWN,
        )


async def read_tree(
    bus: Bus,
    window: Ref,
    *,
    budget: int = DEFAULT_BUDGET,
    time_budget: float = DEFAULT_TIME_BUDGET,
    cache: Cache | None = None,
    facts: dict[Ref, Facts] | None = None,
) -> tuple[Node | None, Walk]:
    """The window's visible tree (None if the window itself vanished) and the walk's record.

    At most ``budget`` objects are read, and nothing is read once ``time_budget`` seconds
    have passed: either way the walk's ``complete`` is False. ``facts`` carries what never
    changes per object from one walk of an app to the next."""
    walk = Walk(
        bus,
        budget=budget,
        deadline=trio.current_time() + time_budget,
        cache=cache,
        facts={} if facts is None else facts,
    )
    with one_error():
        async with trio.open_nursery() as nursery:
            walk.read_ahead(nursery, window)
            try:
                root, _ = await walk.node(window, root=True)
            finally:
                nursery.cancel_scope.cancel()  # rectangles of what the walk left out
    return root, walk
