"""What a ``tools/call`` does on a real Linux desktop: Sky's checks, then AT-SPI and the seat
(X11, or the compositor on Wayland: :mod:`.screen`, :mod:`.wlscreen`).

What this owns: per-process state (the accessibility bus connection, the display, one session
per app holding its last rendering), argument checks with Sky's error texts, resolving ``app``,
``get_app_state`` (launching the app when needed, walking every window, dialog and popup it
shows as one rendering, the screenshot of the rectangle around them), dispatching the action
tools to :mod:`.actions` and answering each with a fresh rendering, and the per-call timeout.
Results are the server core's :class:`~deskhand_d.programs.core.tools.Outcome` values
(:mod:`.server` plugs this backend into it).

Theory of operation: calls are handled one at a time (a lock), because an action's result is
the tree *after* it and the next action's indices refer to that tree. Element indices always
refer to the app's latest rendering (from ``get_app_state`` or the previous action); an index
beyond it, or one whose object has gone, gets Sky's stale-element text. A GTK 4 application is
walked live the first time and through its cache afterwards (see :mod:`.walk`).
"""

from __future__ import annotations

import base64
import dataclasses
import os
import re
import sys
import traceback
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import trio

from deskhand_d import surface
from deskhand_d.sessionkind import wayland_session

from ..core import texts
from ..core.tools import Outcome
from . import actions, apps, gmenu, model, programs, render, roles, verify
from .actions import ToolError
from .bus import Bus, BusTimeout, BusUnavailable, CallFailed, Gone, one_error
from .catalog import Catalog, DesktopApp, RunningApp, Target
from .model import APPLICATION, Node, Ref
from .notes import Withheld, describe_exit
from .reaper import Reaper, become_subreaper
from .screen import Screen, Seat
from .settle import LIMITS, MUTTER_LIMITS, WAYLAND_LIMITS, Settler, lags
from .switch import Switch
from .walk import DEFAULT_BUDGET, Facts, load_cache, read_tree
from .wlscreen import WaylandScreen
from .x11guard import Guard, InputStopped, settled_alive

TOOL_TIMEOUT: Final = 30.0
NOT_SENT: Final = "not_sent"  # the delivery note of an error given before any input
# Seconds an app gets to update its tree after an action, only where its events cannot be
# received (otherwise the settling follows them: see .settle).
SETTLE: Final = LIMITS.fallback_settle
_SCREENSHOT_ACTIONS: Final = frozenset({"click", "scroll", "drag"})
_EFFECT_WORDS: Final = {
    "value": "The value was set, but reading the element back in",
    "text": "The keys were sent, but reading the focused element back in",
    "selection": "The selection was made, but reading the element back in",
}
_MAX_FACTS: Final = 100_000
TOGGLE_POLL_S: Final = 0.03  # how often a clicked element's state is read while it has not changed
# Seconds another app's focus report may take to say it lost the focus to the app being typed in.
FOCUS_SETTLE: Final = 0.3
# Seconds a running app gets to join the bus after this server turned accessibility on.
SWITCH_GRACE: Final = 3.0


def bus_unavailable(why: str) -> str:
    return texts.server_error(-10005, f"the accessibility bus is unavailable: {why}")


def _text(text: str, *, error: bool = False) -> Outcome:
    return Outcome([{"text": text, "type": "text"}], is_error=error)


def input_stopped(exc: InputStopped) -> Outcome:
    """The result of an action whose input was stopped part-way (see :mod:`.x11guard`)."""
    if exc.done == 0:
        state = "refused"
    elif exc.reason == "target_gone":
        state = "unknown"  # the app took some input and then went away: what it did is unknown
    else:
        state = "partial"
    sent = f"{exc.done} of {exc.total} {exc.unit} had been sent"
    text = (
        f"Input stopped: {exc.detail}. {sent}; nothing more was sent. Observe the app again "
        "before acting."
    )
    outcome = _text(text, error=True)
    outcome.meta[surface.DELIVERY_META] = {
        "state": state,
        "reason": exc.reason,
        "done": exc.done,
        "total": exc.total,
        "unit": exc.unit,
    }
    return outcome


def after_input_failure(why: str, *, acted: bool) -> Outcome:
    """A call that failed in an unexpected way; if input may have been sent, say unknown."""
    outcome = _text(texts.server_error(-10005, why), error=True)
    if acted:
        outcome.meta[surface.DELIVERY_META] = {"state": "unknown", "reason": "failed"}
    return outcome


def _ancestors(root: Node, node: Node) -> tuple[Node, ...]:
    """``node``'s ancestors below and including ``root``, nearest first (empty when it is
    the root or not under it). Pure."""
    parents: dict[int, Node] = {}
    for _, child, parent in root.walk():
        if parent is not None:
            parents[id(child)] = parent
        if child is node:
            break
    chain: list[Node] = []
    at = parents.get(id(node))
    while at is not None:
        chain.append(at)
        at = parents.get(id(at))
    return tuple(chain)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def check_arguments(name: str, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """Required arguments present and typed; a numeric ``element_index`` becomes a string."""
    schema = surface.input_schema(name)
    args = dict(arguments)
    if _is_number(args.get("element_index")):
        args["element_index"] = str(args["element_index"])
    for prop in schema.get("required", []):
        kind = schema["properties"][prop]["type"]
        value = args.get(prop)
        missing = value is None or (kind == "string" and not isinstance(value, str))
        if missing:
            if prop == "direction":
                raise ToolError(texts.MISSING_SCROLL_DIRECTION)
            raise ToolError(texts.missing_argument(prop))
        if kind == "number" and not _is_number(value):
            raise ToolError(texts.INVALID_PARAMETER)
    if "element_index" in args and not isinstance(args["element_index"], str):
        raise ToolError(texts.missing_argument("element_index"))
    return args


@dataclass(frozen=True, slots=True)
class Surface:
    """One of an app's windows or popups as observed: its object and screen rectangle."""

    ref: Ref
    extents: tuple[int, int, int, int]


def union(boxes: Sequence[tuple[int, int, int, int]]) -> tuple[int, int, int, int]:
    """The smallest rectangle holding every usable one of ``boxes``, kept to the screen's
    positive quarter (a screenshot cannot start left of or above the screen). Pure."""
    usable = [b for b in boxes if b[2] > 0 and b[3] > 0]
    if not usable:
        return boxes[0] if boxes else (0, 0, 0, 0)
    x1 = max(0, min(b[0] for b in usable))
    y1 = max(0, min(b[1] for b in usable))
    x2 = max(b[0] + b[2] for b in usable)
    y2 = max(b[1] + b[3] for b in usable)
    return x1, y1, max(0, x2 - x1), max(0, y2 - y1)


@dataclass(slots=True)
class Session:
    """An app being operated: where it is, and its latest numbered rendering.

    ``window`` is the first of its surfaces (the one the person deals with first) and
    ``extents`` the rectangle around all of them: the screenshot shows that rectangle, and tool
    coordinates are pixels of it."""

    target: Target
    app: RunningApp
    window: Ref
    extents: tuple[int, int, int, int]
    rendering: render.Rendering
    surfaces: tuple[Surface, ...] = ()

    @property
    def bus_name(self) -> str:
        return self.app.bus_name

    @property
    def pid(self) -> int:
        return self.app.pid or 0

    @property
    def origin(self) -> tuple[int, int]:
        return self.extents[0], self.extents[1]

    def origin_of(self, index: int) -> tuple[int, int]:
        """The screen origin of the window element ``index`` belongs to: its window
        coordinates are measured from there."""
        at = self.rendering.surface_of(index)
        if at < len(self.surfaces):
            box = self.surfaces[at].extents
            return box[0], box[1]
        return self.origin


class Backend:
    """The ten tools over one accessibility bus and one seat: the X display, or on a Wayland
    session the compositor (:class:`~.wlscreen.WaylandScreen`)."""

    def __init__(
        self,
        env: Mapping[str, str] | None = None,
        *,
        max_nodes: int = render.DEFAULT_MAX_NODES,
        tool_timeout: float = TOOL_TIMEOUT,
        settle: float = SETTLE,
    ) -> None:
        self.env = dict(os.environ if env is None else env)
        self.max_nodes = max_nodes
        self.tool_timeout = tool_timeout
        self.settle = settle
        self.screen: Seat = (
            WaylandScreen(self.env) if wayland_session(self.env) else Screen(self.env)
        )
        self.sessions: dict[str, Session] = {}
        self._toggle: tuple[Ref, int] | None = None  # a click's element and its toggled states
        self._bus: Bus | None = None
        self._lock = trio.Lock()
        self._walked: set[str] = set()  # apps (bus names) walked live once: cache allowed
        self._no_cache: set[str] = set()
        self._facts: dict[str, dict[Ref, Facts]] = {}  # per app: what never changes per object
        self._toolkits: dict[str, tuple[str, int | None]] = {}  # per app: toolkit, major
        self._entries = apps.Entries(self.env)
        self.reaper = Reaper()
        self.switch = Switch(self.env)
        self._settler: Settler | None = None
        # The current action's guard: its ``sending`` says whether input may have reached
        # the app (set by the seat or the action just before anything goes out).
        self._acting: Guard | None = None
        self._caret: dict[str, Ref] = {}  # per app: the field a click by index focused last
        self._presumed: Ref | None = None  # the current call's focus, where only presumed
        # The app the current call reads or acts on (its name, its process), once known:
        # a failure while it is gone is reported as its exit, not as a missing window.
        self._operating: tuple[str, int] | None = None

    def attach(self, nursery: trio.Nursery) -> None:
        """Give the bus connection a nursery for its receiver task (the server's)."""
        self._bus = Bus(nursery, self.env)
        self.screen.attach(nursery)
        become_subreaper()  # launched apps' own children are ours to reap (see .reaper)
        base = LIMITS
        if isinstance(self.screen, WaylandScreen):
            base = MUTTER_LIMITS if self.screen.input == "mutter" else WAYLAND_LIMITS
        limits = dataclasses.replace(base, fallback_settle=self.settle)
        self._settler = Settler(self.env, self._bus, self.screen, nursery, limits)

    @property
    def settler(self) -> Settler:
        if self._settler is None:
            raise RuntimeError("Backend.attach() was not called")
        return self._settler

    @property
    def bus(self) -> Bus:
        if self._bus is None:
            raise RuntimeError("Backend.attach() was not called")
        return self._bus

    async def aclose(self) -> None:
        await self.switch.restore()
        if self._bus is not None:
            await self._bus.aclose()
        if self._settler is not None:
            self._settler.close()
        await self.screen.aclose()

    # --- the call -----------------------------------------------------------------------------

    async def call(self, name: str, arguments: Mapping[str, Any]) -> Outcome:
        if name not in surface.TOOL_ORDER:
            return _text(texts.unknown_tool(name), error=True)
        async with self._lock:
            self._acting = None
            self._presumed = None
            self._operating = None
            self._toggle = None
            outcome = await self._guarded(name, arguments)
            exited = self._exit_note() if outcome.is_error else None
            if exited is None:
                if outcome.is_error and name not in surface.READ_ONLY_TOOLS and not self._sent:
                    # Whatever went wrong, nothing went out: the reply may say so for sure.
                    outcome.meta.setdefault(
                        surface.DELIVERY_META, {"state": "refused", "reason": NOT_SENT}
                    )
                return outcome
            counted = outcome.meta.get(surface.DELIVERY_META, {})
            exited.fields.update({k: counted[k] for k in ("done", "total", "unit") if k in counted})
            return exited.outcome()

    async def _guarded(self, name: str, arguments: Mapping[str, Any]) -> Outcome:
        """One call under its time limit, every failure turned into a result."""
        with trio.move_on_after(self.tool_timeout) as scope:
            try:
                return await self._call(name, arguments)
            except ToolError as exc:
                return _text(exc.text, error=True)
            except Withheld as exc:
                return exc.outcome()
            except InputStopped as exc:
                return input_stopped(exc)
            except BusUnavailable as exc:
                return _text(bus_unavailable(str(exc)), error=True)
            except BusTimeout:
                return _text(texts.TIMEOUT_REACHED, error=True)
            except Gone:
                # The app (or the window being read) vanished: an expected event on a
                # live desktop, never a reason for this server to stop.
                why = "the app quit or closed its window while the call ran"
                return after_input_failure(why, acted=self._sent)
            except Exception as exc:  # one bad call must not take the server down
                traceback.print_exc(file=sys.stderr)
                why = f"the Linux backend failed: {type(exc).__name__}"
                return after_input_failure(why, acted=self._sent)
        assert scope.cancelled_caught
        if self._sent:
            return after_input_failure("the call took too long", acted=True)
        return _text(texts.TIMEOUT_REACHED, error=True)

    @property
    def _sent(self) -> bool:
        """Whether the current call may have reached the app (see :attr:`_acting`)."""
        return self._acting is not None and self._acting.sending.is_set()

    def _exit_note(self) -> Withheld | None:
        """If the app this call was about has exited, the note that says so (with how it
        ended, where it was our child and so reaped here), else None."""
        if self._operating is None:
            return None
        name, pid = self._operating
        if settled_alive(pid):
            return None
        how = describe_exit(self.reaper.status_of(pid))
        during = "input was being sent to it" if self._sent else "its window was being read"
        ended = f"exited ({how})" if how else "exited"
        text = f"{name} {ended} while {during}."
        if self._sent:
            text += " What it did with the input is unknown."
        return Withheld(
            text,
            reason="app_exited",
            state="unknown" if self._sent else "refused",
            exit=how,
            during="acting" if self._sent else "reading",
        )

    async def _call(self, name: str, arguments: Mapping[str, Any]) -> Outcome:
        await self.switch.ensure_on()
        entries = self._entries.get()
        if name == "list_apps":
            try:
                catalog = await apps.catalog(self.bus, self.env, entries)
            except BusUnavailable:
                catalog = await apps.catalog(None, self.env, entries)
            return _text(catalog.list_text())
        args = check_arguments(name, arguments)
        target, session = await self._resolve(args["app"], entries)
        if name == "get_app_state":
            return await self._get_app_state(target)
        if session is None:
            raise ToolError(texts.not_active(args["app"]))
        lagging = lags(name, args, session.rendering.nodes)
        await self.settler.before_input(session.bus_name, lagging=lagging)
        selected, expect = await self._act(name, session, args)
        return await self._after_action(name, session, selected, expect)

    async def _resolve(
        self, given: str, entries: list[DesktopApp]
    ) -> tuple[Target, Session | None]:
        """``app`` -> its target and live session. An app with a session whose process is
        still registered needs one bus call; anything else lists the running apps."""
        path_env = self.env.get("PATH", "/usr/bin:/bin")
        quick = Catalog(entries, [], path_env=path_env).resolve(given)
        session = self.sessions.get(quick.bundle_id) if quick is not None else None
        if session is not None and session.pid > 0:
            self._operating = (session.target.name, session.pid)
        if session is not None and session.bus_name in await apps.registered(self.bus):
            known = session.target
            live = Target(known.bundle_id, known.name, known.path, known.entry, session.app)
            return live, session
        catalog = await apps.catalog(self.bus, self.env, entries)
        target = catalog.resolve(given)
        if target is None:
            raise ToolError(texts.app_not_found(given))
        session = self.sessions.get(target.bundle_id)
        if session is not None and (
            target.running is None or target.running.bus_name != session.bus_name
        ):
            del self.sessions[target.bundle_id]  # the app quit or restarted: indices are void
            session = None
        return target, session

    # --- observing ----------------------------------------------------------------------------

    async def _get_app_state(self, target: Target) -> Outcome:
        running = target.running
        if running is None and target.launchable:
            running = await self._start_or_wait(target)
        if running is None or running.pid is None:
            raise ToolError(texts.NO_WINDOWS)
        self._operating = (target.name, running.pid)
        session = await self._observe(target, running)
        self._refuse_if_unreadable(target, running, session)
        rendering = session.rendering
        text = render.state_text(
            rendering,
            app_name=target.name,
            path=target.path,
            bundle_id=target.bundle_id,
            pid=session.pid,
        )
        return await self._with_screenshot(_text(text), session)

    async def _start_or_wait(self, target: Target) -> RunningApp | None:
        """The app's process once it shows a window on the bus: started here when none runs;
        waited for while one is still starting; refused at once when one has run for longer
        than an app takes to start without ever joining the bus (it will not: waiting would
        only end in a missing window after the whole launch timeout, and starting it again
        would open another window of it)."""
        entry = target.entry
        assert entry is not None
        ages = apps.instance_ages(entry, self.env)
        if not ages:
            program = apps.program_path(entry, self.env)
            argv = programs.launch_argv(entry.argv, program)
            pid = apps.launch(self.reaper, argv, self.env)

            def gone() -> bool:
                return self.reaper.status_of(pid) is not None and not apps.instance_ages(
                    entry, self.env
                )

            running = await apps.wait_for_window(self.bus, target, self.env, gone=gone)
            if running is None and gone():
                how = describe_exit(self.reaper.status_of(pid))
                raise Withheld(
                    f"{target.name} exited ({how or 'how is unknown'}) right after it was "
                    "started, before it showed a window.",
                    reason="app_exited",
                    exit=how,
                    during="starting",
                )
            return running
        youngest = min(ages.values())
        # A process that started before the switch was on (see .switch) may join once it
        # sees the switch flip (Firefox does): give it a moment after the flip.
        grace = SWITCH_GRACE if self.switch.just_turned_on(SWITCH_GRACE) else 0.0
        limit = max(apps.LAUNCH_TIMEOUT - youngest, grace)
        running = await apps.wait_for_window(self.bus, target, self.env, limit=limit)
        if running is None:
            raise Withheld(
                f"{target.name} is running (process {min(ages, key=ages.__getitem__)}) but has "
                "not joined the accessibility bus, so there is nothing to read or operate. It "
                "decides at start whether to join: it has to be restarted.",
                reason="not_accessible",
                hint="restart",
            )
        return running

    @staticmethod
    def _refuse_if_unreadable(target: Target, running: RunningApp, session: Session) -> None:
        """A Chromium-family app started without its accessibility switch shows windows with
        nothing in them (see :mod:`.programs`): say so and what helps, instead of handing
        over an empty tree as if the app were empty."""
        nodes = session.rendering.nodes
        if any(n.children for n in nodes) or not programs.chromium_family([running.exe]):
            return
        if running.pid is None or programs.started_with_switch(running.pid):
            return
        raise Withheld(
            f"{target.name} is running without its accessibility tree: Chromium and Electron "
            f"apps build it only when started with {programs.CHROMIUM_A11Y_SWITCH}, and this "
            "one was started without it. It has to be quit and started again (observing it "
            "once it is closed starts it with the switch).",
            reason="not_accessible",
            hint="restart_chromium",
        )

    async def observe_surfaces(self, session: Session) -> Session:
        """Observe ``session``'s app afresh: every window, dialog and popup it shows, in the
        order the person deals with them, walked and numbered as one rendering that becomes
        the valid one. Call it after input to get what the action opened or closed; raises
        :class:`ToolError` (``noWindowsAvailable``) when the app shows no window at all."""
        return await self._observe(session.target, session.app)

    async def _observe(self, target: Target, app: RunningApp, window: Ref | None = None) -> Session:
        """Walk the app's surfaces and make them its session (their numbering is now the
        valid one). ``window`` is only a fallback for an app that lists no surface."""
        bus_name = app.bus_name
        facts = self._facts.setdefault(bus_name, {})
        if len(facts) > _MAX_FACTS:
            facts.clear()
        refs = await apps.surfaces_of(self.bus, app)
        if not refs and window is not None:
            refs = [window]
        if not refs:
            raise ToolError(texts.NO_WINDOWS)
        cache = None
        if bus_name in self._walked and bus_name not in self._no_cache:
            cache = await load_cache(self.bus, bus_name)
            if cache is None:
                self._no_cache.add(bus_name)
        budget = max(self.max_nodes, DEFAULT_BUDGET) + 1
        roots: list[Node | None] = [None] * len(refs)
        boxes: list[tuple[int, int, int, int] | None] = [None] * len(refs)
        complete = [True] * len(refs)

        async def read(at: int) -> None:
            try:
                root, walk = await read_tree(
                    self.bus, refs[at], budget=budget, cache=cache, facts=facts
                )
            except (Gone, CallFailed):
                return  # this surface closed meanwhile; the others still count
            # The walk reads the window's screen rectangle first thing: no call of our own.
            roots[at], complete[at], boxes[at] = root, walk.complete, walk.box

        with one_error():
            async with trio.open_nursery() as nursery:
                for at in range(len(refs)):
                    nursery.start_soon(read, at)
        shown = [at for at in range(len(refs)) if roots[at] is not None]
        if not shown:
            raise ToolError(texts.NO_WINDOWS)
        if cache is None:
            self._walked.add(bus_name)
        walked = [r for r in roots if r is not None]
        rendering = render.render(
            walked,
            max_nodes=self.max_nodes,
            complete=all(complete),
            checked=await self._menu_ticks(target, app, walked),
        )
        surfaces = tuple(Surface(refs[at], boxes[at] or (0, 0, 0, 0)) for at in shown)
        extents = union([s.extents for s in surfaces])
        session = Session(target, app, surfaces[0].ref, extents, rendering, surfaces)
        self.sessions[target.bundle_id] = session
        return session

    async def _menu_ticks(
        self, target: Target, app: RunningApp, roots: Sequence[Node]
    ) -> dict[Ref, bool]:
        """Ticks of the open menus' items that accessibility does not report, from the menus
        the app publishes (see :mod:`.gmenu`); asked only while such an item is on screen."""
        unknown = gmenu.unknown_ticks(roots)
        if not unknown or app.pid is None:
            return {}
        found = await gmenu.read_ticks(self.env, [target.bundle_id], app.pid)
        return {ref: found[path] for ref, path in unknown if path in found}

    async def _give_keyboard(self, session: Session) -> Ref | None:
        """Keys go wherever the X input focus is, and inside the app to its focused element.
        Give the app's window the X focus (through the window manager where there is one)
        and nothing more: asking the toolkit to focus the whole window makes some apps drop
        the focus of the field the keys are meant for (Firefox does). Then keys are sent only
        where the focus is the app's, or cannot be shown to be another app's (the input guard
        still checks every batch at the X server): returns the app's focused element when it
        is known. Raises :class:`Withheld` (``focus_elsewhere``) when another app holds it."""
        await self.screen.activate(session.pid, focus=True)
        self.settler.rebase()  # focus events are not the keys' effect
        if self.screen.kind != "x11":
            # Toolkits on Wayland do not all report losing the keyboard (GTK 4 keeps its
            # focused element focused): the compositor's focus window is proven before every
            # batch instead (see .wlscreen), and the app's own word names the element.
            return await self._own_focus(session)
        events = self.settler.events
        deadline = trio.current_time() + FOCUS_SETTLE
        while True:
            where = verify.focus_verdict(events.focus, events.focus_known, session.bus_name)
            if where == "in_app" and events.focus is not None:
                return events.focus
            mine = await self._tree_focus(session)
            if mine is not None:
                return mine
            # Toolkits do not all report a window's focus coming back (GTK 4 does not), so a
            # report naming another app counts only while that app still says so.
            holder = events.focus if where == "elsewhere" else None
            if holder is None or not await actions.ref_focused(self.bus, holder):
                return None  # nobody else holds it: the input guard checks each batch
            if trio.current_time() >= deadline or not events.live:
                break
            await events.wait(deadline)  # its report of losing the focus may be coming
        raise Withheld(
            f"The keyboard focus is in another application ({holder[0]}), not in "
            f"{session.target.name}: no keys were sent.",
            reason="focus_elsewhere",
        )

    async def _tree_focus(self, session: Session) -> Ref | None:
        """The element the app's latest tree shows focused, if it still says so."""
        rendering = session.rendering
        if rendering.focus_index is None:
            return None
        node = rendering.nodes[rendering.focus_index]
        return node.ref if await actions.still_focused(self.bus, node) else None

    async def _own_focus(self, session: Session) -> Ref | None:
        """The app's focused element as its latest report or tree names it, if it still
        says so; else the editable text a click by index last put the caret in, if it is
        still shown (GTK 4 reports no focus once a field was focused through
        accessibility), marked as presumed (:attr:`_presumed`); None when there is none."""
        events = self.settler.events
        mine = events.focus is not None and events.focus[0] == session.bus_name
        if mine and events.focus is not None and await actions.ref_focused(self.bus, events.focus):
            return events.focus
        tree = await self._tree_focus(session)
        if tree is not None:
            return tree
        rendering = session.rendering
        caret = self._caret.get(session.bus_name)
        if caret is not None and rendering.focus_index is None:
            states = await verify.read_states(self.bus, caret)
            # GTK 4.8 says VISIBLE but not SHOWING of a text view inside a scrolled window
            shown = roles.State.SHOWING, roles.State.VISIBLE
            if states is not None and any(roles.has(states, bit) for bit in shown):
                self._presumed = caret
                return caret
        return None

    async def _with_screenshot(self, outcome: Outcome, session: Session) -> Outcome:
        # Without a window manager, another app's window may lie over this one: raise it.
        await self.screen.activate(session.pid, focus=False)
        await self.settler.prepare()  # events flow from here on, before the first action
        # After input: a picture drawn after the app's answer to it (see .settle).
        shot = await self.settler.screenshot(session.extents, session.bus_name)
        if shot is not None:
            outcome.content.append(
                {
                    "data": base64.b64encode(shot).decode("ascii"),
                    "mimeType": "image/png",
                    "type": "image",
                }
            )
        return outcome

    async def _after_action(
        self,
        name: str,
        session: Session,
        selected: str | None,
        expect: verify.Expectation | None = None,
    ) -> Outcome:
        self.settler.input_ended()
        await self.settler.tree(session.bus_name)  # the app's signals, not a fixed sleep
        if self._toggle is not None:
            await self._toggled(*self._toggle)
        window = session.window
        try:
            fresh = await self._observe(session.target, session.app, window)
        except ToolError:
            # The window closed (a dialog was dismissed, say): show whichever is there now.
            other = await apps.window_of(self.bus, session.app)
            if other is None:
                raise
            fresh = await self._observe(session.target, session.app, other)
        text = render.action_text(
            fresh.rendering,
            app_name=fresh.target.name,
            bundle_id=fresh.target.bundle_id,
            pid=fresh.pid,
        )
        if selected:
            text += "\n\n" + texts.selected_text_tail(selected)
        outcome = _text(text)
        if expect is not None:
            verdict = await self._judged(expect)
            if verdict == "unchanged":
                raise Withheld(
                    f"{_EFFECT_WORDS[expect.what]} {session.target.name} shows it unchanged: "
                    "the app did not take the action.\n\n" + text,
                    reason="no_effect",
                    state="dispatched",
                    what=expect.what,
                )
            outcome.meta[surface.EFFECT_META] = {"effect": verdict, "what": expect.what}
        if name in _SCREENSHOT_ACTIONS:
            return await self._with_screenshot(outcome, fresh)
        return outcome

    # --- acting -------------------------------------------------------------------------------

    def _element(self, session: Session, given: str) -> Node:
        if not re.fullmatch(r"[0-9]+", given):
            raise ToolError(texts.invalid_element_id(given))
        index = int(given)
        nodes = session.rendering.nodes
        if index >= len(nodes):
            raise ToolError(texts.STALE_ELEMENT)
        return nodes[index]

    async def _live_element(self, session: Session, given: str) -> Node:
        node = self._element(session, given)
        await actions.check_alive(self.bus, node)
        return node

    async def _toolkit(self, session: Session) -> tuple[str, int | None]:
        """The app's toolkit and its major version (``Application.ToolkitName`` and
        ``Version``: ``gtk`` and ``3.24.38`` or ``4.8.3``, ``qt`` and ``5.15.8``, the name
        case-folded), read once per app; ``""`` and None for what it does not say."""
        name = session.bus_name
        if name not in self._toolkits:
            ref = (name, session.app.ref_path)
            got = await self.bus.get_many(ref, APPLICATION, ("ToolkitName", "Version"))
            major: int | None = None
            try:
                major = int(str(got.get("Version", "")).split(".")[0])
            except ValueError:
                pass
            # GTK 3 says "gtk", GTK 4 "GTK": compared without case
            self._toolkits[name] = (str(got.get("ToolkitName", "")).casefold(), major)
        return self._toolkits[name]

    @staticmethod
    def _in_window(where: actions.Target, session: Session, node: Node) -> actions.Target:
        """``where`` measured from the window ``node`` is in (a dialog is not at the origin
        of the rectangle around all of the app's windows), for pointer input at an element."""
        index = session.rendering.nodes.index(node)
        # A button is pressed with the pointer only in an app showing one window and no
        # popup inside it, wholly in view with nothing of the tree over it: anything of the
        # app's own could lie over the button otherwise (see .actions).
        root = session.rendering.nodes[0]
        alone = len(session.surfaces) == 1 and not model.popup_open(root)
        window = session.surfaces[0].ref if alone and model.clear_in_view(root, node) else None
        surface = session.rendering.nodes[
            session.rendering.roots[session.rendering.surface_of(index)]
        ]
        return dataclasses.replace(
            where,
            origin=session.origin_of(index),
            window=window,
            ancestors=_ancestors(surface, node),
        )

    async def _judged(self, expect: verify.Expectation) -> verify.Verdict:
        """The verdict on what the element shows, read again for at most
        :data:`~.verify.TOGGLE_WAIT_S` while it still shows what it showed before: Firefox
        updates a page field's accessible text from its content process after the events the
        settling waits for."""
        verdict = verify.judge(expect, await verify.read_back(self.bus, expect))
        with trio.move_on_after(verify.TOGGLE_WAIT_S):
            while verdict == "unchanged":
                await trio.sleep(TOGGLE_POLL_S)
                verdict = verify.judge(expect, await verify.read_back(self.bus, expect))
        return verdict

    async def _toggled(self, ref: Ref, before: int) -> None:
        """Until the clicked element's own state (checked, selected, pressed, expanded) differs
        from what the tree showed, for at most :data:`~.verify.TOGGLE_WAIT_S`: a click that
        changes nothing there (an already selected radio button) costs that wait."""
        with trio.move_on_after(verify.TOGGLE_WAIT_S):
            while True:
                states = await verify.read_states(self.bus, ref)
                if states is None or verify.toggled_bits(states) != before:
                    return
                await trio.sleep(TOGGLE_POLL_S)

    async def _reachable(self, session: Session, given: str) -> Node:
        """The live element ``given`` names, unless a modal dialog of the app keeps it from
        getting input (:class:`Withheld` ``modal_dialog``, nothing sent)."""
        node = await self._live_element(session, given)
        dialog = verify.blocking_dialog(session.rendering, int(given))
        if dialog is not None:
            raise Withheld(
                f"{session.target.name} shows the modal dialog {dialog!r}, which takes all of "
                f"its input until it is answered; nothing was sent to element {given}.",
                reason="modal_dialog",
                dialog=dialog,
            )
        return node

    async def _act(
        self, name: str, session: Session, args: dict[str, Any]
    ) -> tuple[str | None, verify.Expectation | None]:
        """Perform one action tool; returns the selected text after ``select_text`` and what
        reading the element back should show, where the action promises something readable.

        Synthesized input is guarded: it is sent only while it would reach the session's own
        process (see :mod:`.x11guard`)."""
        self._acting = guard = await self._guard(session)
        where = actions.Target(self.bus, self.screen, session.origin, guard)
        given = args.get("element_index")
        node = await self._reachable(session, given) if isinstance(given, str) else None
        if name == "click":
            count, button = args.get("click_count", 1), args.get("mouse_button", "left")
            if not isinstance(count, int) or isinstance(count, bool) or count < 1:
                raise ToolError(texts.INVALID_PARAMETER)
            if button not in ("left", "right", "middle"):
                raise ToolError(texts.INVALID_PARAMETER)
            if node is not None:
                toolkit = await self._toolkit(session)
                if count == 1 and button == "left" and verify.toggles(node):
                    self._toggle = (node.ref, verify.toggled_bits(node.states))
                if count == 1 and button == "left" and actions.takes_caret(node):
                    self._caret[session.bus_name] = node.ref
                at_once = await actions.click_element(
                    self._in_window(where, session, node),
                    node,
                    button,
                    count,
                    gtk3=toolkit == ("gtk", 3),
                    menus_by_pointer=toolkit[0] != "gtk" or toolkit[1] == 3,
                )
                if at_once:
                    self.settler.at_once()
                return None, None
            x, y = args.get("x"), args.get("y")
            if not (_is_number(x) and _is_number(y)):
                raise ToolError(texts.INVALID_PARAMETER)
            assert isinstance(x, int | float) and isinstance(y, int | float)
            await actions.click_point(where, x, y, button, count)
        elif name == "perform_secondary_action":
            assert node is not None
            await actions.secondary_action(where, node, args["action"], args["element_index"])
        elif name == "set_value":
            assert node is not None
            if not node.settable:
                raise ToolError(texts.NOT_SETTABLE)
            expect = self._expect_value(node, args["value"])
            await actions.set_value(where, node, args["value"])
            return None, expect
        elif name == "select_text":
            assert node is not None
            return await self._select(where, node, args)
        elif name == "scroll":
            if args["direction"] not in actions.DIRECTIONS:
                raise ToolError(texts.invalid_scroll_direction(args["direction"]))
            pages = args.get("pages", 1)
            if not _is_number(pages):
                raise ToolError(texts.MISSING_SCROLL_AMOUNT)
            if not pages > 0:
                raise ToolError(texts.INVALID_PARAMETER)
            assert node is not None
            await actions.scroll(
                self._in_window(where, session, node), node, args["direction"], float(pages)
            )
        elif name == "drag":
            points = [float(args[k]) for k in ("from_x", "from_y", "to_x", "to_y")]
            await actions.drag(where, points)
        elif name == "press_key":
            await self._give_keyboard(session)
            await actions.keys(where, args["key"])
        elif name == "type_text":
            focused = await self._give_keyboard(session)
            before = await verify.read_text(self.bus, focused) if focused is not None else None
            states = await verify.read_states(self.bus, focused) if focused is not None else None
            await actions.type_text(where, args["text"], into_field=verify.takes_text(states))
            if focused is not None and args["text"]:
                # Return and Tab may send a form or move the focus on, leaving the field
                # empty or elsewhere: what it holds then says nothing about the keys.
                if any(c in "\n\r\t" for c in args["text"]):
                    before = None
                known = focused != self._presumed
                return None, verify.Expectation(focused, "text", before, known=known)
        return None, None

    async def _guard(self, session: Session) -> Guard:
        """What input to ``session``'s app must reach: its process, and on Wayland the sizes
        of its windows, which the focused window must have (see :mod:`.wlscreen`)."""
        if self.screen.kind == "x11":
            return Guard(pid=session.pid)
        sizes = frozenset(
            (s.extents[2], s.extents[3])
            for s in session.surfaces
            if s.extents[2] > 0 and s.extents[3] > 0
        )
        others = await apps.sizes_elsewhere(self.bus, session.bus_name)
        return Guard(pid=session.pid, window_sizes=sizes, other_sizes=others, origin=session.origin)

    @staticmethod
    def _expect_value(node: Node, value: str) -> verify.Expectation | None:
        """What ``set_value`` should leave in ``node``, as the tree showed it before."""
        if not verify.readable(node):
            return None
        if node.text_settable:
            return verify.Expectation(node.ref, "value", node.text, wanted=value)
        try:
            wanted = render.format_value(float(value))
        except ValueError:
            return None  # set_value refuses it
        before = render.format_value(node.value) if node.value is not None else None
        return verify.Expectation(node.ref, "value", before, wanted=wanted, numeric=True)

    async def _select(
        self, where: actions.Target, node: Node, args: dict[str, Any]
    ) -> tuple[str | None, verify.Expectation | None]:
        selection = args.get("selection", "text")
        prefix, suffix = args.get("prefix", ""), args.get("suffix", "")
        if selection not in actions.SELECTIONS:
            raise ToolError(texts.INVALID_PARAMETER)
        if not isinstance(prefix, str) or not isinstance(suffix, str):
            raise ToolError(texts.INVALID_PARAMETER)
        text = args["text"]
        selected = await actions.select_text(where, node, text, prefix, suffix, selection)
        if selection == "text":
            return selected, verify.Expectation(node.ref, "selection", None, wanted=text)
        found = actions.find_text(node.text or "", text, prefix, suffix)
        if found is None:
            return selected, None  # the text moved since the tree was read: nothing to judge
        offset = found[0] if selection == "cursor_before" else found[1]
        expect = verify.Expectation(node.ref, "selection", None, wanted=verify.caret_at(offset))
        return selected, expect
