"""TextEdit: one plain-text document with a caret, a selection, scrolling and undo.

What this owns: the document model (text, selection as a half-open range, scroll position,
clipboard, undo/redo), editing by keys and typing, ``select_text`` with prefix/suffix
disambiguation, and the window: ``text entry area (settable) Value: <document>, ID: First Text
View`` under a ``scroll area``, with a ``scroll bar`` element that exists only while the text
overflows the window, so long documents shift the numbering of everything after it. Text is
laid out on a fixed grid (8 x 16 pixels per character) so screenshot points map to offsets.
"""

from __future__ import annotations

import os
from typing import ClassVar

from ...core import texts
from ..ax import Element, Paint, Rect, Window
from ..keys import Chord
from .base import ActionError, SimApp, traffic_lights

CHAR_W = 8
LINE_H = 16
_LEFT = 8
_TOP = 36
_AREA: Rect = (0, 28, 588, 472)
_COLS = (_AREA[2] - 2 * _LEFT) // CHAR_W
_ROWS = (_AREA[3] - 16) // LINE_H


def _float_text(value: float) -> str:
    return str(int(value)) if value == int(value) else repr(value)


class TextEdit(SimApp):
    name: ClassVar[str] = "TextEdit"
    zh_name: ClassVar[str] = "文本编辑"
    bundle_id: ClassVar[str] = "com.apple.TextEdit"
    path: ClassVar[str] = "/System/Applications/TextEdit.app"
    width: ClassVar[int] = 600
    height: ClassVar[int] = 500
    background: ClassVar[str] = "window"

    def __init__(self, pid: int, locale: str, *, text: str, path: str | None) -> None:
        super().__init__(pid, locale)
        self.text = text
        self.anchor = self.caret = len(text)
        self.doc_path = path
        self.top = 0  # first visible visual line
        self.clipboard = ""
        self._undo: list[tuple[str, tuple[int, int]]] = []
        self._redo: list[tuple[str, tuple[int, int]]] = []

    # --- layout -------------------------------------------------------------------------------

    def lines(self) -> list[tuple[int, str]]:
        """Visual lines as (offset of first character, text), hard-wrapped at the grid width."""
        out: list[tuple[int, str]] = []
        offset = 0
        for logical in self.text.split("\n"):
            if not logical:
                out.append((offset, ""))
            for i in range(0, len(logical), _COLS):
                out.append((offset + i, logical[i : i + _COLS]))
            offset += len(logical) + 1
        return out

    def _max_top(self) -> int:
        return max(0, len(self.lines()) - _ROWS)

    def _clamp_top(self) -> None:
        self.top = min(max(0, self.top), self._max_top())

    def _reveal(self, offset: int) -> None:
        row = self._row_of(offset)
        if row < self.top:
            self.top = row
        elif row >= self.top + _ROWS:
            self.top = row - _ROWS + 1
        self._clamp_top()

    def _row_of(self, offset: int) -> int:
        row = 0
        for i, (start, _) in enumerate(self.lines()):
            if start <= offset:
                row = i
        return row

    def offset_at(self, x: float, y: float) -> int:
        lines = self.lines()
        row = int((y - _TOP) // LINE_H) + self.top
        if row < 0:
            return 0
        if row >= len(lines):
            return len(self.text)
        start, line = lines[row]
        col = min(max(0, round((x - _LEFT) / CHAR_W)), len(line))
        return start + col

    # --- editing ------------------------------------------------------------------------------

    @property
    def sel(self) -> tuple[int, int]:
        """The selection as a half-open range (start == end: just a caret)."""
        return min(self.anchor, self.caret), max(self.anchor, self.caret)

    @sel.setter
    def sel(self, span: tuple[int, int]) -> None:
        self.anchor, self.caret = span

    @property
    def selected(self) -> str:
        a, b = self.sel
        return self.text[a:b]

    def _checkpoint(self) -> None:
        self._undo.append((self.text, self.sel))
        self._redo.clear()

    def insert(self, chunk: str) -> None:
        self._checkpoint()
        a, b = self.sel
        self.text = self.text[:a] + chunk + self.text[b:]
        self.sel = (a + len(chunk), a + len(chunk))
        self._reveal(self.sel[1])

    def _delete_range(self, a: int, b: int) -> None:
        if a == b:
            return
        self._checkpoint()
        self.text = self.text[:a] + self.text[b:]
        self.sel = (a, a)
        self._reveal(a)

    def _move(self, offset: int, extend: bool) -> None:
        """Move the caret; with ``extend`` the anchor stays and the selection grows or shrinks."""
        self.caret = min(max(0, offset), len(self.text))
        if not extend:
            self.anchor = self.caret
        self._reveal(self.caret)

    def _vertical(self, delta: int) -> int:
        lines = self.lines()
        caret = self.caret
        row = self._row_of(caret)
        col = caret - lines[row][0]
        target = min(max(0, row + delta), len(lines) - 1)
        start, line = lines[target]
        return start + min(col, len(line))

    def _restore(
        self, src: list[tuple[str, tuple[int, int]]], dst: list[tuple[str, tuple[int, int]]]
    ) -> None:
        if src:
            dst.append((self.text, self.sel))
            self.text, self.sel = src.pop()
            self._clamp_top()

    def key(self, chord: Chord) -> None:
        mods, name = chord.modifiers, chord.name
        shift = "shift" in mods
        cmd = "cmd" in mods
        a, b = self.sel
        if cmd and chord.char is not None:
            letter = chord.char.lower()
            if letter == "a":
                self.sel = (0, len(self.text))
            elif letter == "c":
                self.clipboard = self.selected or self.clipboard
            elif letter == "x" and a != b:
                self.clipboard = self.selected
                self._delete_range(a, b)
            elif letter == "v" and self.clipboard:
                self.insert(self.clipboard)
            elif letter == "z":
                if shift:
                    self._restore(self._redo, self._undo)
                else:
                    self._restore(self._undo, self._redo)
            return
        if chord.char is not None and chord.plain:
            self.insert(chord.char)
        elif name in ("Return", "KP_Enter") and not cmd:
            self.insert("\n")
        elif name == "Tab" and not cmd:
            self.insert("\t")
        elif name == "BackSpace":
            self._delete_range(a if a != b else max(0, a - 1), b)
        elif name == "Delete":
            self._delete_range(a, b if a != b else min(len(self.text), b + 1))
        elif name in ("Left", "Right"):
            forward = name == "Right"
            if cmd:
                start, line = self.lines()[self._row_of(self.caret)]
                self._move(start + len(line) if forward else start, shift)
            elif a != b and not shift:
                self._move(b if forward else a, False)
            else:
                self._move(self.caret + (1 if forward else -1), shift)
        elif name in ("Up", "Down"):
            if cmd:
                self._move(len(self.text) if name == "Down" else 0, shift)
            else:
                self._move(self._vertical(1 if name == "Down" else -1), shift)
        elif name in ("Home", "End"):
            self._move(0 if name == "Home" else len(self.text), shift)
        elif name in ("Page_Up", "Page_Down"):
            self.top += _ROWS if name == "Page_Down" else -_ROWS
            self._clamp_top()

    def type_text(self, text: str) -> None:
        self.insert(text.replace("\r\n", "\n").replace("\r", "\n"))

    # --- engine actions -----------------------------------------------------------------------

    def set_value(self, key: str, value: str) -> None:
        if key == "te.text":
            self._checkpoint()
            self.text = value
            self.sel = (len(value), len(value))
            self._clamp_top()
        elif key == "te.scrollbar":
            try:
                fraction = float(value)
            except ValueError:
                raise ActionError(texts.INVALID_PARAMETER) from None
            self.top = round(min(1.0, max(0.0, fraction)) * self._max_top())
        else:
            raise ActionError(texts.NOT_SETTABLE)

    def select_text(self, key: str, text: str, prefix: str, suffix: str, selection: str) -> None:
        if key != "te.text":
            raise ActionError(texts.NO_TEXT_SELECTION)
        hit = None
        start = self.text.find(text) if text else -1
        while start >= 0:
            end = start + len(text)
            if self.text[:start].endswith(prefix) and self.text[end:].startswith(suffix):
                hit = (start, end)
                break
            start = self.text.find(text, start + 1)
        if hit is None:
            raise ActionError(texts.TEXT_NOT_FOUND)
        if selection == "cursor_before":
            self.sel = (hit[0], hit[0])
        elif selection == "cursor_after":
            self.sel = (hit[1], hit[1])
        else:
            self.sel = hit
        self._reveal(self.sel[0])

    def scroll(self, key: str, direction: str, pages: float) -> None:
        if direction in ("up", "down"):
            step = round(pages * _ROWS)
            self.top += step if direction == "down" else -step
            self._clamp_top()

    def secondary_action(self, key: str, action: str) -> None:
        if action in ("Scroll Up", "Scroll Down"):
            self.scroll(key, "up" if action == "Scroll Up" else "down", 1.0)

    def click_point(
        self, target: Element | None, x: float, y: float, count: int, button: str
    ) -> None:
        if target is None or target.key != "te.text" or button != "left":
            super().click_point(target, x, y, count, button)
            return
        offset = self.offset_at(x, y)
        if count >= 3:
            a = self.text.rfind("\n", 0, offset) + 1
            b = self.text.find("\n", offset)
            self.sel = (a, len(self.text) if b < 0 else b)
        elif count == 2:
            a = b = offset
            while a > 0 and self.text[a - 1].isalnum():
                a -= 1
            while b < len(self.text) and self.text[b].isalnum():
                b += 1
            self.sel = (a, b)
        else:
            self.sel = (offset, offset)

    def drag(self, x0: float, y0: float, x1: float, y1: float) -> None:
        ax, ay, aw, ah = _AREA
        if ax <= x0 < ax + aw and ay <= y0 < ay + ah:
            a, b = self.offset_at(x0, y0), self.offset_at(x1, y1)
            self.sel = (min(a, b), max(a, b))

    # --- window -------------------------------------------------------------------------------

    def _overlays(self) -> tuple[tuple[Rect, Paint], ...]:
        out: list[tuple[Rect, Paint]] = []
        a, b = self.sel
        for row, (start, line) in enumerate(self.lines()[self.top : self.top + _ROWS]):
            y = _TOP + row * LINE_H
            lo, hi = max(a, start), min(b, start + len(line))
            if a != b and lo < hi:
                out.append(
                    (
                        (_LEFT + (lo - start) * CHAR_W, y - 3, (hi - lo) * CHAR_W, LINE_H),
                        Paint(fill="selection"),
                    )
                )
            if line.strip():
                out.append(((_LEFT, y, len(line) * CHAR_W, 10), Paint(text=line, align="left-top")))
            if a == b and start <= a <= start + len(line):
                out.append(
                    ((_LEFT + (a - start) * CHAR_W - 1, y - 3, 2, LINE_H), Paint(fill="caret"))
                )
        return tuple(out)

    def window(self) -> Window:
        title = os.path.basename(self.doc_path) if self.doc_path else "Untitled"
        url = f"file://{self.doc_path}" if self.doc_path else None
        text_area = Element(
            "te.text",
            role="text entry area",
            flags=("settable",),
            value=self.text,
            ident="First Text View",
            frame=_AREA,
            paint=Paint(fill="paper"),
        )
        area_children = [text_area]
        if len(self.lines()) > _ROWS:
            fraction = self.top / self._max_top() if self._max_top() else 0.0
            area_children.append(
                Element(
                    "te.scrollbar",
                    role="scroll bar",
                    flags=("settable", "float"),
                    label=_float_text(fraction),
                    frame=(588, 28, 12, 472),
                    paint=Paint(fill="scrollbar"),
                )
            )
        root = Element(
            "te.window",
            role="standard window",
            label=title,
            url=url,
            actions=("Raise",),
            frame=(0, 0, self.width, self.height),
            paint=Paint(fill="titlebar"),
            children=[
                Element(
                    "te.scroll",
                    role="scroll area",
                    actions=("Scroll Up", "Scroll Down"),
                    frame=(0, 28, 600, 472),
                    children=area_children,
                ),
                *traffic_lights("te", zoom_role="full screen button", y=8),
            ],
        )
        menu = self.menu_bar(
            [
                (self.name, None),
                ("File", None),
                ("Edit", None),
                ("Format", None),
                ("View", None),
                ("Window", None),
                ("Help", None),
            ]
        )
        return Window(
            title=title,
            app_name=self.display_name,
            root=root,
            menu_bar=menu,
            focus_key="te.text",
            selected_text=self.selected or None,
            overlays=self._overlays(),
        )
