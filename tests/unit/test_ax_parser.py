"""The accessibility-tree parser, candidate selection, context and history summaries."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from deskhand_d import ax
from deskhand_d.ax import Element, layout
from deskhand_d.ax.report import report
from deskhand_d.jev import briefing

ROOT = Path(__file__).resolve().parents[2]
AX_DIR = ROOT / "fixtures" / "ax"
CASES = json.loads((ROOT / "fixtures" / "cases.json").read_text(encoding="utf-8"))

# capture -> (elements, focus, app, pid, window)
FULL = {
    "calculator-wangdada-1.txt": (37, None, "", None, "Calculator"),
    "calendar-wangdada-1.txt": (82, 2, "", None, "Calendar"),
    "music-v750-tooldump-1.txt": (123, 1, "com.apple.Music", 40054, "Music"),
    "netease-wangdada-1.txt": (350, None, "", None, "NetEaseMusic"),
    "safari-zh-isse-zhengzixuan-1.txt": (
        215,
        None,
        "",
        None,
        "Python Flask 框架概念解析 - Google Gemini",
    ),
}
NOT_TREES = ("safari-zh-isse-zhengzixuan-2.txt", "linear-dongdong-2.txt")


def capture(name: str) -> str:
    return (AX_DIR / name).read_text(encoding="utf-8")


def one(rest: str) -> Element:
    """The element of a one-element tree whose line is ``0 <rest>``."""
    return ax.parse(f"0 {rest}").elements[0]


def shape(tree: ax.Tree) -> list[tuple[int, int, str, str, str]]:
    return [(e.index, e.depth, e.role, e.source_role, e.label) for e in tree.elements]


# ----- captures ---------------------------------------------------------------------------------


def test_every_capture_is_classified() -> None:
    """Each file in fixtures/ax is either a full tree or a known non-tree below."""
    assert sorted(p.name for p in AX_DIR.glob("*.txt")) == sorted([*FULL, *NOT_TREES])


@pytest.mark.parametrize("name", sorted(FULL))
def test_capture_parses(name: str) -> None:
    """Full captures: contiguous indices from 0, root at depth 0, no depth jumps, header facts."""
    count, focus, app, pid, window = FULL[name]
    tree = ax.parse(capture(name))
    assert [e.index for e in tree.elements] == list(range(count))
    assert (tree.focus, tree.app, tree.pid, tree.window) == (focus, app, pid, window)
    assert tree.elements[0].depth == 0 and tree.elements[0].role == "standard window"
    for before, after in zip(tree.elements, tree.elements[1:], strict=False):
        assert after.depth <= before.depth + 1
    assert any(e.role == "menu bar" and e.depth == 0 for e in tree.elements)
    assert tree.text == capture(name)


@pytest.mark.parametrize("name", sorted(FULL))
def test_crlf_reads_like_lf(name: str) -> None:
    """CRLF line endings give the same elements, focus and header facts."""
    text = capture(name)
    lf, crlf = ax.parse(text), ax.parse(text.replace("\n", "\r\n"))
    assert crlf.elements == lf.elements
    assert (crlf.focus, crlf.app, crlf.pid, crlf.window) == (lf.focus, lf.app, lf.pid, lf.window)


@pytest.mark.parametrize("name", NOT_TREES)
def test_non_tree_captures_are_refused(name: str) -> None:
    """The Safari diff and the no-change sentence are not trees."""
    with pytest.raises(ax.AxParseError, match="observe the app again"):
        ax.parse(capture(name))


def test_calculator_capture_details() -> None:
    """Attributes, empty-role menu items and the invisible mark in the display."""
    tree = ax.parse(capture("calculator-wangdada-1.txt"))
    nine = ax.find(tree, 11)
    assert nine is not None
    assert (nine.role, nine.label) == ("button", "Description: 9, ID: Nine")
    assert nine.attributes == {"Description": "9", "ID": "Nine"}
    mode = ax.find(tree, 27)
    assert mode is not None and mode.attributes["ID"] == "Mode: basic; unitConversion: false"
    assert mode.secondary_actions[-1] == "Remove from toolbar"
    assert mode.label == "Description: Mode, ID: Mode: basic; unitConversion: false"
    zoom = ax.find(tree, 29)
    assert zoom is not None and zoom.states == ("disabled",)
    assert [(e.role, e.label) for e in tree.elements[32:]] == [
        ("", "Calculator"),
        ("", "Edit"),
        ("", "View"),
        ("", "Window"),
        ("", "Help"),
    ]
    assert briefing.visible_texts(tree) == "0"


def test_music_capture_shifted_root_and_multiline_value() -> None:
    """v750: every line is one tab further right; node 85 holds a three-line value."""
    tree = ax.parse(capture("music-v750-tooldump-1.txt"))
    assert tree.elements[0].depth == 0 and tree.elements[113].depth == 0
    assert tree.elements[113].role == "menu bar" and tree.elements[114].depth == 1
    text85 = tree.elements[85]
    assert text85.label == "3 June 2025\n1 song, 6 minutes\n℗ 2025 YRF Music"
    assert text85.raw.count("\n") == 2 and text85.raw.startswith("\t\t\t\t\t\t\t85 text")
    assert tree.elements[86].label == "(settable, float) 0"
    assert tree.elements[5].states == ("selected",)
    assert tree.elements[15].secondary_actions == ("Collapse",)


def test_safari_capture_multiline_values_with_blank_lines() -> None:
    """A code block with blank lines stays in one element; zh-Hans roles are mapped."""
    tree = ax.parse(capture("safari-zh-isse-zhengzixuan-1.txt"))
    code = tree.elements[96]
    assert code.role == "text" and code.source_role == "文本"
    assert code.label.startswith("from flask import Flask\n\n# ")
    assert code.label.endswith('if __name__ == "__main__":\n app.run(debug=True)')
    assert tree.elements[100].label == "(selectable) 特性\nFlask\nDjango"
    prompt = tree.elements[171]
    assert prompt.role == "text entry area" and prompt.attributes["Value"] == ""
    roles = {e.source_role: e.role for e in tree.elements}
    assert roles["标准窗口"] == "standard window"
    assert roles["按钮"] == "button"
    assert roles["开关按钮"] == "toggle button"
    assert roles["HTML内容"] == "HTML content"


def test_netease_capture_blank_line_inside_a_name() -> None:
    """Node 275's name has an empty line in the middle; node 276 still follows."""
    tree = ax.parse(capture("netease-wangdada-1.txt"))
    assert "\n\n" in tree.elements[275].label
    assert tree.elements[276].index == 276


# ----- header, layout and lines ---------------------------------------------------------------

BANNER_TREE = (
    "Computer Use state (CUA App Version: 1001103)\n"
    "<app_state>\n"
    "App=/System/Applications/TextEdit.app/ (bundleID com.apple.TextEdit, pid 42)\n"
    'Window: "TEST.txt", App: 文本编辑.\n'
    "0 标准窗口 TEST.txt, URL: file:///TEST.txt, Secondary Actions: Raise\n"
    "\t1 滚动区 Secondary Actions: Scroll Up, Scroll Down\n"
    "\t\t2 文本输入区 (settable) Value: 第一行\n"
    "第二行, ID: First Text View\n"
    "\t3 按钮 (disabled) 不可用\n"
    "\t4 关闭按钮\n"
    "5 menu bar\n"
    "\t6 文件\n"
    "\n"
    "The focused UI element is 2 文本输入区 (settable) Value: 第一行\n"
    "第二行, ID: First Text View\n"
    "</app_state>"
)


def test_banner_tags_path_identity_and_zh_roles() -> None:
    """The v26.9 layout in zh-Hans: identity, title, roles, a two-line value, the footer."""
    tree = ax.parse(BANNER_TREE)
    assert (tree.app, tree.pid, tree.window, tree.focus) == (
        "com.apple.TextEdit",
        42,
        "TEST.txt",
        2,
    )
    assert shape(tree) == [
        (0, 0, "standard window", "标准窗口", "TEST.txt, URL: file:///TEST.txt"),
        (1, 1, "scroll area", "滚动区", ""),
        (
            2,
            2,
            "text entry area",
            "文本输入区",
            "(settable) Value: 第一行\n第二行, ID: First Text View",
        ),
        (3, 1, "button", "按钮", "(disabled) 不可用"),
        (4, 1, "close button", "关闭按钮", ""),
        (5, 0, "menu bar", "menu bar", ""),
        (6, 1, "", "", "文件"),
    ]
    assert tree.elements[2].attributes == {"Value": "第一行\n第二行", "ID": "First Text View"}
    assert tree.elements[0].secondary_actions == ("Raise",)


@pytest.mark.parametrize(
    ("line", "app", "pid"),
    [
        ("App=com.apple.Music (pid 40054)", "com.apple.Music", 40054),
        (
            "App=/System/Applications/TextEdit.app/ (bundleID com.apple.TextEdit, pid 123)",
            "com.apple.TextEdit",
            123,
        ),
        ("App=Calculator (bundleID com.apple.calculator, pid 7)", "com.apple.calculator", 7),
        ("App=com.example.odd", "com.example.odd", None),
    ],
)
def test_identity_forms(line: str, app: str, pid: int | None) -> None:
    """Both App= forms (and the original package's name form) give the bundle id and pid."""
    tree = ax.parse(f'{line}\nWindow: "W", App: W.\n0 standard window W')
    assert (tree.app, tree.pid, tree.window) == (app, pid, "W")


@pytest.mark.parametrize(
    ("line", "title"),
    [
        ('Window: "Calculator", App: Calculator.', "Calculator"),
        ('Window: "He said "hi", App: x", App: TextEdit.', 'He said "hi", App: x'),
        ("Window: Calendar", "Calendar"),
        ('Window: ""', ""),
    ],
)
def test_window_line(line: str, title: str) -> None:
    """The quoted title (quotes inside allowed) or a bare title."""
    assert ax.parse(f"{line}\n0 standard window x").window == title


def test_no_header_at_all() -> None:
    """A tree without App= or Window: lines still parses."""
    tree = ax.parse("0 standard window A\n\t1 button B")
    assert (tree.app, tree.pid, tree.window, tree.focus) == ("", None, "", None)
    assert len(tree.elements) == 2


def test_app_instructions_block_is_skipped() -> None:
    """Lines inside the app-instructions block never count as elements."""
    text = (
        "Computer Use state (CUA App Version: 750)\n<app_specific_instructions>\n# Notes\n"
        "1 thing to know\n</app_specific_instructions>\n<app_state>\n"
        'App=com.apple.Music (pid 1)\nWindow: "Music", App: Music.\n\t0 standard window Music\n'
        "\t\t1 button Play\n\n</app_state>"
    )
    tree = ax.parse(text)
    assert shape(tree) == [
        (0, 0, "standard window", "standard window", "Music"),
        (1, 1, "button", "button", "Play"),
    ]


def test_shifted_root_layout_matches_root_at_column_zero() -> None:
    """Indenting every element line by one more tab changes nothing."""
    text = capture("calendar-wangdada-1.txt")
    shifted = "\n".join(
        "\t" + line if layout.index_of(line) is not None else line for line in text.split("\n")
    )
    a, b = ax.parse(text), ax.parse(shifted)
    assert [(e.index, e.depth, e.role, e.label) for e in a.elements] == [
        (e.index, e.depth, e.role, e.label) for e in b.elements
    ]


def test_space_indentation_counts_levels() -> None:
    """Two-space (seed) and four-space indentation give one level per unit."""
    for unit in ("  ", "    "):
        text = f"0 window A\n{unit}1 group B\n{unit * 2}2 button C\n{unit}3 button D"
        assert [e.depth for e in ax.parse(text).elements] == [0, 1, 2, 1]


# ----- roles, flags, labels, attributes ---------------------------------------------------------


@pytest.mark.parametrize(
    ("rest", "role", "source", "label"),
    [
        # the original package's label examples
        ("button Mode, Secondary Actions: Delete, Remove", "button", "button", "Mode"),
        ("menu Secondary Actions: Cancel", "menu", "menu", ""),
        (
            "search text field (settable) Apple Music",
            "search field",
            "search text field",
            "(settable) Apple Music",
        ),
        # multi-word roles, longest first
        (
            "standard window Calculator, ID: main",
            "standard window",
            "standard window",
            "Calculator, ID: main",
        ),
        ("menu bar main-menu-bar", "menu bar", "menu bar main-menu-bar", ""),
        ("menu bar", "menu bar", "menu bar", ""),
        ("menu item Copy", "menu item", "menu item", "Copy"),
        ("text field (settable) 搜索", "text field", "text field", "(settable) 搜索"),
        ("text area Value: x", "text area", "text area", "Value: x"),
        ("text entry area (settable)", "text entry area", "text entry area", "(settable)"),
        ("text 0", "text", "text", "0"),
        ("text", "text", "text", ""),
        ("textual thing", "textual", "textual", "thing"),
        ("increment arrow button", "increment arrow button", "increment arrow button", ""),
        ("minimise button", "minimize button", "minimise button", ""),
        ("full screen button Help: zoom", "full screen button", "full screen button", "Help: zoom"),
        ("pop up button Format", "pop up button", "pop up button", "Format"),
        ("HTML content Description: page", "HTML content", "HTML content", "Description: page"),
        # written by the AT-SPI backend on Linux
        ("progress indicator Value: 40", "progress indicator", "progress indicator", "Value: 40"),
        ("level indicator Battery", "level indicator", "level indicator", "Battery"),
        # zh-Hans role descriptions
        ("标准窗口 计算器", "standard window", "标准窗口", "计算器"),
        ("分离组", "split group", "分离组", ""),
        ("滚动区 Secondary Actions: Scroll Up", "scroll area", "滚动区", ""),
        ("文本 0", "text", "文本", "0"),
        ("按钮 Description: 6, ID: Six", "button", "按钮", "Description: 6, ID: Six"),
        ("文本栏 (settable) 名字", "text field", "文本栏", "(settable) 名字"),
        ("文本区域 Value: 你好", "text area", "文本区域", "Value: 你好"),
        ("搜索栏 搜索", "search field", "搜索栏", "搜索"),
        ("复选框 (settable) 记住我", "checkbox", "复选框", "(settable) 记住我"),
        (
            "单选按钮 Description: 月, Value: 1",
            "radio button",
            "单选按钮",
            "Description: 月, Value: 1",
        ),
        ("HTML 内容 Description: 页面", "HTML content", "HTML 内容", "Description: 页面"),
        ("智能词库", "智能词库", "智能词库", ""),
        # unknown and raw AX roles pass through
        (
            "outline Description: Sidebar, ID: outline",
            "outline",
            "outline",
            "Description: Sidebar, ID: outline",
        ),
        ("AXWebArea Example Domain", "AXWebArea", "AXWebArea", "Example Domain"),
        (
            "Event Description: Labor Day. September 7, 2026, All-Day",
            "Event",
            "Event",
            "Description: Labor Day. September 7, 2026, All-Day",
        ),
        # empty role descriptions
        (
            "Description: Calendars, ID: CalendarsControl",
            "",
            "",
            "Description: Calendars, ID: CalendarsControl",
        ),
        ("(disabled) Description: x", "", "", "(disabled) Description: x"),
        ("Secondary Actions: Raise", "", "", ""),
        ("Calendar, ID: calendar-menu", "", "", "Calendar, ID: calendar-menu"),
        ("", "", "", ""),
    ],
)
def test_roles_and_labels(rest: str, role: str, source: str, label: str) -> None:
    """Role recognition, normalisation and the label that remains."""
    element = one(rest)
    assert (element.role, element.source_role, element.label) == (role, source, label)


def test_bare_index_line_is_an_element() -> None:
    """An element with nothing to print is just its number."""
    tree = ax.parse("0 window A\n\t1\n\t2 button B")
    assert shape(tree)[1] == (1, 1, "", "", "")


@pytest.mark.parametrize(
    ("rest", "states"),
    [
        ("row (selectable) Inbox", ("selectable",)),
        ("row (selected, collapsed) Inbox", ("selected", "collapsed")),
        ("scroll bar (Disabled, Settable, Float) 0.5", ("disabled", "settable", "float")),
        ("row (selectable,  expanded ) Value: Playlists", ("selectable", "expanded")),
        ("text Saiyaara (From “Saiyaara”)", ()),
        ("button ()", ()),
    ],
)
def test_states_from_leading_flags(rest: str, states: tuple[str, ...]) -> None:
    """Only a parenthesised group right after the role is read as flags, lower-cased."""
    assert one(rest).states == states


def test_attributes_in_any_order() -> None:
    """Both observed orders give the same attributes, actions and label."""
    a = one("standard window fixture.txt, Secondary Actions: Raise, URL: file:///tmp/fixture.txt")
    b = one("standard window fixture.txt, URL: file:///tmp/fixture.txt, Secondary Actions: Raise")
    for e in (a, b):
        assert e.attributes == {"URL": "file:///tmp/fixture.txt"}
        assert e.secondary_actions == ("Raise",)
        assert e.label == "fixture.txt, URL: file:///tmp/fixture.txt"
    c = one("text entry area (settable) ID: First Text View, Value: hello")
    d = one("text entry area (settable) Value: hello, ID: First Text View")
    assert c.attributes == d.attributes == {"ID": "First Text View", "Value": "hello"}


def test_every_attribute_key() -> None:
    """Description, Value, Details, Help, ID, URL, Placeholder and Secondary Actions."""
    e = one(
        "container Title, Description: d, Value: 9/18/26, 11:50 AM, Details: Friday, "
        "September 18, Help: h: more, ID: i, URL: https://x/?a=1, Placeholder: Search, "
        "Secondary Actions: Copy, Move previous"
    )
    assert e.attributes == {
        "Description": "d",
        "Value": "9/18/26, 11:50 AM",
        "Details": "Friday, September 18",
        "Help": "h: more",
        "ID": "i",
        "URL": "https://x/?a=1",
        "Placeholder": "Search",
    }
    assert e.secondary_actions == ("Copy", "Move previous")
    assert e.label.endswith("Placeholder: Search") and "Secondary" not in e.label


def test_empty_values_and_repeated_keys() -> None:
    """``Value: , ID: …`` is an empty value; a repeated key stays inside the value before it."""
    assert one("text entry area (settable) Value: , ID: First").attributes == {
        "Value": "",
        "ID": "First",
    }
    assert one("text Value: ").attributes == {"Value": ""}
    assert one("link A, Value: x, ID: y, Value: z").attributes == {
        "Value": "x",
        "ID": "y, Value: z",
    }
    assert one("text Mode: basic").attributes == {}
    assert one("text ID:nospace").attributes == {}


# ----- continuation lines and numbering -------------------------------------------------------


def test_element_shaped_value_lines_stay_in_the_value() -> None:
    """``1 song`` after element 85 and a number bigger than the next index both continue."""
    text = (
        "0 window W\n\t1 text 3 June 2025\n1 song, 6 minutes\n\t7 tracks\n\t2 button Play\n"
        "\t3 text Value: first\n\n40 more\n\t4 button Stop"
    )
    tree = ax.parse(text)
    assert [e.index for e in tree.elements] == [0, 1, 2, 3, 4]
    assert tree.elements[1].label == "3 June 2025\n1 song, 6 minutes\n\t7 tracks"
    assert tree.elements[3].attributes == {"Value": "first\n\n40 more"}
    assert tree.elements[1].raw == "\t1 text 3 June 2025\n1 song, 6 minutes\n\t7 tracks"


def test_sparse_numbering_is_accepted() -> None:
    """Hand-written trees skip numbers; an index above the next one starts an element when the
    next one never follows."""
    tree = ax.parse(CASES[0]["ax"])
    assert [e.index for e in tree.elements] == [0, 1, 2, 20, 21, 22, 23]
    assert [e.depth for e in tree.elements] == [0, 1, 1, 1, 1, 1, 1]


def test_duplicate_and_backwards_numbers_continue_the_value() -> None:
    """A repeated or smaller number cannot start an element."""
    tree = ax.parse("0 window W\n\t1 button A\n\t1 button B\n\t0 x\n\t2 button C")
    assert [e.index for e in tree.elements] == [0, 1, 2]
    assert tree.elements[1].label == "A\n\t1 button B\n\t0 x"


def test_blank_lines_before_the_footer_are_not_part_of_a_value() -> None:
    """Trailing blank lines are dropped; a blank line inside a value is kept."""
    tree = ax.parse("0 window W\n\t1 text a\n\nb\n\n\nThe focused UI element is 1 text a")
    assert tree.elements[1].label == "a\n\nb"
    assert tree.elements[1].raw == "\t1 text a\n\nb"


@pytest.mark.parametrize(
    "digits", [str(2**53), "9" * 17, "1" * 5000], ids=["2^53", "17 digits", "5000 digits"]
)
def test_index_out_of_range(digits: str) -> None:
    """An element numbered beyond 2**53 - 1 is refused (without int() blowing up)."""
    with pytest.raises(ax.AxParseError, match="observe the app again"):
        ax.parse(f"0 window W\n\t{digits} button B")
    with pytest.raises(ax.AxParseError):
        ax.parse(f"{digits} window W")


def test_largest_safe_index() -> None:
    """2**53 - 1 itself is a valid index."""
    tree = ax.parse(f"0 window W\n\t{2**53 - 1} button B")
    assert tree.elements[1].index == 2**53 - 1


# ----- focus footer ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("footer", "focus"),
    [
        ("The focused UI element is 1 button.", 1),
        ("The focused UI element is 1 button OK, ID: ok", 1),
        ("The focused UI element is 2.", 2),
        ("the focused ui element is 1 button", 1),
        ("", None),
    ],
)
def test_focus_footer(footer: str, focus: int | None) -> None:
    """Short form with a period (v750), full line without one (v26.9), any case, or none."""
    tree = ax.parse(f"0 window W\n\t1 button OK\n\t2 text x\n\n{footer}")
    assert tree.focus == focus
    assert len(tree.elements) == 3


def test_selected_text_tail_is_not_read_as_elements() -> None:
    """After the footer (or a blank line), the selected-text tail is ignored."""
    tail = "Selected text: ```\n3 items\n```\n\nNote: something."
    for footer in ("\nThe focused UI element is 1 text a\n\n", "\n"):
        tree = ax.parse(f"0 window W\n\t1 text a\n\t2 button B\n{footer}{tail}")
        assert [e.index for e in tree.elements] == [0, 1, 2]
        assert tree.elements[2].label == "B"


# ----- refusals -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        'The following is a diff from the previous accessibility tree for Window: "W" with ~ and '
        "+ representing changed and added elements, respectively.\nRemoved element IDs: 5-6\n"
        "~0 standard window W\n+\t7 button B",
        'The following is a cumulative diff from the initial accessibility tree for Window: "W"\n'
        "0 standard window W",
        "Updated elements:\n3 button B",
        "Removed element IDs: 5-106, 129\n0 standard window W",
        'There has been no change in the accessibility tree for Window: "W".',
        "App=com.apple.TextEdit (pid 1)\nAction completed. Call `get_app_state` to fetch the "
        "updated UI state.",
        "",
        'App=com.apple.TextEdit (pid 1)\nWindow: "W", App: W.\n\nThe focused UI element is 0 x',
    ],
    ids=[
        "diff",
        "cumulative",
        "updated",
        "removed",
        "no-change",
        "receipt",
        "empty",
        "no-elements",
    ],
)
def test_refused(text: str) -> None:
    """Diffs, partial updates, receipts and trees without elements are refused."""
    with pytest.raises(ax.AxParseError, match=r"observe the app again for a full tree"):
        ax.parse(text)


def test_markers_inside_a_value_are_content() -> None:
    """A document quoting the diff header or the receipt is still a tree."""
    tree = ax.parse(
        "0 window W\n\t1 text entry area Value: notes\n"
        "Updated elements:\nAction completed. Call `get_app_state` to fetch the updated UI state."
    )
    assert len(tree.elements) == 2 and "Updated elements:" in tree.elements[1].attributes["Value"]


# ----- candidates -------------------------------------------------------------------------------


@pytest.mark.parametrize("case", CASES, ids=[c["name"] for c in CASES])
def test_seed_cases(case: dict[str, object]) -> None:
    """The expected element is returned and scores as high as any other candidate."""
    tree = ax.parse(str(case["ax"]))
    selection = ax.select_candidates(tree, str(case["goal"]))
    scores = {c.element.index: c.score for c in selection.candidates}
    assert case["expectedIndex"] in scores
    assert scores[case["expectedIndex"]] == selection.candidates[0].score
    assert case["expectedAction"] == "click_element"


def test_seed_cases_ranking() -> None:
    """Calendar and editor rank the expected element first; Calculator ties by index."""
    calendar = ax.select_candidates(ax.parse(CASES[0]["ax"]), CASES[0]["goal"])
    assert [(c.element.index, c.score) for c in calendar.candidates] == [
        (20, 17),
        (21, 13),
        (22, 13),
        (1, 0),
        (2, 0),
    ]
    editor = ax.select_candidates(ax.parse(CASES[2]["ax"]), CASES[2]["goal"])
    assert editor.candidates[0].element.index == 5 and editor.candidates[0].score == 12
    calc = ax.select_candidates(ax.parse(CASES[1]["ax"]), CASES[1]["goal"])
    assert [(c.element.index, c.score) for c in calc.candidates] == [(10, 3), (11, 3), (12, 3)]


def scores(text: str, goal: str = "") -> dict[int, int]:
    return {c.element.index: c.score for c in ax.select_candidates(ax.parse(text), goal).candidates}


def test_eligibility() -> None:
    """Clickable roles and selectable rows only; disabled ones never."""
    text = (
        "0 standard window W\n\t1 text T\n\t2 image I\n\t3 heading H\n\t4 row Plain\n"
        "\t5 row (selectable) Pick\n\t6 row (selected) Picked\n\t7 button (disabled) Off\n"
        "\t8 button Off (Disabled) here\n\t9 menu bar\n\t10 outline O\n\t11 link L\n"
        "\t12 checkbox C\n\t13 tab T\n\t14 scroll area S\n\t15 list L\n\t16 stepper S\n"
        "\t17 combo box C\n\t18 date time area D\n\t19 close button\n\t20 slider (disabled, settable) 1"
    )
    assert scores(text) == {
        5: 2,
        6: 2,
        11: 1,
        12: 0,
        13: 0,
        14: 0,
        15: 0,
        16: 0,
        17: 3,
        18: 0,
        19: -4,
    }


def test_scoring_rules() -> None:
    """Tokens (+4 each), empty and javascript labels (-4), month/search words (+6), tool (+5)."""
    text = (
        "0 standard window W\n\t1 button Save file\n\t2 link javascript:\n\t3 link javascript:;\n"
        "\t4 button\n\t5 search field Search\n\t6 button 搜索\n\t7 toggle button Bold\n"
        "\t8 button Today\n\t9 text field (settable) Name"
    )
    assert scores(text, "save the file") == {
        1: 11,
        2: -3,
        3: -3,
        4: -1,
        5: 2,
        6: 3,
        7: 3,
        8: 3,
        9: 2,
    }
    assert scores(text, "search")[5] == 2 + 4 + 6
    assert scores(text, "搜索")[6] == 3 + 4 + 6
    assert scores(text, "open the toolbar")[7] == 3 + 5
    assert scores(text, "use a tool")[7] == 3 + 5
    assert scores(text, "tools")[7] == 3
    assert scores(text, "next month")[8] == 3 + 6
    assert scores(text, "a b c")[1] == 3  # one-letter tokens are ignored


def test_limit_total_clipped() -> None:
    """At most ``limit`` candidates; the total counts every eligible element."""
    text = "0 window W\n" + "\n".join(f"\t{i} button B{i}" for i in range(1, 251))
    tree = ax.parse(text)
    selection = ax.select_candidates(tree, limit=200)
    assert (len(selection.candidates), selection.total, selection.clipped) == (200, 250, True)
    assert [c.element.index for c in selection.candidates] == list(range(1, 201))
    small = ax.select_candidates(tree, "b7", limit=1)
    assert small.candidates[0].element.index == 7 and small.clipped
    assert not ax.select_candidates(ax.parse("0 window W\n\t1 button B"), limit=1).clipped


@pytest.mark.parametrize("limit", [0, 201, -1, True, 1.5])
def test_limit_out_of_range(limit: object) -> None:
    """Limits outside 1..200 (or not integers) are refused."""
    tree = ax.parse("0 window W\n\t1 button B")
    with pytest.raises(ValueError, match="1 to 200"):
        ax.select_candidates(tree, limit=limit)  # type: ignore[arg-type]


# ----- context, summaries, find, report -------------------------------------------------------


def test_build_context_from_a_banner_tree() -> None:
    """Headers past the banner, text elements, focus line; cut to the limit."""
    tree = ax.parse(capture("music-v750-tooldump-1.txt"))
    context = briefing.build_context(tree)
    lines = context.split("\n")
    assert lines[:2] == ["App=com.apple.Music (pid 40054)", 'Window: "Music", App: Music.']
    assert lines[2] == '71 text Saiyaara (From "Saiyaara") - Single'
    assert lines[-1] == "The focused UI element is 1 split group."
    assert briefing.build_context(tree, limit=30) == context[:30]
    with pytest.raises(ValueError):
        briefing.build_context(tree, limit=-1)


def test_build_context_without_headers_or_focus() -> None:
    """Seed tree: Window line and root, then the text elements; no focus line."""
    tree = ax.parse(CASES[0]["ax"])
    assert briefing.build_context(tree) == (
        "Window: Calendar\n0 standard window Calendar\n23 text September 2026"
    )


def test_visible_texts_and_summary() -> None:
    """Format characters are dropped, labels joined and cut; the summary is compact JSON."""
    before = ax.parse("0 window W\n\t1 text \u200e30\n\t2 text \u200bb\u200b\n\t3 button OK")
    after = ax.parse("0 window W\n\t1 text 31\n\t2 button OK")
    assert briefing.visible_texts(before) == "30 | b"
    assert briefing.visible_texts(before, n=1) == "30"
    target = ax.find(before, 3)
    assert briefing.summarize_action("click_element", target, before, after, True) == (
        '{"action":"click_element","target":"button: OK","before":"30 | b","after":"31",'
        '"changed":true}'
    )
    assert (
        json.loads(briefing.summarize_action("wait", None, before, before, False))["target"] is None
    )
    long_tree = ax.parse("0 window W\n" + "\n".join(f"\t{i} text {'x' * 100}" for i in range(1, 8)))
    assert len(briefing.visible_texts(long_tree)) == 240
    long_target = one("button " + "y" * 300)
    summary = json.loads(
        briefing.summarize_action("click_element", long_target, before, after, False)
    )
    assert summary["target"] == "button: " + "y" * 192
    assert list(summary) == ["action", "target", "before", "after", "changed"]
    menu_item = ax.parse("0 window W\n1 menu bar\n\t2 File").elements[2]
    assert (
        json.loads(briefing.summarize_action("click_element", menu_item, before, after, True))[
            "target"
        ]
        == "File"
    )


def test_find() -> None:
    """By index; missing gives None; a hand-built unsorted tree still works."""
    tree = ax.parse(CASES[0]["ax"])
    found = ax.find(tree, 21)
    assert found is not None and found.label == "Today"
    assert ax.find(tree, 3) is None and ax.find(tree, 99) is None
    shuffled = ax.Tree(tree.elements[::-1])
    assert ax.find(shuffled, 20) is not None


def test_report_text_and_json() -> None:
    """``ax parse`` output: elements, focus and ranked candidates, as text or JSON."""
    text = report(BANNER_TREE, "close", as_json=False)
    assert "app: com.apple.TextEdit (pid 42)" in text
    assert "focus: 2" in text
    assert (
        "  2      text entry area  (settable) Value: 第一行\\n第二行, ID: First Text View" in text
    )
    assert 'candidates for goal "close": 2 eligible' in text
    document = json.loads(report(BANNER_TREE, "close", as_json=True))
    assert list(document) == [
        "elements",
        "focus",
        "app",
        "window",
        "candidates",
        "total",
        "clipped",
    ]
    assert document["elements"][2] == {
        "index": 2,
        "depth": 2,
        "role": "text entry area",
        "label": "(settable) Value: 第一行\n第二行, ID: First Text View",
    }
    assert document["candidates"] == [
        {"index": 1, "role": "scroll area", "label": "", "score": -4},
        {"index": 4, "role": "close button", "label": "", "score": -4},
    ]
    assert (document["focus"], document["total"], document["clipped"]) == (2, 2, False)
    with pytest.raises(ax.AxParseError):
        report("Updated elements:\n1 x", "", as_json=True)
