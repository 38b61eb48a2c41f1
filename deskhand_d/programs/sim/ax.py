"""The accessibility-tree model of a simulated window, and Sky's text rendering of it.

What this owns: :class:`Element` (one AX node: the line's fields, shared with the AT-SPI backend
as :class:`~deskhand_d.programs.core.axline.AxElement`, plus a key, children, a screen
rectangle and paint hints for the screenshot), role-description localisation, and the renderer
that turns a window into Sky's exact text grammar with fresh depth-first numbering (one element
line's grammar is shared too: :mod:`deskhand_d.programs.core.axline`). Apps rebuild their
element tree on every render, so indices are a pure function of the current state: when an
element appears or disappears, everything after it shifts, exactly the hazard real clients face.

Theory of operation: an element's ``key`` is its stable identity inside one app ("the Seven
button"); the index is its position in one rendering. The engine keeps the last
:class:`Rendering` per app and maps a client's ``element_index`` back to a key through it.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import KW_ONLY, dataclass, field

from ..core import axline, texts

Rect = tuple[int, int, int, int]  # x, y, width, height in screenshot pixels


@dataclass(slots=True)
class Paint:
    """How an element shows up in the screenshot: a palette colour name and optional text."""

    fill: str | None = None
    text: str = ""
    ink: str = "text"
    scale: int = 2
    align: str = "center"  # "center", "right", "left", "left-top", "top-right"


@dataclass(frozen=True, eq=False, slots=True)
class Element(axline.AxElement):
    """One AX node: the fields its line shows (keyword-only, from
    :class:`~deskhand_d.programs.core.axline.AxElement`), its stable ``key``, its children,
    and where and how the screenshot draws it."""

    key: str
    _: KW_ONLY
    children: list[Element] = field(default_factory=list)
    frame: Rect | None = None
    paint: Paint | None = None

    # A node is an identity, not a value (the line's fields would compare equal for two
    # different buttons): keep object equality and hashing rather than the line's.
    __eq__ = object.__eq__
    __hash__ = object.__hash__

    def walk(self) -> Iterator[tuple[int, Element]]:
        """Pre-order (depth, element) pairs, this element at depth 0."""
        stack: list[tuple[int, Element]] = [(0, self)]
        while stack:
            depth, node = stack.pop()
            yield depth, node
            stack.extend((depth + 1, child) for child in reversed(node.children))

    @property
    def settable(self) -> bool:
        return "settable" in self.flags


# Role descriptions as a zh-Hans macOS shows them. Keys, flags and action names stay English.
_ZH_ROLES = {
    "standard window": "标准窗口",
    "split group": "分离组",
    "container": "容器",
    "scroll area": "滚动区",
    "text": "文本",
    "button": "按钮",
    "toolbar": "工具栏",
    "close button": "关闭按钮",
    "zoom button": "缩放按钮",
    "minimize button": "最小化按钮",
    "full screen button": "全屏幕按钮",
    "grid": "网格",
    "list": "列表",
    "image": "图像",
    "radio button": "单选按钮",
    "text entry area": "文本输入区",
    "scroll bar": "滚动条",
    "Event": "Event",
    # Observed staying English in zh captures.
    "menu bar": "menu bar",
}


def localize_role(role: str, locale: str) -> str:
    if locale == "zh-Hans":
        return _ZH_ROLES.get(role, role)
    return role


def element_line(index: int, node: Element, locale: str) -> str:
    """One element line without its indentation, its role localised (the grammar is
    :func:`~deskhand_d.programs.core.axline.element_line`)."""
    return axline.element_line(index, node, role=localize_role(node.role, locale))


@dataclass(frozen=True, slots=True)
class Window:
    """What an app shows for one render: the key window plus the menu bar, and focus."""

    title: str
    app_name: str
    root: Element
    menu_bar: Element
    focus_key: str | None = None
    selected_text: str | None = None
    #: Paint that belongs to no element (text glyphs, a caret); drawn after the tree.
    overlays: tuple[tuple[Rect, Paint], ...] = ()


@dataclass(frozen=True, slots=True)
class Rendering:
    """One numbered rendering: the tree lines and the element behind every index."""

    window: Window
    elements: tuple[Element, ...]
    depths: tuple[int, ...]
    lines: tuple[str, ...]
    focus_index: int | None

    def index_of(self, key: str) -> int | None:
        for i, node in enumerate(self.elements):
            if node.key == key:
                return i
        return None


def render(window: Window, locale: str) -> Rendering:
    """Number the window tree, then the menu bar, depth-first from 0."""
    elements: list[Element] = []
    depths: list[int] = []
    lines: list[str] = []
    for root in (window.root, window.menu_bar):
        for depth, node in root.walk():
            index = len(elements)
            elements.append(node)
            depths.append(depth)
            lines.append("\t" * depth + element_line(index, node, locale))
    focus = None
    if window.focus_key is not None:
        focus = next((i for i, n in enumerate(elements) if n.key == window.focus_key), None)
    return Rendering(window, tuple(elements), tuple(depths), tuple(lines), focus)


def body_text(rendering: Rendering) -> str:
    """``Window:`` line, tree, focus footer and selected-text tail (shared by both layouts)."""
    win = rendering.window
    parts = [texts.window_line(win.title, win.app_name), *rendering.lines]
    text = "\n".join(parts)
    if rendering.focus_index is not None:
        focused = rendering.lines[rendering.focus_index].lstrip("\t")
        text += "\n\n" + texts.FOCUS_PREFIX + focused
    if win.selected_text:
        text += "\n\n" + texts.selected_text_tail(win.selected_text)
    return text


def state_text(rendering: Rendering, identity: str, cua_version: str) -> str:
    """The ``get_app_state`` text: banner, ``<app_state>``, identity line, body, close tag."""
    return "\n".join(
        [
            texts.banner(cua_version),
            texts.APP_STATE_OPEN,
            identity,
            body_text(rendering),
            texts.APP_STATE_CLOSE,
        ]
    )


def action_text(rendering: Rendering, identity: str) -> str:
    """An action result: short identity line and the refreshed body, no banner or tags."""
    return identity + "\n" + body_text(rendering)


def _ranges(indices: list[int]) -> str:
    out: list[str] = []
    start = prev = None
    for i in sorted(indices):
        if start is None:
            start = prev = i
        elif prev is not None and i == prev + 1:
            prev = i
        else:
            out.append(str(start) if start == prev else f"{start}-{prev}")
            start = prev = i
    if start is not None:
        out.append(str(start) if start == prev else f"{start}-{prev}")
    return ", ".join(out)


def diff_text(old: Rendering, new: Rendering, *, cumulative: bool) -> str:
    """A partial update in the shape of Sky's diff renderer (only for clients to reject)."""
    title = new.window.title
    old_lines = {n.key: old.lines[i].lstrip("\t") for i, n in enumerate(old.elements)}
    new_keys = {n.key for n in new.elements}
    removed = [i for i, n in enumerate(old.elements) if n.key not in new_keys]
    header = texts.cumulative_diff_header(title) if cumulative else texts.diff_header(title)
    out = [header]
    if removed:
        out.append(texts.removed_ids(_ranges(removed)))
    for i, node in enumerate(new.elements):
        line = new.lines[i]
        bare = line.lstrip("\t")
        tabs = line[: len(line) - len(bare)]
        if node.key not in old_lines:
            out.append("+" + tabs + bare)
        elif _strip_index(old_lines[node.key]) != _strip_index(bare):
            out.append("~" + tabs + bare)
    return "\n".join(out)


def _strip_index(line: str) -> str:
    return line.split(" ", 1)[1] if " " in line else ""
