"""The apps "installed" on the simulated Mac: ``list_apps`` lines and ``app`` resolution.

What this owns: the catalogue, shipped as data in ``catalog.json`` beside this module (the three
simulated apps, Finder running with no window, and iTerm2 as the forbidden app), which of them
are running and frontmost, usage data for the ``list_apps`` flags, and resolving an ``app``
argument by display name, bundle id or path (case-insensitive, trailing ``/`` optional).
Display-name lookup skips forbidden apps, so ``iTerm2`` is ``appNotFound`` while
``com.googlecode.iterm2`` is the safety denial.

The file is data, not code, because the daemon reads it too: its consent layer gives these apps
identities (``deskhand_d/consent/catalog.py``) without importing the simulator. Format:
``{"version": 1, "apps": [...]}``, each app ``name``, ``zh_name``, ``bundle_id``, ``path``
(without the trailing ``/``) and ``pid``, optionally ``running``, ``frontmost``,
``last_used_days_ago``, ``uses``, ``forbidden`` and ``simulated`` (false for an app without a
working model). Readers other than the simulator use the first four and ignore the rest.
"""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import msgspec

from ..core import texts

CATALOG_FILE = Path(__file__).with_name("catalog.json")


class AppEntry(msgspec.Struct, kw_only=True, forbid_unknown_fields=True):
    name: str
    zh_name: str
    bundle_id: str
    path: str
    pid: int
    running: bool = False
    frontmost: bool = False
    last_used_days_ago: int | None = None
    uses: int | None = None
    forbidden: bool = False
    simulated: bool = True

    def display(self, locale: str) -> str:
        return self.zh_name if locale == "zh-Hans" else self.name


class _Shipped(msgspec.Struct, frozen=True, forbid_unknown_fields=True):
    version: int
    apps: list[AppEntry]


def default_entries() -> list[AppEntry]:
    """A fresh copy of the shipped catalogue (entries change as apps start and come forward)."""
    return msgspec.json.decode(CATALOG_FILE.read_bytes(), type=_Shipped).apps


class Resolution(Exception):
    """``app`` did not resolve to a usable app; ``str(exc)`` is Sky's text for why."""


class Catalog:
    def __init__(self, entries: list[AppEntry], today: date, locale: str) -> None:
        self.entries = entries
        self.today = today
        self.locale = locale

    def resolve(self, given: str) -> AppEntry:
        """The entry ``given`` names; raises :class:`Resolution` with the Sky error text."""
        want = given.strip().casefold()
        want_path = want.rstrip("/")
        for entry in self.entries:
            by_id = want == entry.bundle_id.casefold()
            by_path = bool(want_path) and want_path == entry.path.casefold().rstrip("/")
            if by_id or by_path:
                if entry.forbidden:
                    raise Resolution(texts.forbidden_app(entry.bundle_id))
                return entry
        for entry in self.entries:
            names = {entry.name.casefold(), entry.display(self.locale).casefold()}
            if want in names and not entry.forbidden:
                return entry
        raise Resolution(texts.app_not_found(given))

    def lookup(self, given: str) -> AppEntry | None:
        """Best-effort resolution that never raises (for texts that need an app)."""
        try:
            return self.resolve(given)
        except Resolution:
            return None

    def bring_to_front(self, given: str) -> None:
        """``given`` becomes the person's front app (and runs); every other app loses that.

        Only what ``list_apps`` reports changes: like Sky, the simulator delivers input to the
        app a call names, whichever app is in front."""
        entry = self.lookup(given)
        if entry is None:
            return
        for other in self.entries:
            other.frontmost = other is entry
        entry.running = True

    def list_apps_text(self) -> str:
        """One ``Name — /path/ — bundle [flags]`` line per app, running apps first."""
        ordered = sorted(self.entries, key=lambda e: (not e.running, -(e.uses or 0), e.name))
        lines = []
        for e in ordered:
            flags = []
            if e.frontmost:
                flags.append("frontmost")
            if e.running:
                flags.append("running")
            if e.last_used_days_ago is not None:
                day = self.today - timedelta(days=e.last_used_days_ago)
                flags.append(f"last-used={day.isoformat()}")
            if e.uses is not None:
                flags.append(f"uses={e.uses}")
            tail = f" [{', '.join(flags)}]" if flags else ""
            lines.append(f"{e.display(self.locale)} — {e.path}/ — {e.bundle_id}{tail}")
        return "\n".join(lines)
