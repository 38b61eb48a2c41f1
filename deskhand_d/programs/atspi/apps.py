"""Applications on the bus: who is running, which window is theirs, and starting them.

What this owns: listing the applications registered with the AT-SPI registry (name, process,
executable), choosing an application's window the way a person would see it (the active one,
else the first visible one) and listing all of its surfaces in the order the person deals with
them (:func:`order_surfaces`: a popup first, then a modal dialog, the other windows newest
first, tooltips last), the window's screen rectangle, and launching an installed
app the way Sky does when ``get_app_state`` names one that is not running, then waiting until its
window is there and has settled. A process counts as "already running" only when it belongs to
this desktop (:func:`same_desktop`): another display or session bus is someone else's desktop,
whose windows this backend can never see.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Mapping, Sequence
from typing import Final

import trio

from . import roles
from .bus import REGISTRY, Bus, BusError, Gone, one_error
from .catalog import Catalog, DesktopApp, RunningApp, Target, data_dirs, exe_of, scan_entries
from .model import ACCESSIBLE, COMPONENT, Ref
from .programs import runs_program
from .reaper import Reaper
from .roles import Role, State

LAUNCH_TIMEOUT: Final = 20.0
LAUNCH_SETTLE: Final = 1.0
_POLL: Final = 0.2
SCREEN_COORDS: Final = 0  # AtspiCoordType: screen
WINDOW_COORDS: Final = 1  # AtspiCoordType: window


async def running_apps(bus: Bus) -> list[RunningApp]:
    """Every application registered on the accessibility bus (vanishing ones skipped)."""
    (children,) = await bus.call(REGISTRY, ACCESSIBLE, "GetChildren")
    found: list[RunningApp | None] = [None] * len(children)

    async def one(i: int, bus_name: str, path: str) -> None:
        try:
            name = str(await bus.get((bus_name, path), ACCESSIBLE, "Name"))
        except BusError:
            return
        pid = await bus.pid_of(bus_name)
        found[i] = RunningApp(bus_name, name, pid, exe_of(pid), path)

    with one_error():
        async with trio.open_nursery() as nursery:
            for i, (bus_name, path) in enumerate(children):
                nursery.start_soon(one, i, str(bus_name), str(path))
    return [a for a in found if a is not None]


async def registered(bus: Bus) -> set[str]:
    """Bus names of the applications registered right now (one call)."""
    (children,) = await bus.call(REGISTRY, ACCESSIBLE, "GetChildren")
    return {str(c[0]) for c in children}


class Entries:
    """The installed desktop entries, scanned again only when an applications folder changed."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._env = env
        self._stamp: tuple[float, ...] | None = None
        self._entries: list[DesktopApp] = []

    def _now(self) -> tuple[float, ...]:
        stamp: list[float] = []
        for base in data_dirs(self._env):
            try:
                stamp.append(os.stat(os.path.join(base, "applications")).st_mtime)
            except OSError:
                stamp.append(-1.0)
        return tuple(stamp)

    def get(self) -> list[DesktopApp]:
        stamp = self._now()
        if stamp != self._stamp:
            self._entries, self._stamp = scan_entries(self._env), stamp
        return self._entries


async def catalog(
    bus: Bus | None, env: Mapping[str, str], entries: Sequence[DesktopApp] | None = None
) -> Catalog:
    """Installed entries plus, when the bus is there, what runs right now."""
    if entries is None:
        entries = scan_entries(env)
    running = await running_apps(bus) if bus is not None else []
    return Catalog(entries, running, path_env=env.get("PATH", "/usr/local/bin:/usr/bin:/bin"))


def pick_window(candidates: Sequence[tuple[Ref, int, int]]) -> Ref | None:
    """The window to show from ``(ref, role, states)``: active, else visible, else any. Pure."""
    windows = [c for c in candidates if c[1] in roles.WINDOW_ROLES] or list(candidates)
    for want in (State.ACTIVE, State.SHOWING, State.VISIBLE):
        for ref, _, states in windows:
            if roles.has(states, want):
                return ref
    return windows[0][0] if windows else None


#: Top-level roles of a popup: a GTK 3 combo box list or context menu (an X popup window).
_POPUP_ROLES: Final = frozenset({Role.WINDOW, Role.MENU, Role.POPUP_MENU})
_TOOLTIP: Final = 64


def order_surfaces(candidates: Sequence[tuple[Ref, int, int]]) -> list[Ref]:
    """An application's top-level objects ``(ref, role, states)`` (in the application's own
    order, oldest first) -> the ones on screen, in the order the person deals with them. Pure.

    On screen: visible, and showing too when the toolkit keeps that up to date (GTK 3 does for
    windows; when no window is showing, none is required to be; a top-level without a window
    role, which GTK 4.8 never marks showing, is on screen while visible). Order: a popup (it
    holds the pointer and keyboard while open), a modal dialog, the other windows newest first
    (a new window opens on top of the older ones), tooltips last. The active window does not come
    first: without a window manager the one the keys were last sent to stays active while a
    dialog opens on top of it.
    """
    shown = [c for c in candidates if roles.has(c[2], State.VISIBLE)]
    if any(roles.has(states, State.SHOWING) for _, _, states in shown):
        # GTK 4.8 keeps `showing` on objects of a window role only: a window it gives another
        # role (its About dialog is a `filler`) is on screen while visible.
        shown = [
            c
            for c in shown
            if roles.has(c[2], State.SHOWING)
            or c[1] not in roles.WINDOW_ROLES | _POPUP_ROLES | {_TOOLTIP}
        ]

    def rank(at: int) -> tuple[int, int]:
        _, role, states = shown[at]
        if role == _TOOLTIP:
            group = 4
        elif role in _POPUP_ROLES:
            group = 0
        elif roles.has(states, State.MODAL):
            group = 1
        else:
            group = 2
        return group, -at

    return [shown[at][0] for at in sorted(range(len(shown)), key=rank)]


async def _top_levels(bus: Bus, app: RunningApp) -> list[tuple[Ref, int, int]] | None:
    """``(ref, role, states)`` of the app's top-level objects; None when the app vanished."""
    try:
        (children,) = await bus.call((app.bus_name, app.ref_path), ACCESSIBLE, "GetChildren")
    except Gone:
        return None
    found: list[tuple[Ref, int, int] | None] = [None] * len(children)

    async def one(i: int, ref: Ref) -> None:
        try:
            (role,) = await bus.call(ref, ACCESSIBLE, "GetRole")
            (state,) = await bus.call(ref, ACCESSIBLE, "GetState")
        except Gone:
            return
        found[i] = (ref, int(role), roles.states_from_words(state))

    with one_error():
        async with trio.open_nursery() as nursery:
            for i, child in enumerate(children):
                nursery.start_soon(one, i, (str(child[0]), str(child[1])))
    return [f for f in found if f is not None]


async def window_of(bus: Bus, app: RunningApp) -> Ref | None:
    """The app's window to operate on, or None when it has none (or it vanished)."""
    found = await _top_levels(bus, app)
    return None if found is None else pick_window(found)


async def surfaces_of(bus: Bus, app: RunningApp) -> list[Ref]:
    """The app's windows and popups on screen, the one the person deals with first (see
    :func:`order_surfaces`); its :func:`window_of` when none counts as on screen."""
    found = await _top_levels(bus, app)
    if not found:
        return []
    ordered = order_surfaces(found)
    if ordered:
        return ordered
    fallback = pick_window(found)
    return [fallback] if fallback is not None else []


async def extents(bus: Bus, ref: Ref, coords: int = SCREEN_COORDS) -> tuple[int, int, int, int]:
    """``(x, y, width, height)`` of an object; GTK 4 answers window-relative either way."""
    (box,) = await bus.call(ref, COMPONENT, "GetExtents", "u", (coords,))
    x, y, w, h = (int(v) for v in box)
    return x, y, w, h


async def window_sizes(bus: Bus, bus_name: str) -> set[tuple[int, int]]:
    """The sizes of the windows and popups the app on ``bus_name`` shows (none when it is
    gone or does not answer in time: it then shows nothing that keys could reach)."""
    root = RunningApp(bus_name, "", None, "", "/org/a11y/atspi/accessible/root")
    try:
        found = await _top_levels(bus, root) or []
    except BusError:
        return set()
    sizes: set[tuple[int, int]] = set()
    for ref, _role, states in found:
        if not roles.has(states, State.SHOWING):
            continue
        try:
            box = await extents(bus, ref, WINDOW_COORDS)
        except BusError:
            continue
        sizes.add((box[2], box[3]))
    return sizes


async def sizes_elsewhere(bus: Bus, mine: str) -> frozenset[tuple[int, int]]:
    """The sizes of the windows apps other than ``mine`` show (one that does not answer
    within a second shows none: it could not take keys either)."""
    others = sorted(await registered(bus) - {mine})
    found: set[tuple[int, int]] = set()

    async def one(name: str) -> None:
        with trio.move_on_after(1.0):
            found.update(await window_sizes(bus, name))

    async with trio.open_nursery() as nursery:
        for name in others:
            nursery.start_soon(one, name)
    return frozenset(found)


def launch(reaper: Reaper, argv: Sequence[str], env: Mapping[str, str]) -> int:
    """Start ``argv`` (an entry's command line) detached from us, as a child that ``reaper``
    collects when it ends; returns its pid. The switches that keep a toolkit's
    accessibility off are not passed on."""
    child_env = {k: v for k, v in env.items() if k not in ("NO_AT_BRIDGE", "GTK_A11Y")}
    return reaper.spawn(argv, child_env, env.get("HOME") or os.getcwd())


#: The variables that say which desktop a process belongs to.
DESKTOP_VARS: Final = ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")


def _display(value: str) -> str:
    """``:99.0`` and ``:99`` name the same X display (the screen number does not matter)."""
    host, sep, rest = value.rpartition(":")
    if not sep:
        return value
    number = rest.partition(".")[0]
    return f"{host}:{number}"


def _bus(value: str) -> frozenset[str]:
    """A D-Bus address list without the server ``guid`` (one bus, listed with or without it)."""
    out = set()
    for address in value.split(";"):
        transport, _, keys = address.partition(":")
        kept = sorted(k for k in keys.split(",") if k and not k.startswith("guid="))
        if transport:
            out.add(f"{transport}:{','.join(kept)}")
    return frozenset(out)


def same_desktop(theirs: Mapping[str, str], ours: Mapping[str, str]) -> bool:
    """Does a process with environment ``theirs`` live on the desktop described by ``ours``?

    Pure. The X display, the Wayland display and the session bus must all be the same (unset
    on both sides counts as the same). A program on another Xvfb or another session bus is on
    another desktop even when it is the very same executable.
    """
    return (
        _display(theirs.get("DISPLAY", "")) == _display(ours.get("DISPLAY", ""))
        and theirs.get("WAYLAND_DISPLAY", "") == ours.get("WAYLAND_DISPLAY", "")
        and _bus(theirs.get("DBUS_SESSION_BUS_ADDRESS", ""))
        == _bus(ours.get("DBUS_SESSION_BUS_ADDRESS", ""))
    )


def environ_of(path: str) -> dict[str, str]:
    """The desktop variables of ``/proc/PID/environ`` (what the process was started with).

    Raises OSError when the process is gone or not ours to read.
    """
    with open(path, "rb") as f:
        raw = f.read()
    out: dict[str, str] = {}
    for item in raw.split(b"\0"):
        key, sep, value = item.partition(b"=")
        name = key.decode("utf-8", "replace")
        if sep and name in DESKTOP_VARS:
            out[name] = value.decode("utf-8", "replace")
    return out


def program_path(entry: DesktopApp, env: Mapping[str, str]) -> str:
    """The real path of the program ``entry`` starts, or ``""`` when it is not found."""
    program = shutil.which(entry.argv[0], path=env.get("PATH")) if entry.argv else None
    return os.path.realpath(program) if program else ""


def instance_ages(
    entry: DesktopApp, env: Mapping[str, str], proc: str = "/proc"
) -> dict[int, float]:
    """The processes of ``entry``'s program running as us on this desktop, with their ages in
    seconds (pid -> age).

    A second launch of a single-instance app opens another, empty window in the first one's
    process (or, for LibreOffice, one more "Untitled" document): window and screenshot would
    then disagree about which one is operated. A launcher script counts by the binary it
    starts (:func:`~.programs.runs_program`). The same program on another display or session
    bus does not count: its window never shows up on our accessibility bus.
    """
    wanted = program_path(entry, env)
    if not wanted:
        return {}
    uid = os.getuid()
    now = _uptime(proc)
    found: dict[int, float] = {}
    for pid in os.listdir(proc):
        if not pid.isdigit():
            continue
        try:
            if os.stat(f"{proc}/{pid}").st_uid != uid:
                continue
            if not runs_program(os.path.realpath(f"{proc}/{pid}/exe"), wanted):
                continue
            if same_desktop(environ_of(f"{proc}/{pid}/environ"), env):
                found[int(pid)] = max(0.0, now - _started(f"{proc}/{pid}/stat"))
        except (OSError, ValueError, IndexError):  # gone, or not ours to look at
            continue
    return found


_TICKS: Final = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _uptime(proc: str) -> float:
    with open(f"{proc}/uptime", "rb") as f:
        return float(f.read().split()[0])


def _started(stat_path: str) -> float:
    """Seconds after boot at which the process started (``/proc/PID/stat`` field 22)."""
    with open(stat_path, "rb") as f:
        fields = f.read().rsplit(b")", 1)[1].split()
    return int(fields[19]) / _TICKS


async def wait_for_window(
    bus: Bus,
    target: Target,
    env: Mapping[str, str],
    limit: float = LAUNCH_TIMEOUT,
    *,
    gone: Callable[[], bool] = lambda: False,
) -> RunningApp | None:
    """Poll until ``target`` runs with a window, then give its UI a moment to settle; None
    after ``limit`` seconds, or as soon as ``gone()`` says there is nothing left to wait for
    (the process just started has ended and no other runs the program)."""
    assert target.entry is not None
    entries = [target.entry]
    with trio.move_on_after(limit):
        while True:
            current = await catalog(bus, env, entries)
            app = current.running_for(target.entry)
            if app is not None and await window_of(bus, app) is not None:
                await trio.sleep(LAUNCH_SETTLE)
                return app
            if gone():
                return None
            await trio.sleep(_POLL)
    return None
