"""The apps "installed" on the simulated Mac: ``list_apps`` lines and ``app`` resolution.

What this owns: the catalogue (the three simulated apps, Finder running with no window, and
iTerm2 as the forbidden app), which of them are running and frontmost, usage data for the
``list_apps`` flags, and resolving an ``app`` argument by display name, bundle id or path
(case-insensitive, trailing ``/`` optional). Display-name lookup skips forbidden apps, so
``iTerm2`` is ``appNotFound`` while ``com.googlecode.iterm2`` is the safety denial.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta

from ..skyserver import texts


@dataclass(slots=True)
class AppEntry:
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


def default_entries() -> list[AppEntry]:
    return [
        AppEntry(
            "Finder",
            "访达",
            "com.apple.finder",
            "/System/Library/CoreServices/Finder.app",
            pid=501,
            running=True,
            frontmost=True,
            last_used_days_ago=0,
            uses=412,
            simulated=False,
        ),
        AppEntry(
            "TextEdit",
            "文本编辑",
            "com.apple.TextEdit",
            "/System/Applications/TextEdit.app",
            pid=2211,
            running=True,
            last_used_days_ago=2,
            uses=37,
        ),
        AppEntry(
            "Calendar",
            "日历",
            "com.apple.iCal",
            "/System/Applications/Calendar.app",
            pid=3327,
            last_used_days_ago=1,
            uses=58,
        ),
        AppEntry(
            "Calculator",
            "计算器",
            "com.apple.calculator",
            "/System/Applications/Calculator.app",
            pid=4410,
            last_used_days_ago=5,
            uses=12,
        ),
        AppEntry(
            "iTerm2",
            "iTerm2",
            "com.googlecode.iterm2",
            "/Applications/iTerm.app",
            pid=5120,
            last_used_days_ago=3,
            uses=140,
            forbidden=True,
            simulated=False,
        ),
    ]


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
