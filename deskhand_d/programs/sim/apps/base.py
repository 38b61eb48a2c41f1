"""What every simulated app provides, and the window chrome they share.

What this owns: the :class:`SimApp` interface the engine drives (build the current window,
then apply one action at a time by element *key*), :class:`ActionError` for failures whose text
is one of Sky's, and helpers for the parts of a macOS window every app has (traffic-light
buttons, the menu bar, zh-Hans menu titles).
"""

from __future__ import annotations

import abc
from typing import ClassVar

from ...core import texts
from ..ax import Element, Paint, Window
from ..keys import Chord


class ActionError(Exception):
    """An action failed; ``str(exc)`` is the exact text the tool result carries."""


_ZH_MENU = {
    "File": "文件",
    "Edit": "编辑",
    "View": "显示",
    "Window": "窗口",
    "Help": "帮助",
    "Format": "格式",
}


def menu_title(title: str, locale: str, zh_app_name: str | None = None) -> str:
    if locale != "zh-Hans":
        return title
    return _ZH_MENU.get(title, zh_app_name or title)


def traffic_lights(
    prefix: str, *, zoom_role: str = "zoom button", zoom_disabled: bool = False, y: int = 12
) -> list[Element]:
    """Close, zoom/full-screen and minimize buttons, in the order the captures list them."""
    close = Element(
        f"{prefix}.close", role="close button", frame=(12, y, 12, 12), paint=Paint(fill="close")
    )
    full_screen = zoom_role == "full screen button"
    zoom = Element(
        f"{prefix}.zoom",
        role=zoom_role,
        flags=("disabled",) if zoom_disabled else (),
        help="this button also has an action to zoom the window" if full_screen else None,
        actions=("zoom the window",) if full_screen else (),
        frame=(52, y, 12, 12),
        paint=Paint(fill="disabled" if zoom_disabled else "zoom"),
    )
    minimize = Element(
        f"{prefix}.minimize",
        role="minimize button",
        frame=(32, y, 12, 12),
        paint=Paint(fill="minimize"),
    )
    return [close, zoom, minimize]


class SimApp(abc.ABC):
    """One simulated application: its identity, its model state, and its window."""

    name: ClassVar[str]
    zh_name: ClassVar[str]
    bundle_id: ClassVar[str]
    path: ClassVar[str]
    width: ClassVar[int]
    height: ClassVar[int]
    background: ClassVar[str] = "window"

    def __init__(self, pid: int, locale: str) -> None:
        self.pid = pid
        self.locale = locale

    @property
    def display_name(self) -> str:
        return self.zh_name if self.locale == "zh-Hans" else self.name

    @abc.abstractmethod
    def window(self) -> Window:
        """A freshly built key window (and menu bar) for the current state."""

    # --- actions, by element key; the default for each is "accepted, nothing happens" --------

    def press(self, key: str, count: int, button: str) -> None:
        """AXPress (or a click) on the element with ``key``."""

    def click_point(
        self, target: Element | None, x: float, y: float, count: int, button: str
    ) -> None:
        """A click at screenshot pixels; ``target`` is the topmost element drawn there."""
        if target is not None:
            self.press(target.key, count, button)

    def drag(self, x0: float, y0: float, x1: float, y1: float) -> None:
        """A left-button drag between two screenshot points."""

    def set_value(self, key: str, value: str) -> None:
        """Assign ``value`` to a settable element (the engine checked it is settable)."""
        raise ActionError(texts.NOT_SETTABLE)

    def select_text(self, key: str, text: str, prefix: str, suffix: str, selection: str) -> None:
        raise ActionError(texts.NO_TEXT_SELECTION)

    def scroll(self, key: str, direction: str, pages: float) -> None:
        """Scroll the element with ``key`` (direction already validated)."""

    def secondary_action(self, key: str, action: str) -> None:
        """Run one of the element's listed secondary actions (already validated)."""

    def key(self, chord: Chord) -> None:
        """One ``press_key`` chord."""

    def type_text(self, text: str) -> None:
        """Literal text, one character at a time (characters already validated)."""

    def menu_bar(self, titles: list[tuple[str, str | None]], label: str = "") -> Element:
        """The top-level ``menu bar`` root; ``titles`` pairs a menu title with an optional ID."""
        children = [
            Element(
                f"menu.{title}",
                role="",
                label=menu_title(title, self.locale, self.zh_name if title == self.name else None),
                ident=ident,
            )
            for title, ident in titles
        ]
        return Element("menu", role="menu bar", label=label, children=children)
