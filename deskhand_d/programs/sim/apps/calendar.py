"""Calendar: a month view with 42 day cells, all-day events and month navigation.

What this owns: the calendar model (a deterministic "today", the month on screen, the selected
day, all-day events including computed US holidays), and the window in the exact shape of the
v26.9 capture: day cells as ``list`` elements labelled ``<Weekday>, <Month> <d>`` (``Today, ``
for today), each event a child ``Event`` with its ``image`` child, the previous/Today/next
buttons and the ``view-date-title`` text. Moving between months changes how many events sit
before each element, so indices shift from month to month.
"""

from __future__ import annotations

import calendar as _cal
from dataclasses import dataclass
from datetime import date, datetime, time, timedelta
from typing import ClassVar

from ..ax import Element, Paint, Window
from ..keys import Chord
from .base import SimApp, traffic_lights

_GRID_TOP = 124
_CELL_W = 126
_CELL_H = 107
_EVENT_H = 16
_TOOLBAR_ACTIONS = ("Move previous", "Move next", "Remove from toolbar")


@dataclass(slots=True)
class Event:
    day: date
    title: str
    calendar: str
    holiday: bool = False


def _nth_weekday(year: int, month: int, weekday: int, n: int) -> date:
    """The n-th given weekday of a month (n = -1 for the last one)."""
    days = [d for d in _cal.Calendar().itermonthdates(year, month) if d.month == month]
    matching = [d for d in days if d.weekday() == weekday]
    return matching[n if n < 0 else n - 1]


def us_holidays(year: int) -> list[Event]:
    def h(day: date, title: str) -> Event:
        return Event(day, title, "US Holidays", holiday=True)

    mon, thu = 0, 3
    return [
        h(date(year, 1, 1), "New Year's Day"),
        h(_nth_weekday(year, 1, mon, 3), "Martin Luther King Jr. Day"),
        h(_nth_weekday(year, 2, mon, 3), "Presidents' Day"),
        h(_nth_weekday(year, 5, mon, -1), "Memorial Day"),
        h(date(year, 6, 19), "Juneteenth"),
        h(date(year, 7, 4), "Independence Day"),
        h(_nth_weekday(year, 9, mon, 1), "Labor Day"),
        h(_nth_weekday(year, 10, mon, 2), "Columbus Day"),
        h(date(year, 10, 31), "Halloween"),
        h(date(year, 11, 11), "Veterans Day"),
        h(_nth_weekday(year, 11, thu, 4), "Thanksgiving"),
        h(date(year, 12, 24), "Christmas Eve"),
        h(date(year, 12, 25), "Christmas Day"),
        h(date(year, 12, 31), "New Year's Eve"),
    ]


def _long(d: date) -> str:
    return f"{d:%B} {d.day}, {d.year}"


def _add_months(d: date, months: int) -> date:
    index = d.year * 12 + d.month - 1 + months
    year, month = divmod(index, 12)
    last = _cal.monthrange(year, month + 1)[1]
    return date(year, month + 1, min(d.day, last))


class Calendar(SimApp):
    name: ClassVar[str] = "Calendar"
    zh_name: ClassVar[str] = "日历"
    bundle_id: ClassVar[str] = "com.apple.iCal"
    path: ClassVar[str] = "/System/Applications/Calendar.app"
    width: ClassVar[int] = 886
    height: ClassVar[int] = 768
    background: ClassVar[str] = "window"

    def __init__(
        self,
        pid: int,
        locale: str,
        *,
        today: date,
        now: time,
        events: list[Event],
        holidays: bool,
    ) -> None:
        super().__init__(pid, locale)
        self.today = today
        self.now = now
        self.selected = today
        self.month = today.replace(day=1)  # the month on screen
        self.events = list(events)
        self.holidays = holidays

    def grid_days(self) -> list[date]:
        """42 days from the Sunday on or before the 1st of the shown month."""
        first = self.month
        start = first - timedelta(days=(first.weekday() + 1) % 7)
        return [start + timedelta(days=i) for i in range(42)]

    def events_on(self, day: date) -> list[Event]:
        found = [e for e in self.events if e.day == day]
        if self.holidays:
            found = [e for e in us_holidays(day.year) if e.day == day] + found
        return found

    # --- actions ------------------------------------------------------------------------------

    def _go(self, months: int) -> None:
        self.month = _add_months(self.month, months)
        self.selected = _add_months(self.selected, months)

    def _go_today(self) -> None:
        self.selected = self.today
        self.month = self.today.replace(day=1)

    def press(self, key: str, count: int, button: str) -> None:
        if button != "left":
            return
        if key == "cal.prev":
            self._go(-1)
        elif key == "cal.next":
            self._go(1)
        elif key == "cal.today":
            self._go_today()
        elif key.startswith(("cal.day.", "cal.event.")):
            self.selected = date.fromisoformat(key.split(".")[2])

    def key(self, chord: Chord) -> None:
        if "cmd" in chord.modifiers and chord.name == "Right":
            self._go(1)
        elif "cmd" in chord.modifiers and chord.name == "Left":
            self._go(-1)
        elif "cmd" in chord.modifiers and chord.char in ("t", "T"):
            self._go_today()

    def scroll(self, key: str, direction: str, pages: float) -> None:
        steps = round(pages)
        if direction in ("down", "right"):
            self._go(steps)
        else:
            self._go(-steps)

    def drag(self, x0: float, y0: float, x1: float, y1: float) -> None:
        """Dragging one of the user's events onto another day moves it there."""
        start, end = self._cell_at(x0, y0), self._cell_at(x1, y1)
        if start is None or end is None or start == end:
            return
        row = int((y0 - _GRID_TOP) // _CELL_H)
        slot = int((y0 - (_GRID_TOP + row * _CELL_H + 22)) // (_EVENT_H + 2))
        on_day = self.events_on(start)
        if 0 <= slot < len(on_day) and not on_day[slot].holiday:
            on_day[slot].day = end

    def _cell_at(self, x: float, y: float) -> date | None:
        if not (0 <= x < 7 * _CELL_W and _GRID_TOP <= y < _GRID_TOP + 6 * _CELL_H):
            return None
        col, row = int(x // _CELL_W), int((y - _GRID_TOP) // _CELL_H)
        return self.grid_days()[row * 7 + col]

    # --- window -------------------------------------------------------------------------------

    def _day_cell(self, i: int, day: date) -> Element:
        x, y = (i % 7) * _CELL_W, _GRID_TOP + (i // 7) * _CELL_H
        label = f"{day:%A}, {day:%B} {day.day}"
        if day == self.today:
            label = "Today, " + label
        in_month = (day.year, day.month) == (self.month.year, self.month.month)
        cell = Element(
            f"cal.day.{day.isoformat()}",
            role="list",
            label=label,
            frame=(x + 1, y + 1, _CELL_W - 1, _CELL_H - 1),
            paint=Paint(
                fill="paper" if in_month else "other_month",
                text=str(day.day),
                ink="today" if day == self.today else ("text" if in_month else "text_dim"),
                align="top-right",
            ),
        )
        for n, event in enumerate(self.events_on(day)):
            ey = y + 22 + n * (_EVENT_H + 2)
            visible = ey + _EVENT_H <= y + _CELL_H
            key = f"cal.event.{day.isoformat()}.{n}"
            cell.children.append(
                Element(
                    key,
                    role="Event",
                    description=f"{event.title}. {_long(day)}, All-Day",
                    help=f"This event belongs to calendar “{event.calendar}”.",
                    frame=(x + 4, ey, _CELL_W - 8, _EVENT_H) if visible else None,
                    paint=Paint(
                        fill="holiday" if event.holiday else "event",
                        text=event.title[:14],
                        align="left",
                    ),
                    children=[
                        Element(
                            f"{key}.image",
                            role="image",
                            label="Holiday" if event.holiday else "All Day",
                        )
                    ],
                )
            )
        return cell

    def window(self) -> Window:
        title = self.display_name
        sel = self.selected
        stamp = datetime.combine(sel, self.now)
        hour = stamp.hour % 12 or 12
        value = f"{sel.month}/{sel.day}/{sel.year % 100:02d}, {hour}:{stamp:%M} {stamp:%p}"
        cells = [self._day_cell(i, d) for i, d in enumerate(self.grid_days())]

        def nav(
            key: str, glyphs: str, x: int, width: int, label: str, ident: str | None = None
        ) -> Element:
            return Element(
                key,
                role="button",
                label=label,
                ident=ident,
                frame=(x, 62, width, 24),
                paint=Paint(fill="toolbar_button", text=glyphs),
            )

        area = Element(
            "cal.area",
            role="container",
            description="Month Calendar Area",
            value=value,
            details=f"{sel:%A}, {_long(sel)}",
            ident="active-view",
            frame=(0, 52, self.width, self.height - 52),
            children=[
                Element(
                    "cal.grid",
                    role="grid",
                    children=cells,
                    frame=(0, _GRID_TOP, 7 * _CELL_W, 6 * _CELL_H),
                    paint=Paint(fill="grid_line"),
                ),
                nav("cal.prev", "<", 760, 28, label="previous month"),
                nav("cal.today", "TODAY", 792, 56, label="Today", ident="today-button"),
                nav("cal.next", ">", 852, 28, label="next month"),
                Element(
                    "cal.title",
                    role="text",
                    value=f"{self.month:%B %Y}",
                    ident="view-date-title",
                    frame=(16, 58, 400, 36),
                    paint=Paint(text=f"{self.month:%B %Y}", align="left", scale=4),
                ),
            ],
        )

        def radio(key: str, desc: str, on: bool, ident: str, x: int, w: int = 28) -> Element:
            lettered = desc.upper() if w > 28 else ""
            return Element(
                key,
                role="radio button",
                description=desc,
                value="1" if on else "0",
                ident=ident,
                frame=(x, 14, w, 24),
                paint=Paint(fill="accent" if on else "toolbar_button", text=lettered),
            )

        toolbar = Element(
            "cal.toolbar",
            role="toolbar",
            frame=(0, 0, self.width, 52),
            paint=Paint(fill="titlebar"),
            children=[
                Element(
                    "cal.calendars",
                    role="",
                    description="Calendars",
                    ident="CalendarsControl",
                    children=[
                        radio("cal.calendars-button", "Calendars", False, "calendars-button", 84),
                        radio("cal.inbox-button", "Inbox", False, "inbox-button", 116),
                    ],
                ),
                Element(
                    "cal.add",
                    role="button",
                    description="Add Event",
                    actions=_TOOLBAR_ACTIONS,
                    frame=(156, 14, 28, 24),
                    paint=Paint(fill="toolbar_button", text="+"),
                ),
                Element(
                    "cal.status",
                    role="button",
                    description="Status Indicator",
                    actions=_TOOLBAR_ACTIONS,
                    frame=(190, 14, 28, 24),
                    paint=Paint(fill="toolbar_button"),
                ),
                Element(
                    "cal.views",
                    role="",
                    description="View",
                    ident="views-switcher",
                    children=[
                        radio(
                            f"cal.view.{v}",
                            v,
                            v == "Month",
                            f"{v.lower()}-button",
                            300 + 62 * i,
                            58,
                        )
                        for i, v in enumerate(("Day", "Week", "Month", "Year"))
                    ],
                ),
                Element(
                    "cal.search",
                    role="button",
                    label="Search",
                    frame=(840, 14, 28, 24),
                    paint=Paint(fill="toolbar_button"),
                ),
            ],
        )
        root = Element(
            "cal.window",
            role="standard window",
            label=title,
            ident="CALMainWindow",
            actions=("Raise",),
            frame=(0, 0, self.width, self.height),
            paint=Paint(fill="window"),
            children=[
                Element("cal.split", role="split group", children=[area]),
                toolbar,
                *traffic_lights("cal", zoom_role="full screen button", y=20),
            ],
        )
        menu = self.menu_bar(
            [
                (self.name, "calendar-menu"),
                ("File", "file-menu"),
                ("Edit", "edit-menu"),
                ("View", "view-menu"),
                ("Window", "window-menu"),
                ("Help", None),
            ],
            label="main-menu-bar",
        )
        return Window(title=title, app_name=title, root=root, menu_bar=menu, focus_key="cal.area")
