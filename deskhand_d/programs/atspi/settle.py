"""When an app has finished answering an action: the settling rules, and the waits that apply them.

What this owns: after input, deciding when the tree may be read and when the screenshot may be
taken, from the app's own signals rather than fixed sleeps, each wait bounded:

* **The tree** (:func:`tree_wait`): the app's first reaction after the input has ended (an
  AT-SPI event from its bus name, see :mod:`.events`), then no further event for ``quiet``.
  An app that shows no reaction within ``react`` did nothing the tree can show. A click by
  index on a GTK button is the exception that needs a longer look: GTK answers the button's
  ``click`` action by animating a key press and emits ``clicked`` 250 ms later
  (``ACTIVATE_TIMEOUT`` in gtkbutton.c, GTK 3 and GTK 4 alike), so such a click waits up to
  ``lag_react`` for its first reaction.
* **The pixels** (:meth:`Settler.screenshot`): a damage fence (see :mod:`.damage`) as soon as
  each batch of the app's events has been seen; then a frame drawn in the window's rectangle
  after the fence that followed its latest events, so the picture is at least as new as the
  tree; then captures after each further frame until two
  agree (:func:`~.screen.significant_bytes`: a fading caret or a colour transition does not
  count, new text does) or nothing more is drawn for ``frame_gap``, for at most
  ``pixel_max``.

Why the guarantee holds: an application emits an event after it has changed its state, and it
draws that state in a later frame; a frame reported after a fence we set once we had seen the
app's latest event was drawn after that event. Without events (no accessibility bus signals) or
without damage (no DAMAGE extension) the old timed waits apply: ``fallback_settle`` for the
tree, and :meth:`~.screen.Screen.screenshot`'s capture-until-stable for the pixels.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import trio

from .bus import Bus
from .damage import Damage, DamageUnavailable, Rect
from .events import Activity, Events
from .model import Node, click_is_delayed
from .screen import ScreenUnavailable, Seat, significant_bytes, usable_rect


@dataclass(frozen=True, slots=True)
class Limits:
    """The settling timeouts, in seconds."""

    react: float = 0.12  # first reaction to input, after which "nothing changed"
    lag_react: float = 0.4  # the same after a GTK button's click action (acts after 250 ms)
    quiet: float = 0.02  # no event for this long: the app has finished this change
    tree_max: float = 1.0  # from the end of the input, whatever the app keeps emitting
    fence: float = 0.05  # the X server answers a fence in well under a millisecond
    frame_wait: float = 0.2  # for the frame that draws the change, once events are quiet
    frame_gap: float = 0.025  # no frame for this long (1.5 at 60 Hz): the pixels are still
    pixel_max: float = 0.1  # captures until two agree, from the first one
    recent: float = 2.0  # a screenshot this soon after input settles; later ones do not
    noise: int = 512  # bytes that may differ significantly between two "equal" frames
    fallback_settle: float = 0.1  # the tree's fixed wait when no events can be received


LIMITS: Final = Limits()
#: On Wayland input reaches the app through the compositor (and, on the portal path, through
#: two portal processes first) some time after the calls that sent it returned, and no app
#: can be asked whether it has read it yet (X11's ping): through the portal the last of
#: several keys was seen arriving after the first ones had gone quiet for 20 ms (1 in 4
#: runs). A longer quiet and first-reaction wait cover that hop; GNOME's own interface, one
#: hop, needs less.
WAYLAND_LIMITS: Final = Limits(react=0.3, quiet=0.15)
MUTTER_LIMITS: Final = Limits(react=0.15, quiet=0.05)
_RETRY_DAMAGE_S: Final = 5.0  # after the display refused damage, ask again this much later


def lags(name: str, args: Mapping[str, Any], nodes: Sequence[Node]) -> bool:
    """Whether a tool call is a click by index that presses a button through its ``click``
    action, whose effect GTK delays (see the module notes). Pure."""
    if name != "click" or args.get("mouse_button", "left") != "left":
        return False
    given = args.get("element_index")
    if not isinstance(given, str) or not given.isdigit() or int(given) >= len(nodes):
        return False
    node = nodes[int(given)]
    return click_is_delayed(node.role, node.actions)


def tree_wait(
    now: float,
    *,
    input_end: float,
    reacted: bool,
    last_event: float,
    lagging: bool = False,
    limits: Limits = LIMITS,
) -> float | None:
    """Seconds still to wait before the tree is read, or None when it may be read now. Pure.

    ``reacted``: the app has emitted a reaction since the input began (an app may answer
    before we have noted the end of the input), the last of its events at ``last_event``
    (all times on one clock). Quiet is counted from the end of the input at the earliest: a
    reaction to the first of several keys says nothing about the last. ``lagging``: the input
    was a GTK button's click action, which takes effect 250 ms later.
    """
    hard = input_end + limits.tree_max
    if now >= hard:
        return None
    if not reacted:
        react_by = input_end + (limits.lag_react if lagging else limits.react)
        return min(react_by, hard) - now if now < react_by else None
    quiet_at = max(last_event, input_end) + limits.quiet
    return min(quiet_at, hard) - now if now < quiet_at else None


@dataclass(slots=True)
class _Input:
    """The latest input, as the settler saw it: to which app, when it ended, and what the
    app had emitted by then and by the last damage fence."""

    bus_name: str
    lagging: bool
    before: Activity
    end: float
    fenced_events: int = -1  # the app's event count when the last fence was taken
    fence_seq: int | None = None


class Settler:
    """The settling waits for one backend: its bus, its display, the server's nursery."""

    def __init__(
        self,
        env: Mapping[str, str],
        bus: Bus,
        screen: Seat,
        nursery: trio.Nursery,
        limits: Limits = LIMITS,
    ) -> None:
        self.limits = limits
        self.events = Events(bus, nursery)
        self._screen = screen
        # X11's damage events say when pixels change; on Wayland there is none to watch (an
        # XWayland display draws no native window), so pictures settle by comparison.
        self._display = env.get("DISPLAY", "") if screen.kind == "x11" else ""
        self._nursery = nursery
        self._damage: Damage | None = None
        self._damage_retry = -math.inf
        self._input: _Input | None = None

    async def prepare(self) -> None:
        """Subscribe to events now, so that apps already report them by the first action
        (GTK 3 learns of a new listener asynchronously)."""
        await self.events.ensure()

    async def before_input(self, bus_name: str, *, lagging: bool = False) -> None:
        """Call right before input goes to the app on ``bus_name`` (and :meth:`rebase` after
        any preparation that may make it emit events, such as giving it the keyboard)."""
        await self.events.ensure()
        now = trio.current_time()  # the end too, until :meth:`input_ended` (input may fail)
        self._input = _Input(bus_name, lagging, self.events.activity(bus_name), end=now)

    def rebase(self) -> None:
        """What the app emits from now on is its reaction to the input; what it emitted
        before (say, while it was given the keyboard) is not."""
        if self._input is not None:
            self._input.before = self.events.activity(self._input.bus_name)

    def at_once(self) -> None:
        """The latest input was delivered so that it acts at once (a button pressed with the
        pointer rather than through its delayed action): no longer look for a late reaction."""
        if self._input is not None:
            self._input.lagging = False

    def input_ended(self) -> None:
        """Call as soon as the action has been delivered."""
        if self._input is not None:
            self._input.end = trio.current_time()

    def _recent(self, bus_name: str) -> _Input | None:
        given = self._input
        if given is None or given.bus_name != bus_name:
            return None
        if trio.current_time() - given.end >= self.limits.recent:
            return None
        return given

    async def tree(self, bus_name: str) -> None:
        """Wait until the app has answered the latest input (see :func:`tree_wait`)."""
        given = self._recent(bus_name)
        if given is None:
            return
        if not self.events.live:
            await trio.sleep(self.limits.fallback_settle)
            return
        tried = -1  # the event count a fence was last tried at (it may not be taken)
        while True:
            seen = self.events.activity(bus_name)
            if seen.reactions > given.before.reactions and seen.events != tried:
                # Fence as soon as a batch of the app's events is seen, not once they have
                # gone quiet: a fast renderer draws within those 20 ms, and a frame drawn
                # before the fence would leave the screenshot waiting for another one.
                tried = seen.events
                await self._fence(given)
                continue
            wait = tree_wait(
                trio.current_time(),
                input_end=given.end,
                reacted=seen.reactions > given.before.reactions,
                last_event=seen.last,
                lagging=given.lagging,
                limits=self.limits,
            )
            if wait is None:
                break
            await self.events.wait(trio.current_time() + wait)
        await self._fence(given)

    async def _fence(self, given: _Input) -> None:
        """Fence the damage stream after the app's latest event (once per batch of them)."""
        seen = self.events.activity(given.bus_name)
        if seen.events == given.fenced_events and given.fence_seq is not None:
            return
        damage = await self._pixels()
        if damage is None:
            return
        given.fence_seq = await damage.fence(trio.current_time() + self.limits.fence)
        given.fenced_events = seen.events

    async def _pixels(self) -> Damage | None:
        """The damage watcher, opened (and its reader started) on first use."""
        if self._damage is not None and self._damage.alive:
            return self._damage
        if self._damage is not None:
            self._damage.close()
            self._damage = None
        if trio.current_time() < self._damage_retry:
            return None
        try:
            damage = await Damage.open(self._display)
        except DamageUnavailable:
            self._damage_retry = trio.current_time() + _RETRY_DAMAGE_S
            return None
        await self._nursery.start(damage.run)
        self._damage = damage
        return damage

    def close(self) -> None:
        if self._damage is not None:
            self._damage.close()
            self._damage = None

    async def screenshot(self, extents: Rect, bus_name: str) -> bytes | None:
        """A PNG of ``extents`` that shows the app's answer to recent input (see the module
        notes); right away when there was none. None when no screenshot can be taken."""
        if not usable_rect(extents):
            return None
        given = self._recent(bus_name)
        if given is None:
            return await self._screen.screenshot(extents)
        damage = await self._pixels() if self.events.live else None
        if damage is None:
            age = trio.current_time() - given.end
            return await self._screen.screenshot(extents, input_age=max(0.0, age))
        await self.tree(bus_name)  # events that came after the tree was read count too
        await self._fence(given)
        try:
            return await self._settled_capture(damage, extents, given)
        except ScreenUnavailable:
            return None

    async def _settled_capture(self, damage: Damage, extents: Rect, given: _Input) -> bytes:
        limits = self.limits
        reacted = self.events.activity(given.bus_name).reactions > given.before.reactions
        if reacted and given.fence_seq is not None:
            # The frame that draws what the events announced (a change nothing shows draws
            # nothing: then the wait ends empty-handed and the pixels are current anyway).
            await damage.drawn_after(
                extents, given.fence_seq, trio.current_time() + limits.frame_wait
            )
        seq = damage.last_in(extents)
        still = trio.current_time() - damage.drawn_at(extents) >= limits.frame_gap
        shot = await self._screen.capture(extents)
        if still and damage.last_in(extents) == seq:
            return await self._screen.encode(shot)  # nothing drawn for a while, nor since
        stop = trio.current_time() + limits.pixel_max
        while trio.current_time() < stop:
            deadline = min(stop, trio.current_time() + limits.frame_gap)
            if not await damage.drawn_after(extents, seq, deadline):
                break  # nothing drawn since the capture: it shows the current pixels
            seq = damage.last_in(extents)
            again = await self._screen.capture(extents)
            same = significant_bytes(shot[2], again[2]) <= limits.noise
            shot = again
            if same:
                break
        return await self._screen.encode(shot)
