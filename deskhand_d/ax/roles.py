"""Sky's element roles: which words start an element line's role, and what they mean. Pure.

What this owns: the role tables (multi-word roles, zh-Hans role descriptions mapped to English,
aliases) and :func:`role_of`, which splits the text after an element's index into the role as
written, the role Deskhand reasons about, and the rest of the line. :mod:`.grammar` parses the
rest (flags, attributes, secondary actions).

Roles: the text starts with a known multi-word role when it equals one or continues with a
space or a newline after it (longest first); otherwise its first word (up to a space or a
newline) is the role, unknown words (``outline``, ``AXWebArea``, a localised word with no table
entry) included. Sky leaves the role out when the role description is empty, so the role is
empty (``""``) when the text starts with flags ``(…)`` or an attribute key (``Description: …``)
and when its first word ends with a comma (a title followed by attributes).

Speed: a first word that is a common role and starts no multi-word role, or whose second word
starts none of the multi-word roles it could begin, is settled by dictionary look-ups alone;
:func:`word_role` says when the first word alone settles the role.
"""

from __future__ import annotations

from typing import Final

# The attribute keys Sky prints after a title; "Key:" as a first word means "no role".
ATTRIBUTE_KEYS: Final = (
    "Description",
    "Value",
    "Details",
    "Help",
    "ID",
    "URL",
    "Placeholder",
    "Secondary Actions",
)
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
    # written by Deskhand's AT-SPI backend (Linux)
    "progress indicator",
    "level indicator",
    "menu bar item",
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
# First word of a multi-word role -> the second words that can continue it.
_SECOND: Final = {
    word: frozenset(role.split(" ")[1] for role in roles) for word, roles in _MULTI.items()
}
# Common one-word roles that start no multi-word role -> their meaning: the first word is the
# role, no checks.
PLAIN_ROLES: Final[dict[str, str]] = {
    role: ROLE_ALIASES.get(role, role)
    for role in (
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
    if role not in _MULTI
}


# First word of a multi-word role -> what follows it in each of them (" field", ...).
CONTINUATIONS: Final = {
    word: tuple(role[len(word) :] for role in roles) for word, roles in _MULTI.items()
}


def word_role(word: str) -> str | None:
    """The role of any text that starts with ``word`` (up to a space or a newline), when that
    word settles it whatever follows; None when :func:`role_of` must read the text (a word that
    starts a multi-word role: see :data:`CONTINUATIONS`)."""
    if (
        not word
        or word[-1].isspace()
        or word[0].isspace()
        or word == "Secondary"
        or word in CONTINUATIONS
    ):
        return None
    return role_of(word)[0]


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


def role_of(rest: str) -> tuple[str, str, str]:
    """``rest`` (already stripped) -> (role, role as written, the text after it, stripped)."""
    first, _, after = rest.partition(" ")
    role = PLAIN_ROLES.get(first)
    if role is not None:
        return role, first, after.lstrip()
    seconds = _SECOND.get(first)
    if seconds is not None:
        second = after.partition(" ")[0]
        if second not in seconds and "\n" not in second:
            return ROLE_ALIASES.get(first, first), first, after.lstrip()
    source = source_role(rest)
    if not source:
        return "", "", rest
    return ROLE_ALIASES.get(source, source), source, rest[len(source) :].lstrip()
