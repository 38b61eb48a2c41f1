"""Sky's accessibility-text grammar, one line (or one element) at a time. Pure.

What this owns: the role tables (multi-word roles, zh-Hans role descriptions mapped to English,
aliases), the attribute keys, :func:`split_rest` (the text after an element's index -> role,
label, states, attributes, secondary actions), and the line shapes :mod:`.ax` needs: which
lines look like elements, which end a tree, the focus footer, the ``App=`` and ``Window:``
lines, and depth levels for space-indented trees. :mod:`.ax` puts lines together into a tree
(contiguity, continuation lines, header checks).

Roles: the rest of a line starts with a known multi-word role when it equals one or continues
with a space after it (longest first); otherwise the first word is the role, unknown words
(``outline``, ``AXWebArea``, a localised word with no table entry) included. Sky leaves the
role out when the role description is empty, so the role is empty (``""``) when the rest
starts with flags ``(…)`` or an attribute key (``Description: …``), when its first word ends
with a comma (a title followed by attributes), and for every child of a ``menu bar`` (Sky
prints menu titles bare: ``32 Calculator``).

Label: the rest minus the role, trimmed, minus the ``Secondary Actions`` clause (wherever it
sits: Sky sometimes prints ``URL`` after it). Flags, ``Description:``, ``Value:`` and the other
attributes stay in the label as written; they are also parsed into ``attributes``.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Final

SECONDARY_ACTIONS: Final = "Secondary Actions"
ATTRIBUTE_KEYS: Final = (
    "Description",
    "Value",
    "Details",
    "Help",
    "ID",
    "URL",
    "Placeholder",
    SECONDARY_ACTIONS,
)
_KEYS: Final = frozenset(ATTRIBUTE_KEYS)
_KEY_WORDS: Final = frozenset(f"{key}:" for key in ATTRIBUTE_KEYS if " " not in key)
_ROLE_END: Final = ("", " ", "\n")

# Known roles that are more than one word (recognised longest first). Single-word roles need no
# entry: the first word is the role anyway.
MULTI_WORD_ROLES: Final = (
    # from the original package
    "standard window",
    "split group",
    "scroll area",
    "HTML content",
    "content list",
    "menu bar main-menu-bar",
    "menu bar",
    "radio button",
    "close button",
    "minimize button",
    "full screen button",
    "search text field",
    "search field",
    "text field",
    "text area",
    "pop up button",
    "toggle button",
    "combo box",
    "menu item",
    "date time area",
    # seen in Sky captures
    "zoom button",
    "minimise button",
    "text entry area",
    "scroll bar",
    "value indicator",
    "increment arrow button",
    "decrement arrow button",
    "increment page button",
    "decrement page button",
    "disclosure triangle",
    "tab group",
    "menu button",
    "HTML 内容",
)

# Source role -> the role Deskhand reasons about. Unknown roles pass through unchanged.
ROLE_ALIASES: Final[dict[str, str]] = {
    "search text field": "search field",
    "menu bar main-menu-bar": "menu bar",
    "minimise button": "minimize button",
    # zh-Hans: the original package's table
    "标准窗口": "standard window",
    "分离组": "split group",
    "滚动区": "scroll area",
    "文本": "text",
    "按钮": "button",
    "文本栏": "text field",
    "文本区域": "text area",
    "搜索栏": "search field",
    "复选框": "checkbox",
    "单选按钮": "radio button",
    # zh-Hans: documented with the Sky grammar and used by the simulator's zh-Hans locale
    "文本输入区": "text entry area",
    "关闭按钮": "close button",
    "组合框": "combo box",
    "HTML 内容": "HTML content",
    "容器": "container",
    "工具栏": "toolbar",
    "缩放按钮": "zoom button",
    "最小化按钮": "minimize button",
    "全屏幕按钮": "full screen button",
    "网格": "grid",
    "列表": "list",
    "图像": "image",
    "滚动条": "scroll bar",
    # zh-Hans: seen in a Safari capture (fixtures/ax/safari-zh-isse-zhengzixuan-1.txt)
    "HTML内容": "HTML content",
    "链接": "link",
    "开关按钮": "toggle button",
    "弹出式按钮": "pop up button",
    "标题": "heading",
    "标签": "tab",
    "标签组": "tab group",
    "内容列表": "content list",
    "单元格": "cell",
    "表格": "table",
    "菜单按钮": "menu button",
}


def _by_first_word() -> dict[str, tuple[str, ...]]:
    table: dict[str, list[str]] = {}
    for role in MULTI_WORD_ROLES:
        table.setdefault(role.split(" ", 1)[0], []).append(role)
    return {word: tuple(sorted(roles, key=len, reverse=True)) for word, roles in table.items()}


_MULTI: Final = _by_first_word()
# Common one-word roles that start no multi-word role: the first word is the role, no checks.
_PLAIN_ROLES: Final = (
    frozenset(
        (
            "button",
            "link",
            "container",
            "image",
            "row",
            "heading",
            "list",
            "cell",
            "grid",
            "toolbar",
            "outline",
            "Event",
            "collection",
            "section",
            "slider",
            "splitter",
            "unknown",
            "tab",
            "checkbox",
            "stepper",
            "table",
            "column",
            "group",
            "switch",
            *(role for role in ROLE_ALIASES if " " not in role),
        )
    )
    - frozenset(_MULTI)
    - frozenset(("text",))
)

# ", " that starts another attribute: a known key, a colon, then whitespace or the end.
_ATTRIBUTE_BREAK: Final = re.compile(
    r", (?=(?:Description|Value|Details|Help|ID|URL|Placeholder|Secondary Actions):(?:\s|$))"
)
_FOCUS: Final = re.compile(r"focused UI element is\s+([0-9]+)\b", re.IGNORECASE)
_APP_STATE_CLOSE: Final = "</app_state>"
MAX_INDEX: Final = 2**53 - 1
_IDENTITY: Final = re.compile(r"App=(.+?) \((?:bundleID (\S+), )?pid ([0-9]{1,18})\)\s*$")

# (role, source_role, label, states, attributes, secondary_actions)
Parts = tuple[str, str, str, tuple[str, ...], dict[str, str], tuple[str, ...]]


def source_role(rest: str) -> str:
    """The role as written at the start of ``rest`` (already stripped); ``""`` when omitted."""
    first = rest.partition(" ")[0]
    if "\n" in first:
        first = first.partition("\n")[0]
    if not first or first[0] == "(" or first[-1] == ",":
        return ""
    if first[-1] == ":":
        if first in _KEY_WORDS:
            return ""
    elif first == "Secondary" and rest.startswith("Secondary Actions:"):
        return ""
    for role in _MULTI.get(first, ()):
        if rest.startswith(role) and rest[len(role) : len(role) + 1] in _ROLE_END:
            return role
    return first


def _states(flags: str) -> tuple[str, ...]:
    if "," not in flags:
        word = flags.strip().lower()
        return (word,) if word else ()
    return tuple(w for w in map(str.strip, flags.lower().split(",")) if w)


def split_rest(rest: str, in_menu_bar: bool = False) -> Parts:
    """Parse what follows an element's index (continuation lines joined with ``\\n``)."""
    rest = rest.strip()
    if in_menu_bar:
        source, label = "", rest
    else:
        source = rest.partition(" ")[0]
        if source not in _PLAIN_ROLES:
            source = source_role(rest)
        label = rest[len(source) :].lstrip() if source else rest
    states: tuple[str, ...] = ()
    flags_end = 0
    if label[:1] == "(":
        flags_end = label.find(")") + 1
        if flags_end:
            states = _states(label[1 : flags_end - 1])
    role = ROLE_ALIASES.get(source, source)
    if ":" in label:
        label, attributes, actions = _attributes(label, flags_end)
        return role, source, label, states, attributes, actions
    return role, source, label, states, {}, ()


def _attributes(label: str, flags_end: int) -> tuple[str, dict[str, str], tuple[str, ...]]:
    """Split ``label`` (after its flags) at attribute keys; drop the Secondary Actions clause.

    A key that repeats can only be text inside the value before it, so it is folded back there.
    """
    body = label[flags_end:].lstrip() if flags_end else label
    segments = _ATTRIBUTE_BREAK.split(body)
    head = segments[0]
    key = head.partition(":")[0]
    after = head[len(key) + 1 : len(key) + 2]
    if key in _KEYS and head[len(key) : len(key) + 1] == ":" and (not after or after.isspace()):
        first = 0
    elif len(segments) == 1:
        return label, {}, ()
    else:
        first = 1  # segments[0] is the title
    attributes: dict[str, str] = {}
    actions: tuple[str, ...] = ()
    cut: list[int] = []  # segments that make up the Secondary Actions clause
    previous = ""
    for at in range(first, len(segments)):
        segment = segments[at]
        key = segment.partition(":")[0]
        if key == SECONDARY_ACTIONS and not cut:
            value = segment[len(key) + 2 :]
            actions = tuple(value.split(", ")) if value else ()
            cut.append(at)
        elif key in attributes or key == SECONDARY_ACTIONS:
            if previous == SECONDARY_ACTIONS:
                actions += tuple(segment.split(", "))
                cut.append(at)
            else:
                attributes[previous] += ", " + segment
            continue
        else:
            attributes[key] = segment[len(key) + 2 :]
        previous = key
    if cut:
        kept = ", ".join([text for at, text in enumerate(segments) if at not in cut])
        label = (label[: len(label) - len(body)] + kept).strip()
    return label, attributes, actions


def identity(line: str) -> tuple[str, int | None] | None:
    """``App=…`` in either form -> (bundle id, or the path/name when no bundle id is given; pid)."""
    m = _IDENTITY.match(line)
    if m is None:
        value = line[4:].strip()
        return (value, None) if value else None
    return (m.group(2) or m.group(1)), int(m.group(3))


def window_title(line: str) -> str:
    """``Window: "<title>", App: <name>.`` (or a bare ``Window: <title>``) -> the title."""
    rest = line[len("Window:") :].strip()
    if rest[:1] == '"':
        end = rest.rfind('", App: ')
        if end > 0:
            return rest[1:end]
        return rest[1:-1] if len(rest) > 1 and rest[-1] == '"' else rest[1:]
    end = rest.rfind(", App: ")
    return rest[:end] if end >= 0 and rest.endswith(".") else rest


def index_of(line: str) -> int | None:
    """The number of an element-shaped line (``<spaces/tabs><digits>[ …]``), else None.

    A number too large to be an index comes back as ``MAX_INDEX + 1``.
    """
    num = line.lstrip(" \t").partition(" ")[0]
    if num.isdigit() and num.isascii():
        return MAX_INDEX + 1 if len(num) > 16 else int(num)
    return None


def ends_tree(line: str, after_blank: bool) -> bool:
    """A line (not shaped like an element) after which no element follows: the focus footer,
    ``</app_state>``, or a ``Selected text:`` tail after a blank line."""
    return (
        line[:25].lower() == "the focused ui element is"
        or line.startswith(_APP_STATE_CLOSE)
        or (after_blank and line.startswith("Selected text:"))
    )


def focus_index(line: str) -> int | None:
    """The index named by a focus footer (with or without its final period)."""
    match = _FOCUS.search(line)
    return int(match.group(1)) if match and len(match.group(1)) <= 16 else None


def later_positions(lines: Sequence[str], start: int) -> dict[int, int]:
    """index -> the last line (from ``start`` to the end of the tree) shaped like that element."""
    seen: dict[int, int] = {}
    blank = False
    for at in range(start, len(lines)):
        line = lines[at]
        index = index_of(line)
        if index is not None:
            seen[index] = at
        elif ends_tree(line, blank):
            break
        blank = not line
    return seen


def levels(raws: Sequence[str]) -> list[int]:
    """Depths from the indentation of element lines indented with spaces (or tabs and spaces).

    One level per tab, or per indentation unit (the smallest run of spaces in use); the
    shallowest element gets depth 0.
    """
    indents = [raw[: len(raw) - len(raw.lstrip(" \t"))] for raw in raws]
    unit = min((i.count(" ") for i in indents if " " in i), default=1)
    found = [i.count("\t") + i.count(" ") // unit for i in indents]
    low = min(found, default=0)
    return [level - low for level in found]
