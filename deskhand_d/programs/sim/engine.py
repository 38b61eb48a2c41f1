"""What a ``tools/call`` does: Sky's checks in Sky's order, then the app action and its result.

What this owns: per-process Sky state (approved apps, app sessions of the current turn, the
stop latch, the turn-ended state, the last rendering of every app) and the semantics of the ten
tools. It does no I/O of its own: the approval prompt is an awaitable handed in by the server,
and results come back as :class:`~deskhand_d.programs.core.tools.Outcome` values for the
server core to encode.

Order of checks for every call, mirroring what a client can observe of Sky: unknown tool ->
turn bookkeeping (``x-codex-turn-metadata.turn_id``) -> unauthenticated -> stop latch ->
turn ended -> injected failures -> ``list_apps`` -> arguments -> app resolution -> approval
prompt -> session (``get_app_state`` earlier in this turn) -> the action itself.
"""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from datetime import date, datetime, time
from typing import Any

from deskhand_d import surface

from ..core import texts
from ..core.tools import Outcome
from . import ax, keys
from .apps.base import ActionError, SimApp
from .apps.calculator import Calculator
from .apps.calendar import Calendar, Event
from .apps.textedit import TextEdit
from .catalog import AppEntry, Catalog, Resolution, default_entries
from .image import Camera, hit
from .scenario import Scenario

Approve = Callable[[AppEntry], Awaitable[str]]
INJECT_META_KEY = "deskhand-sim/inject"
_DIRECTIONS = ("up", "down", "left", "right")


class _Fail(Exception):
    """Ends a call early with a Sky error text (internal control flow)."""


def _text(text: str, *, error: bool = False) -> Outcome:
    return Outcome([{"text": text, "type": "text"}], is_error=error)


def _is_number(value: object) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _clock(scenario: Scenario) -> tuple[date, time]:
    now = datetime.now()
    today = date.fromisoformat(scenario.today) if scenario.today else now.date()
    at = (
        time.fromisoformat(scenario.now)
        if scenario.now
        else now.time().replace(second=0, microsecond=0)
    )
    return today, at


class Engine:
    def __init__(self, scenario: Scenario) -> None:
        self.scenario = scenario
        locale = scenario.locale
        today, at = _clock(scenario)
        self.catalog = Catalog(default_entries(), today, locale)
        doc = texts.STOP_NOTICE if scenario.stop_text_in_document else scenario.textedit.text
        pid = {e.bundle_id: e.pid for e in self.catalog.entries}
        events = [Event(date.fromisoformat(e.date), e.title, e.calendar) for e in scenario.events]
        apps: list[SimApp] = [
            Calculator(pid[Calculator.bundle_id], locale),
            Calendar(
                pid[Calendar.bundle_id],
                locale,
                today=today,
                now=at,
                events=events,
                holidays=scenario.holidays,
            ),
            TextEdit(pid[TextEdit.bundle_id], locale, text=doc, path=scenario.textedit.path),
        ]
        self.apps = {a.bundle_id: a for a in apps}
        self.camera = Camera(scenario.image_format)
        self.approved: set[str] = set()
        self.active: set[str] = set()
        self.renders: dict[str, ax.Rendering] = {}
        # For the partial-update knob: the first and the latest get_app_state rendering.
        self.first_states: dict[str, ax.Rendering] = {}
        self.last_states: dict[str, ax.Rendering] = {}
        self.turn_id: str | None = None
        self.turn_ended = False
        self.stopped = False
        self._stop_fired = self._turn_end_fired = False  # scenario triggers fire once
        for name in scenario.preapproved:
            if name == "*":
                self.approved.update(e.bundle_id for e in self.catalog.entries)
            elif (entry := self.catalog.lookup(name)) is not None:
                self.approved.add(entry.bundle_id)

    # --- lifecycle hooks ----------------------------------------------------------------------

    def stop(self) -> None:
        """The user pressed Stop: every later call gets the stop notice."""
        self.stopped = True

    def end_turn(self) -> None:
        """The host ended the turn: sessions are gone until a call brings a new ``turn_id``."""
        self.turn_ended = True
        self.active.clear()

    def _observe_turn(self, meta: dict[str, Any]) -> None:
        turn = meta.get("x-codex-turn-metadata")
        turn_id = turn.get("turn_id") if isinstance(turn, dict) else None
        if not isinstance(turn_id, str) or turn_id == self.turn_id:
            return
        self.turn_id = turn_id
        self.active.clear()
        if self.turn_ended:
            self.turn_ended = False
            self.stopped = False

    # --- the call -----------------------------------------------------------------------------

    async def call(
        self,
        name: str,
        arguments: dict[str, Any],
        meta: dict[str, Any],
        ordinal: int,
        approve: Approve,
    ) -> Outcome:
        if name not in surface.TOOL_ORDER:
            return _text(texts.unknown_tool(name), error=True)
        self._observe_turn(meta)
        sc = self.scenario
        if sc.unauthenticated:
            return _text(texts.UNAUTHENTICATED, error=True)
        if (
            sc.turn_end is not None
            and sc.turn_end.matches(name, ordinal)
            and not self._turn_end_fired
        ):
            self._turn_end_fired = True
            self.end_turn()
        if sc.stop is not None and sc.stop.matches(name, ordinal) and not self._stop_fired:
            self._stop_fired = True
            self.stop()
        if self.turn_ended:
            return _text(texts.TURN_ENDED, error=True)
        if self.stopped:
            return _text(texts.STOP_NOTICE, error=sc.stop_is_error)
        injected = next((i.error for i in sc.inject if i.matches(name, ordinal)), None)
        if injected is None and isinstance(meta.get(INJECT_META_KEY), str):
            injected = meta[INJECT_META_KEY]
        if injected is not None:
            return self._injected(injected, arguments)
        for change in sc.frontmost:
            if change.matches(name, ordinal):
                self.catalog.bring_to_front(change.app)
        if name == "list_apps":
            return _text(self.catalog.list_apps_text())
        outcome = Outcome()
        try:
            args = self._arguments(name, arguments)
            entry = self.catalog.resolve(args["app"])
            if any(w.matches(name, ordinal) for w in sc.relaunch):
                self._relaunch(entry)
            await self._approve(entry, approve, outcome)
            result = self._run(name, entry, args)
        except (_Fail, Resolution, ActionError) as exc:
            result = _text(str(exc), error=True)
        result.user_flow = outcome.user_flow
        return result

    def _relaunch(self, entry: AppEntry) -> None:
        """The app quit and started again just before this call: a new process, no session."""
        entry.pid += 1000
        entry.running = True
        app = self.apps.get(entry.bundle_id)
        if app is not None:
            app.pid = entry.pid
        self.active.discard(entry.bundle_id)
        self.renders.pop(entry.bundle_id, None)

    def _injected(self, error: str, arguments: dict[str, Any]) -> Outcome:
        app_arg = arguments.get("app")
        given = app_arg if isinstance(app_arg, str) else ""
        entry = self.catalog.lookup(given)
        bundle = entry.bundle_id if entry else given
        if error == "stop":
            self.stop()
            return _text(texts.STOP_NOTICE, error=self.scenario.stop_is_error)
        if error == "turnEnded":
            self.end_turn()
            return _text(texts.TURN_ENDED, error=True)
        table = {
            "unauthenticated": texts.UNAUTHENTICATED,
            "noWindowsAvailable": texts.NO_WINDOWS,
            "cgWindowNotFound": texts.CG_WINDOW_NOT_FOUND,
            "timeoutReached": texts.TIMEOUT_REACHED,
            "invalidParameter": texts.INVALID_PARAMETER,
            "permissionsPending": texts.PERMISSIONS_PENDING,
            "permissionsMissing": texts.PERMISSIONS_MISSING,
            "screenLocked": texts.SCREEN_LOCKED,
            "screenLockedNoThread": texts.SCREEN_LOCKED_NO_THREAD,
            "versionMismatch": texts.VERSION_MISMATCH,
            "userChangedApp": texts.user_changed((entry.path + "/") if entry else given),
            "orgPolicy": texts.org_policy_blocked(bundle),
            "runningAppNotFound": texts.running_app_not_found(bundle),
        }
        return _text(table.get(error, texts.INVALID_PARAMETER), error=True)

    def _arguments(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        """Check required arguments; Sky reports a string of the wrong type as missing."""
        schema = surface.input_schema(name)
        args = dict(arguments)
        index = args.get("element_index")
        if _is_number(index) and self.scenario.numeric_element_index == "accept":
            args["element_index"] = str(index)
        for prop in schema.get("required", []):
            kind = schema["properties"][prop]["type"]
            value = args.get(prop)
            if value is None:
                if prop == "direction":
                    raise _Fail(texts.MISSING_SCROLL_DIRECTION)
                raise _Fail(texts.missing_argument(prop))
            if kind == "string" and not isinstance(value, str):
                raise _Fail(
                    texts.MISSING_SCROLL_DIRECTION
                    if prop == "direction"
                    else texts.missing_argument(prop)
                )
            if kind == "number" and not _is_number(value):
                raise _Fail(texts.INVALID_PARAMETER)
        if "element_index" in args and not isinstance(args["element_index"], str):
            raise _Fail(texts.missing_argument("element_index"))
        return args

    async def _approve(self, entry: AppEntry, approve: Approve, outcome: Outcome) -> None:
        if entry.bundle_id in self.approved:
            return
        rounds = 2 if self.scenario.double_approval else 1
        for _ in range(rounds):
            outcome.user_flow = True
            answer = await approve(entry)
            if answer == "cancel":
                raise _Fail(texts.approval_canceled(entry.bundle_id))
            if answer != "accept":
                raise _Fail(texts.approval_denied(entry.bundle_id))
        self.approved.add(entry.bundle_id)

    # --- tools --------------------------------------------------------------------------------

    def _run(self, name: str, entry: AppEntry, args: dict[str, Any]) -> Outcome:
        app = self.apps.get(entry.bundle_id)
        if name == "get_app_state":
            if app is None:
                raise _Fail(texts.NO_WINDOWS)
            entry.running = True
            self.active.add(entry.bundle_id)
            return self._state(app)
        if app is None or entry.bundle_id not in self.active:
            raise _Fail(texts.not_active(args["app"]))
        getattr(self, f"_do_{name}")(app, args)
        return self._after_action(app)

    def _element(self, app: SimApp, given: str) -> ax.Element:
        """Map an index from the last rendering to the element with that key *now*."""
        if not re.fullmatch(r"[0-9]+", given):
            raise _Fail(texts.invalid_element_id(given))
        last = self.renders.get(app.bundle_id)
        index = int(given)
        if last is None or index >= len(last.elements):
            raise _Fail(texts.STALE_ELEMENT)
        key = last.elements[index].key
        current = ax.render(app.window(), app.locale)
        position = current.index_of(key)
        if position is None:
            raise _Fail(texts.STALE_ELEMENT)
        return current.elements[position]

    def _do_click(self, app: SimApp, args: dict[str, Any]) -> None:
        count = args.get("click_count", 1)
        button = args.get("mouse_button", "left")
        if not isinstance(count, int) or isinstance(count, bool) or count < 1:
            raise _Fail(texts.INVALID_PARAMETER)
        if button not in ("left", "right", "middle"):
            raise _Fail(texts.INVALID_PARAMETER)
        if isinstance(args.get("element_index"), str):
            node = self._element(app, args["element_index"])
            app.press(node.key, count, button)
            return
        x, y = args.get("x"), args.get("y")
        if not (_is_number(x) and _is_number(y)):
            raise _Fail(texts.INVALID_PARAMETER)
        assert isinstance(x, int | float) and isinstance(y, int | float)
        app.click_point(hit(app.window().root, x, y), x, y, count, button)

    def _do_perform_secondary_action(self, app: SimApp, args: dict[str, Any]) -> None:
        node = self._element(app, args["element_index"])
        if args["action"] not in node.actions:
            raise _Fail(texts.bad_secondary_action(args["action"], args["element_index"]))
        app.secondary_action(node.key, args["action"])

    def _do_set_value(self, app: SimApp, args: dict[str, Any]) -> None:
        node = self._element(app, args["element_index"])
        if not node.settable:
            raise _Fail(texts.NOT_SETTABLE)
        app.set_value(node.key, args["value"])

    def _do_select_text(self, app: SimApp, args: dict[str, Any]) -> None:
        selection = args.get("selection", "text")
        if selection not in ("text", "cursor_before", "cursor_after"):
            raise _Fail(texts.INVALID_PARAMETER)
        prefix, suffix = args.get("prefix", ""), args.get("suffix", "")
        if not isinstance(prefix, str) or not isinstance(suffix, str):
            raise _Fail(texts.INVALID_PARAMETER)
        node = self._element(app, args["element_index"])
        app.select_text(node.key, args["text"], prefix, suffix, selection)

    def _do_scroll(self, app: SimApp, args: dict[str, Any]) -> None:
        direction = args["direction"]
        if direction not in _DIRECTIONS:
            raise _Fail(texts.invalid_scroll_direction(direction))
        pages = args.get("pages", 1)
        if not _is_number(pages):
            raise _Fail(texts.MISSING_SCROLL_AMOUNT)
        node = self._element(app, args["element_index"])
        app.scroll(node.key, direction, float(pages))

    def _do_drag(self, app: SimApp, args: dict[str, Any]) -> None:
        app.drag(args["from_x"], args["from_y"], args["to_x"], args["to_y"])

    def _do_press_key(self, app: SimApp, args: dict[str, Any]) -> None:
        chord = keys.parse(args["key"])
        if chord is None:
            raise _Fail(texts.INVALID_PARAMETER)
        app.key(chord)

    def _do_type_text(self, app: SimApp, args: dict[str, Any]) -> None:
        for char in args["text"]:
            if char not in "\n\t\r" and (ord(char) < 32 or ord(char) == 127):
                raise _Fail(texts.no_key_code(char))
        app.type_text(args["text"])

    # --- results ------------------------------------------------------------------------------

    def _shot(self, app: SimApp, window: ax.Window) -> dict[str, str]:
        return self.camera.shoot(window, app.width, app.height, app.background).block()

    def _state(self, app: SimApp) -> Outcome:
        sc = self.scenario
        window = app.window()
        rendering = ax.render(window, app.locale)
        previous = self.last_states.get(app.bundle_id)
        identity = texts.identity_path_form(app.path, app.bundle_id, app.pid)
        self.renders[app.bundle_id] = self.last_states[app.bundle_id] = rendering
        self.first_states.setdefault(app.bundle_id, rendering)
        if sc.partial_update != "off" and previous is not None:
            if sc.partial_update == "no_change" and previous.lines == rendering.lines:
                body = texts.no_change(window.title)
            else:
                base = (
                    self.first_states[app.bundle_id]
                    if sc.partial_update == "cumulative"
                    else previous
                )
                body = ax.diff_text(base, rendering, cumulative=sc.partial_update == "cumulative")
            text = "\n".join(
                [
                    texts.banner(sc.cua_version),
                    texts.APP_STATE_OPEN,
                    identity,
                    body,
                    texts.APP_STATE_CLOSE,
                ]
            )
        else:
            text = ax.state_text(rendering, identity, sc.cua_version)
        content: list[dict[str, Any]] = [{"text": text, "type": "text"}]
        if sc.screenshots:
            content.append(self._shot(app, window))
        return Outcome(content)

    def _after_action(self, app: SimApp) -> Outcome:
        identity = texts.identity_short_form(app.bundle_id, app.pid)
        if self.scenario.receipts:
            return _text(identity + "\n" + texts.ACTION_RECEIPT)
        window = app.window()
        rendering = ax.render(window, app.locale)
        self.renders[app.bundle_id] = rendering
        content: list[dict[str, Any]] = [
            {"text": ax.action_text(rendering, identity), "type": "text"}
        ]
        if self.scenario.action_screenshots:
            content.append(self._shot(app, window))
        return Outcome(content)
