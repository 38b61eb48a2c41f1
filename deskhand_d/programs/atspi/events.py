"""What applications say about themselves on the accessibility bus: AT-SPI event signals.

What this owns: the subscription (the registry is told which kinds of event a listener wants,
since GTK 3's bridge emits only those, and the bus gets match rules so it routes the signals to
us), one receiver task in the server's nursery that keeps, per application (its unique bus
name), how many events it has emitted and when the last one came, and waiting for the next one.
It reads no event's content beyond its kind, with one exception: where the keyboard focus is
(:attr:`Events.focus`), from the ``focused`` state changes every application reports, as a
screen reader follows it; keys are sent only while it lies in the app they are meant for. The
settling policy (:mod:`.settle`) only needs to know *that* an app reacted and when it went
quiet; the tree is read afresh afterwards anyway.

Theory of operation: the subscription lives as long as the bus connection. When the connection
breaks, the router closes our channel, the receiver ends, and the next :meth:`Events.ensure`
subscribes again on the new connection. The registry forgets our registrations by itself when
our connection goes away.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Final

import trio
from jeepney import HeaderFields, MatchRule

from .bus import Bus, BusError
from .model import Ref

_DBUS: Final = ("org.freedesktop.DBus", "/org/freedesktop/DBus")
_REGISTRY: Final = ("org.a11y.atspi.Registry", "/org/a11y/atspi/registry")
#: What we ask applications to report: structure (children-changed, for menus, popovers and
#: list rows), states (checked, expanded, showing, focused ...), text and caret, names and
#: values (property-change carries accessible-value), selections, and top-level windows.
KINDS: Final = (
    "object:children-changed",
    "object:state-changed",
    "object:property-change",
    "object:text-changed",
    "object:text-caret-moved",
    "object:selection-changed",
    "object:active-descendant-changed",
    "window:create",
    "window:destroy",
    "window:activate",
    "window:deactivate",
)
#: The D-Bus interfaces those events arrive on (one match rule each).
INTERFACES: Final = ("org.a11y.atspi.Event.Object", "org.a11y.atspi.Event.Window")
_PREFIX: Final = "org.a11y.atspi.Event."
_BUFFER: Final = 4096
_MAX_APPS: Final = 1024  # applications come and go; forget them all past this many
_RETRY_S: Final = 5.0  # after the bus refused the subscription, ask again this much later


def is_reaction(member: str, detail: str) -> bool:
    """Whether an event shows the app doing what an action asked, rather than getting ready
    to. GTK 3 marks a button ``armed`` while it animates a keyboard-style activation and acts
    250 ms later; that state alone is not the result. Pure."""
    return not (member == "StateChanged" and detail == "armed")


@dataclass(slots=True)
class Activity:
    """One application's events so far: how many, how many were reactions, the last one's time
    (trio clock)."""

    events: int = 0
    reactions: int = 0
    last: float = -math.inf


class Events:
    """The accessibility bus's event signals, counted per application."""

    def __init__(self, bus: Bus, nursery: trio.Nursery) -> None:
        self._bus = bus
        self._nursery = nursery
        self._apps: dict[str, Activity] = {}
        self._changed = trio.Event()
        self._live = False
        self._retry = -math.inf
        self._lock = trio.Lock()
        #: The object that last reported gaining the keyboard focus, as (bus name, path);
        #: None before any report, or once that object reported losing it.
        self.focus: Ref | None = None
        self.focus_known = False  # whether any focus report has come since we subscribed

    @property
    def live(self) -> bool:
        """Whether events are being received now."""
        return self._live

    async def ensure(self) -> bool:
        """Subscribe if we are not subscribed on the current connection; False when the bus
        refuses (the caller then settles by time instead; we ask again after a while)."""
        async with self._lock:
            if self._live:
                return True
            if trio.current_time() < self._retry:
                return False
            try:
                await self._nursery.start(self._receive)
            except BusError:
                self._retry = trio.current_time() + _RETRY_S
                return False
            return True

    def _focus_moved(self, ref: Ref, gained: bool) -> None:
        self.focus_known = True
        if gained:
            self.focus = ref
        elif self.focus == ref:
            self.focus = None

    def activity(self, bus_name: str) -> Activity:
        """A copy of what ``bus_name`` has emitted so far."""
        seen = self._apps.get(bus_name)
        return Activity() if seen is None else Activity(seen.events, seen.reactions, seen.last)

    async def wait(self, deadline: float) -> None:
        """Until any event arrives, or ``deadline`` (trio clock)."""
        changed = self._changed
        with trio.move_on_at(deadline):
            await changed.wait()

    async def _receive(self, task_status: Any = trio.TASK_STATUS_IGNORED) -> None:
        router = await self._bus.router()
        send, signals = trio.open_memory_channel[Any](_BUFFER)
        # The filter first, so that nothing the rules route to us is lost.
        handle = router.filter(MatchRule(type="signal"), channel=send)
        try:
            for interface in INTERFACES:
                rule = MatchRule(type="signal", interface=interface).serialise()
                await self._bus.call(_DBUS, "org.freedesktop.DBus", "AddMatch", "s", (rule,))
            for kind in KINDS:
                # app_bus_name "": any application (the registry's filter by app is newer
                # than most desktops' at-spi2-core).
                await self._bus.call(
                    _REGISTRY, "org.a11y.atspi.Registry", "RegisterEvent", "sass", (kind, [], "")
                )
            self._live = True
            self.focus, self.focus_known = None, False  # reports lost meanwhile are unknown
            task_status.started()
            async for message in signals:
                self._record(message)
        finally:
            self._live = False
            # A stopping router walks its filters with awaits in between and fails if one
            # is removed meanwhile (jeepney 0.9): remove ours only while it still runs (no
            # checkpoint between the check and the removal), else leave it to the router.
            if getattr(router, "is_running", False):
                handle.close()
                send.close()

    def _record(self, message: Any) -> None:
        fields = message.header.fields
        interface = str(fields.get(HeaderFields.interface, ""))
        if not interface.startswith(_PREFIX):
            return
        sender = str(fields.get(HeaderFields.sender, ""))
        member = str(fields.get(HeaderFields.member, ""))
        body = message.body
        detail = str(body[0]) if body and isinstance(body[0], str) else ""
        if sender not in self._apps and len(self._apps) >= _MAX_APPS:
            self._apps.clear()
        seen = self._apps.setdefault(sender, Activity())
        seen.events += 1
        if is_reaction(member, detail):
            seen.reactions += 1
        seen.last = trio.current_time()
        if member == "StateChanged" and detail == "focused" and len(body) > 1:
            self._focus_moved((sender, str(fields.get(HeaderFields.path, ""))), body[1] == 1)
        self._changed.set()
        self._changed = trio.Event()
