"""Which apps exist and which run: desktop entries, accessible applications, ``app`` resolution.

What this owns: scanning the installed ``.desktop`` files (XDG data dirs, first id wins), the
pure parts of matching a running accessible application to its entry (by executable path,
executable name, or the names it registered under), resolving a tool's ``app`` argument, and
the ``list_apps`` text.

``app`` resolves, in this order: a path (a ``.desktop`` file or an executable), a desktop-file
id (``org.gnome.Calculator``, with or without ``.desktop``), a display name from an entry
(``Calculator``, localised ``Name[xx]`` included, hidden entries excluded), an executable name
(``gnome-calculator``), and finally the name a running application registered on the bus.
The desktop-file id plays the part of Sky's bundle id everywhere (``App=`` lines, errors).
"""

from __future__ import annotations

import glob
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from deskhand_d.desktopentry import exec_args, parse_desktop_entry

from .programs import runs_program

_DASH = " \u2014 "


@dataclass(frozen=True, slots=True)
class DesktopApp:
    """One installed application, from its desktop entry."""

    desktop_id: str
    name: str
    path: str
    argv: tuple[str, ...]
    names: frozenset[str]  # every Name / Name[xx], case-folded
    hidden: bool = False

    @property
    def program(self) -> str:
        return os.path.basename(self.argv[0]) if self.argv else ""


@dataclass(frozen=True, slots=True)
class RunningApp:
    """One application registered on the accessibility bus."""

    bus_name: str
    name: str  # what it registered as (often the executable name)
    pid: int | None
    exe: str = ""  # real path of /proc/PID/exe, when readable
    ref_path: str = "/org/a11y/atspi/accessible/root"


@dataclass(frozen=True, slots=True)
class Target:
    """What a tool's ``app`` argument resolved to."""

    bundle_id: str
    name: str
    path: str
    entry: DesktopApp | None = None
    running: RunningApp | None = None

    @property
    def launchable(self) -> bool:
        return self.entry is not None and bool(self.entry.argv)


def data_dirs(env: Mapping[str, str]) -> list[str]:
    home = env.get("HOME") or os.path.expanduser("~")
    data_home = env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
    dirs = (env.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
    return [data_home, *[d for d in dirs if d]]


def entry_from_text(desktop_id: str, path: str, text: str) -> DesktopApp | None:
    """A :class:`DesktopApp` from a desktop file's text; None for non-applications. Pure."""
    entry = parse_desktop_entry(text)
    if entry.get("Type", "Application") != "Application" or "Name" not in entry:
        return None
    args = exec_args(entry.get("Exec", "")) or []
    names = {v.casefold() for k, v in entry.items() if k == "Name" or k.startswith("Name[")}
    hidden = "true" in (entry.get("NoDisplay"), entry.get("Hidden"))
    return DesktopApp(desktop_id, entry["Name"], path, tuple(args), frozenset(names), hidden)


def scan_entries(env: Mapping[str, str]) -> list[DesktopApp]:
    """Installed applications in XDG precedence order (a later duplicate id is shadowed)."""
    out: list[DesktopApp] = []
    seen: set[str] = set()
    for base in data_dirs(env):
        root = os.path.join(base, "applications")
        paths = sorted(glob.glob(f"{glob.escape(root)}/*.desktop")) + sorted(
            glob.glob(f"{glob.escape(root)}/*/*.desktop")
        )
        for path in paths:
            file_id = os.path.relpath(path, root).removesuffix(".desktop").replace("/", "-")
            if file_id in seen:
                continue
            seen.add(file_id)
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    app = entry_from_text(file_id, path, f.read())
            except OSError:
                continue
            if app is not None:
                out.append(app)
    return out


def exe_of(pid: int | None, proc: str = "/proc") -> str:
    if pid is None:
        return ""
    try:
        return os.path.realpath(os.readlink(f"{proc}/{pid}/exe"))
    except OSError:
        return ""


def _program_path(entry: DesktopApp, path_env: str) -> str:
    if not entry.argv:
        return ""
    program = entry.argv[0]
    if not os.path.isabs(program):
        for d in path_env.split(":"):
            candidate = os.path.join(d, program)
            if d and os.path.isfile(candidate):
                program = candidate
                break
    return os.path.realpath(program) if os.path.isabs(program) else ""


def matches(entry: DesktopApp, app: RunningApp, *, program_path: str = "") -> bool:
    """Whether the running application ``app`` is an instance of ``entry``: its executable is
    the entry's program (or the binary a launcher script starts, see :mod:`.programs`), or it
    registered under one of the entry's names. Reads a launcher's first bytes at most."""
    if runs_program(app.exe, program_path):
        return True
    registered = app.name.casefold()
    if not registered:
        return False
    return registered in {
        entry.program.casefold(),
        entry.desktop_id.casefold(),
        entry.desktop_id.rsplit(".", 1)[-1].casefold(),
    } or (registered in entry.names)


def entry_rank(entry: DesktopApp, app: RunningApp, *, program_path: str = "") -> tuple[int, ...]:
    """How well ``entry`` stands for the running ``app`` among the entries it matches: lower
    is better. Pure.

    Several entries can start one program: the app itself (``mousepad %U``) and a way into
    one of its dialogs (``mousepad --preferences``). The process is the app: an entry that
    starts the program with no options of its own comes first, then one matched by the
    executable's path rather than by name, one whose id or program is the name the process
    registered under, and a shown entry before a hidden one.
    """
    registered = app.name.casefold()
    own_name = registered in {
        entry.program.casefold(),
        entry.desktop_id.casefold(),
        entry.desktop_id.rsplit(".", 1)[-1].casefold(),
    }
    return (
        len(entry.argv) - 1 if entry.argv else 99,
        0 if runs_program(app.exe, program_path) else 1,
        0 if own_name else 1,
        1 if entry.hidden else 0,
    )


class Catalog:
    """Entries and running apps as seen at one moment."""

    def __init__(
        self,
        entries: Sequence[DesktopApp],
        running: Sequence[RunningApp],
        *,
        path_env: str = "/usr/local/bin:/usr/bin:/bin",
    ) -> None:
        self.entries = list(entries)
        self.running = list(running)
        self._programs = {e.desktop_id: _program_path(e, path_env) for e in self.entries}

    def entry_for(self, app: RunningApp) -> DesktopApp | None:
        """The entry that *is* the running process: the best of the entries it matches (see
        :func:`entry_rank`), so Mousepad runs as ``Mousepad``, not as ``Text Editor Settings``
        (``mousepad --preferences``, the same program)."""
        found = [
            e
            for e in self.entries
            if matches(e, app, program_path=self._programs.get(e.desktop_id, ""))
        ]
        if not found:
            return None
        return min(
            found,
            key=lambda e: entry_rank(e, app, program_path=self._programs.get(e.desktop_id, "")),
        )

    def running_for(self, entry: DesktopApp) -> RunningApp | None:
        program = self._programs.get(entry.desktop_id, "")
        return next((a for a in self.running if matches(entry, a, program_path=program)), None)

    def _target(self, entry: DesktopApp) -> Target:
        return Target(entry.desktop_id, entry.name, entry.path, entry, self.running_for(entry))

    def _bare(self, app: RunningApp) -> Target:
        entry = self.entry_for(app)
        if entry is not None:
            return Target(entry.desktop_id, entry.name, entry.path, entry, app)
        ident = os.path.basename(app.exe) if app.exe else app.name
        return Target(ident, app.name or ident, app.exe or ident, None, app)

    def resolve(self, given: str) -> Target | None:
        """The app ``given`` names, or None (see the module docstring for the order)."""
        wanted = given.strip()
        if not wanted:
            return None
        folded = wanted.casefold()
        if os.path.isabs(wanted):
            real = os.path.realpath(wanted)
            for entry in self.entries:
                if real in (os.path.realpath(entry.path), self._programs.get(entry.desktop_id)):
                    return self._target(entry)
            for app in self.running:
                if app.exe and app.exe == real:
                    return self._bare(app)
            return None
        bare_id = folded.removesuffix(".desktop")
        for entry in self.entries:
            if entry.desktop_id.casefold() == bare_id:
                return self._target(entry)
        for entry in self.entries:
            if not entry.hidden and folded in entry.names:
                return self._target(entry)
        for entry in self.entries:
            if entry.program.casefold() == folded:
                return self._target(entry)
        for app in self.running:
            if folded in (app.name.casefold(), os.path.basename(app.exe).casefold()):
                return self._bare(app)
        return None

    def list_text(self) -> str:
        """``list_apps``: running apps first, then installed ones, one line each."""
        lines: list[tuple[int, str, str]] = []
        listed: set[str] = set()
        for app in self.running:
            target = self._bare(app)
            if target.bundle_id in listed:
                continue
            listed.add(target.bundle_id)
            lines.append((0, target.name.casefold(), app_line(target, running=True)))
        for entry in self.entries:
            if entry.hidden or entry.desktop_id in listed:
                continue
            listed.add(entry.desktop_id)
            target = Target(entry.desktop_id, entry.name, entry.path, entry)
            lines.append((1, entry.name.casefold(), app_line(target, running=False)))
        return "\n".join(line for _, _, line in sorted(lines))


def app_line(target: Target, *, running: bool) -> str:
    """``Name — /path — id [running]`` (Sky's v26.9 shape; the flag list only when running)."""
    parts = [target.name]
    if target.path and target.path != target.bundle_id:
        parts.append(target.path)
    parts.append(target.bundle_id)
    line = _DASH.join(parts)
    return line + " [running]" if running else line
