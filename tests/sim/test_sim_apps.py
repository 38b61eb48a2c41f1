"""The simulated apps through the tool surface: trees, actions, renumbering, errors (spec §5-§9)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from axcheck import check_action, check_state
from simclient import MakeSim, Sim, element_at, find_index

FIXTURES = Path(__file__).parent / "fixtures"
NOT_ACTIVE = (
    "Computer Use is not active for '{}'. You first must call `get_app_state` to get the latest "
    "state before doing other Computer Use actions. If `get_app_state` is not available in your "
    "environment, use `tool_search` to surface it."
)
STALE = (
    "The element ID is no longer valid. Try to get the on-screen content again and see if that "
    "resolves the issue."
)


def _body(state_text: str) -> str:
    """The part of a get_app_state text from the Window: line to the end of the footer."""
    lines = state_text.split("\n")
    return "\n".join(lines[3:-1])


@pytest.fixture
def approved(make_sim: MakeSim) -> Sim:
    return make_sim({"preapproved": ["*"]})


def test_calculator_tree_is_the_real_capture(approved: Sim) -> None:
    """A fresh Calculator renders byte for byte like the captured v26.9 tree."""
    text = approved.text("get_app_state", {"app": "Calculator"})
    tree = check_state(text)
    assert tree.identity == (
        "App=/System/Applications/Calculator.app/ (bundleID com.apple.calculator, pid 4410)"
    )
    assert _body(text) + "\n" == (FIXTURES / "calculator-wangdada-1.txt").read_text()
    assert tree.focus is None


def test_calendar_tree_has_the_capture_shape(approved: Sim) -> None:
    """September 2026 with today 18th: 42 day lists, exact labels/IDs, footer on element 2."""
    text = approved.text("get_app_state", {"app": "Calendar"})
    tree = check_state(text)
    days = [n for n in tree.nodes if n.text.startswith("list ")]
    assert len(days) == 42
    assert days[0].text == "list Sunday, August 30" and days[-1].text == "list Saturday, October 10"
    assert [d.text for d in days if d.text.startswith("list Today, ")] == [
        "list Today, Friday, September 18"
    ]
    labor = tree.find("Event Description: Labor Day.")
    assert labor.text == (
        "Event Description: Labor Day. September 7, 2026, All-Day, "
        "Help: This event belongs to calendar “US Holidays”."
    )
    assert tree.nodes[labor.index + 1].text == "image Holiday"
    assert tree.nodes[2].text == (
        "container Description: Month Calendar Area, Value: 9/18/26, 11:50 AM, "
        "Details: Friday, September 18, 2026, ID: active-view"
    )
    assert tree.focus == "2 " + tree.nodes[2].text
    assert (
        tree.find("ID: view-date-title").text == "text Value: September 2026, ID: view-date-title"
    )
    fixture = (FIXTURES / "calendar-wangdada-1.txt").read_text().split("\n")
    for stable in ("button previous month", "button Today, ID: today-button", "button next month",
                   "radio button Description: Month, Value: 1, ID: month-button",
                   "menu bar main-menu-bar", "full screen button Help: this button also has an "
                   "action to zoom the window, Secondary Actions: zoom the window"):  # fmt: skip
        assert any(line.endswith(stable) for line in fixture)
        tree.find(stable)


def test_calendar_navigation_changes_title_and_grid(approved: Sim) -> None:
    """next month, previous month and Today move the title and the 42-day grid."""
    text = approved.text("get_app_state", {"app": "Calendar"})

    def press(label: str, current: str) -> str:
        return approved.text(
            "click", {"app": "Calendar", "element_index": find_index(current, label)}
        )

    october = press("button next month", text)
    assert "text Value: October 2026, ID: view-date-title" in october
    tree = check_action(october)
    assert (
        next(n.text for n in tree.nodes if n.text.startswith("list "))
        == "list Sunday, September 27"
    )
    assert "Today, " not in october.split("The focused")[0].replace("button Today", "")
    back = press("button previous month", press("button previous month", october))
    assert "text Value: August 2026, ID: view-date-title" in back
    today = press("button Today, ID: today-button", back)
    assert "text Value: September 2026, ID: view-date-title" in today
    assert "list Today, Friday, September 18" in today


def test_calculator_arithmetic_by_clicks_keys_and_typing(approved: Sim) -> None:
    """12 + 30232 = shows 30,244 whether entered by index clicks, press_key or type_text."""
    text = approved.text("get_app_state", {"app": "Calculator"})
    for label in ("ID: One", "ID: Two", "button Add", "ID: Three", "ID: Zero", "ID: Two",
                  "ID: Three", "ID: Two", "button Equals"):  # fmt: skip
        text = approved.text(
            "click", {"app": "Calculator", "element_index": find_index(text, label)}
        )
    assert "text \u200e30,244" in text
    assert "text 12+30,232" in text
    check_action(text)
    for key in ("Escape", "1", "2", "plus", "3", "0", "2", "3", "2", "Return"):
        text = approved.text("press_key", {"app": "Calculator", "key": key})
    assert "text \u200e30,244" in text
    text = approved.text("type_text", {"app": "Calculator", "text": "c12+30232="})
    assert "text \u200e30,244" in text


def test_calculator_results(approved: Sim) -> None:
    """Real arithmetic: decimals, division by zero, percent, repeated equals, grouping, sign."""
    approved.text("get_app_state", {"app": "Calculator"})
    cases = [
        ("7*6=", "42"),
        ("1/4=", "0.25"),
        ("0.1+0.2=", "0.3"),
        ("1/0=", "Not a number"),
        ("50+10%=", "55"),
        ("2+3==", "8"),
        ("1234567*1000=", "1,234,567,000"),
        ("9-12=", "-3"),
        ("1.50", "1.50"),
        ("2/3=", "0.6666666666666667"),
        ("99999999*99999999=", "9,999,999,800,000,001"),
        ("99999999*999999999=", "9.99999989e16"),
    ]
    for typed, shown in cases:
        text = approved.text("type_text", {"app": "Calculator", "text": "c" + typed})
        assert re.search(rf"\d text \u200e{re.escape(shown)}\n", text), (typed, text[:400])


def test_calculator_delete_negate_and_keypad_keys(approved: Sim) -> None:
    """BackSpace deletes a digit, Change Sign negates, KP_ keys and KP_Enter work."""
    text = approved.text("get_app_state", {"app": "Calculator"})
    for key in ("KP_4", "KP_5", "KP_6", "BackSpace"):
        text = approved.text("press_key", {"app": "Calculator", "key": key})
    assert "text \u200e45\n" in text
    text = approved.text(
        "click", {"app": "Calculator", "element_index": find_index(text, "ID: Negate")}
    )
    assert "text \u200e-45\n" in text
    for key in ("KP_Multiply", "KP_2", "KP_Enter"):
        text = approved.text("press_key", {"app": "Calculator", "key": key})
    assert "text \u200e-90\n" in text


def test_indices_shift_after_actions_and_stale_indices_are_refused(approved: Sim) -> None:
    """After 12+ an expression line appears, so index 24 is Point instead of Equals."""
    first = approved.text("get_app_state", {"app": "Calculator"})
    assert element_at(first, "24") == "button Equals"
    assert element_at(first, "36") == "Help"
    after = approved.text("type_text", {"app": "Calculator", "text": "12+"})
    assert element_at(after, "24") == "button Description: Point, ID: Decimal"
    assert element_at(after, "25") == "button Equals"
    pressed = approved.text("click", {"app": "Calculator", "element_index": "24"})
    assert "text \u200e0.\n" in pressed  # the old index now presses Point
    assert element_at(pressed, "37") == "Help"
    stale = approved.call("click", {"app": "Calculator", "element_index": "38"})
    assert stale["content"][0]["text"] == STALE and stale["isError"] is True
    bad = approved.call("click", {"app": "Calculator", "element_index": "x1"})
    assert bad["content"][0]["text"] == "x1 is an invalid element ID"


def test_actions_need_get_app_state_in_this_turn(approved: Sim) -> None:
    """An action before get_app_state gets -10011; a new turn_id needs get_app_state again."""
    turn = {"x-codex-turn-metadata": {"turn_id": "t1", "session_id": "s"}}
    early = approved.call("click", {"app": "Calculator", "element_index": "9"}, meta=turn)
    assert early["content"][0]["text"] == NOT_ACTIVE.format("Calculator")
    assert early["isError"] is True
    approved.text("get_app_state", {"app": "Calculator"}, meta=turn)
    ok = approved.call("click", {"app": "calculator", "element_index": "9"}, meta=turn)
    assert "isError" not in ok
    later = approved.call(
        "click",
        {"app": "Calculator", "element_index": "9"},
        meta={"x-codex-turn-metadata": {"turn_id": "t2"}},
    )
    assert later["content"][0]["text"] == NOT_ACTIVE.format("Calculator")


def test_action_results_have_the_short_identity_and_a_screenshot(approved: Sim) -> None:
    """Actions answer with App=<bundle> (pid N), the fresh tree and no banner, plus an image."""
    approved.text("get_app_state", {"app": "TextEdit"})
    result = approved.call("type_text", {"app": "TextEdit", "text": "x"})
    assert [c["type"] for c in result["content"]] == ["text", "image"]
    tree = check_action(result["content"][0]["text"])
    assert tree.identity == "App=com.apple.TextEdit (pid 2211)"


def test_textedit_editing_selection_and_tail(approved: Sim) -> None:
    """set_value, type_text at the caret with newlines, select_text and the Selected text tail."""
    text = approved.text("get_app_state", {"app": "TextEdit"})
    area = find_index(text, "text entry area (settable)")
    text = approved.text(
        "set_value", {"app": "TextEdit", "element_index": area, "value": "one two one"}
    )
    assert "text entry area (settable) Value: one two one, ID: First Text View" in text
    text = approved.text("type_text", {"app": "TextEdit", "text": "\nthree"})
    assert "Value: one two one\nthree, ID: First Text View" in text
    tree = check_action(text)
    assert (
        tree.focus
        == f"{area} text entry area (settable) Value: one two one\nthree, ID: First Text View"
    )
    text = approved.text(
        "select_text", {"app": "TextEdit", "element_index": area, "text": "one", "prefix": "two "}
    )
    assert check_action(text).selected == "one"
    text = approved.text("type_text", {"app": "TextEdit", "text": "ONE"})
    assert "Value: one two ONE\nthree," in text and "Selected text" not in text
    text = approved.text(
        "select_text",
        {"app": "TextEdit", "element_index": area, "text": "two", "selection": "cursor_after"},
    )
    assert "Selected text" not in text
    text = approved.text("type_text", {"app": "TextEdit", "text": "!"})
    assert "Value: one two! ONE" in text
    text = approved.text("press_key", {"app": "TextEdit", "key": "super+a"})
    assert check_action(text).selected == "one two! ONE\nthree"
    state = check_state(approved.text("get_app_state", {"app": "TextEdit"}))
    assert state.selected == "one two! ONE\nthree"
    missing = approved.call(
        "select_text", {"app": "TextEdit", "element_index": area, "text": "four"}
    )
    assert (
        missing["content"][0]["text"]
        == "Could not find the requested text to select in the element"
    )


def test_textedit_keys_undo_and_clipboard(approved: Sim) -> None:
    """Return, BackSpace, arrows with shift, cut/paste and undo behave like a text editor."""
    approved.text("get_app_state", {"app": "TextEdit"})
    for key in ("h", "i", "Return", "shift+x", "BackSpace", "y"):
        text = approved.text("press_key", {"app": "TextEdit", "key": key})
    assert "Value: hi\ny, ID" in text
    for key in ("shift+Left", "shift+Left", "cmd+x", "Home", "super+v"):
        text = approved.text("press_key", {"app": "TextEdit", "key": key})
    assert "Value: \nyhi, ID" in text
    text = approved.text("press_key", {"app": "TextEdit", "key": "cmd+z"})
    assert "Value: hi, ID" in text
    text = approved.text("press_key", {"app": "TextEdit", "key": "cmd+shift+z"})
    assert "Value: \nyhi, ID" in text


def test_textedit_long_text_adds_a_scroll_bar_and_shifts_the_menu(approved: Sim) -> None:
    """Overflowing text adds a scroll bar element, so the menu bar's index moves."""
    text = approved.text("get_app_state", {"app": "TextEdit"})
    menu_before = find_index(text, "menu bar")
    text = approved.text("type_text", {"app": "TextEdit", "text": "line\n" * 60})
    assert find_index(text, "menu bar") == str(int(menu_before) + 1)
    assert "scroll bar (settable, float) 1" in text
    bar = find_index(text, "scroll bar")
    text = approved.text("set_value", {"app": "TextEdit", "element_index": bar, "value": "0"})
    assert "scroll bar (settable, float) 0\n" in text
    text = approved.text(
        "scroll", {"app": "TextEdit", "element_index": "1", "direction": "down", "pages": 0.5}
    )
    assert re.search(r"scroll bar \(settable, float\) 0\.\d+", text)


def test_action_error_texts(approved: Sim) -> None:
    """Non-settable set_value, bad secondary action, bad direction, select in a non-text element."""
    text = approved.text("get_app_state", {"app": "Calculator"})
    seven = find_index(text, "ID: Seven")
    cases = [
        ("set_value", {"element_index": seven, "value": "1"},
         "Cannot set a value for an element that is not settable"),
        ("perform_secondary_action", {"element_index": "3", "action": "Paste"},
         "Paste is not a valid secondary action for 3"),
        ("scroll", {"element_index": "3", "direction": "sideways"},
         "Invalid scroll direction: sideways"),
        ("scroll", {"element_index": "3", "direction": "up", "pages": "two"}, "Missing scroll amount"),
        ("select_text", {"element_index": "4", "text": "0"},
         "Cannot select text for an element that does not support a settable selected text range"),
        ("type_text", {"text": "a\x07"}, "Could not find key code for character: \x07"),
        ("press_key", {"key": "hyper+q"}, "Computer Use server error -10005: invalidParameter"),
        ("click", {}, "Computer Use server error -10005: invalidParameter"),
        ("drag", {"from_x": 1, "from_y": 2, "to_x": 3}, "Missing required argument: to_y"),
    ]  # fmt: skip
    for tool, args, expected in cases:
        result = approved.call(tool, {"app": "Calculator", **args})
        assert result["content"] == [{"text": expected, "type": "text"}], tool
        assert result["isError"] is True
    ok = approved.call(
        "perform_secondary_action", {"app": "Calculator", "element_index": "3", "action": "Copy"}
    )
    assert "isError" not in ok


def test_coordinate_clicks_hit_elements_by_their_rectangles(approved: Sim) -> None:
    """x/y clicks land on the element drawn there (rect map of the screenshot)."""
    from deskhand_d.programs.sim.apps.calculator import Calculator

    frames = {n.key: n.frame for _, n in Calculator(1, "en").window().root.walk() if n.frame}

    def centre(key: str) -> tuple[int, int]:
        x, y, w, h = frames[key]  # type: ignore[misc]
        return x + w // 2, y + h // 2

    approved.text("get_app_state", {"app": "Calculator"})
    for key in ("calc.Seven", "calc.Multiply", "calc.Six", "calc.Equals"):
        x, y = centre(key)
        text = approved.text("click", {"app": "Calculator", "x": x, "y": y})
    assert "text \u200e42\n" in text
    x, y = centre("calc.Seven")
    text = approved.text("click", {"app": "Calculator", "x": x, "y": y, "click_count": 2})
    assert "text \u200e77\n" in text
    text = approved.text("click", {"app": "Calculator", "x": 5000, "y": 5000})
    assert "text \u200e77\n" in text


def test_textedit_coordinates_place_the_caret_and_drag_selects(approved: Sim) -> None:
    """A click on the text grid places the caret; a drag across it selects that span."""
    from deskhand_d.programs.sim.apps.textedit import CHAR_W, LINE_H

    approved.text("get_app_state", {"app": "TextEdit"})
    approved.text("type_text", {"app": "TextEdit", "text": "hello world\nsecond"})
    x0, y0 = 8 + 6 * CHAR_W, 36 + 4
    text = approved.text(
        "drag", {"app": "TextEdit", "from_x": x0, "from_y": y0, "to_x": x0 + 5 * CHAR_W, "to_y": y0}
    )
    assert check_action(text).selected == "world"
    text = approved.text("click", {"app": "TextEdit", "x": 8, "y": 36 + LINE_H + 4})
    text = approved.text("type_text", {"app": "TextEdit", "text": ">"})
    assert "Value: hello world\n>second," in text


def test_calendar_drag_moves_a_user_event(make_sim: MakeSim) -> None:
    """Dragging an event onto another day moves it; its Event line names the new date."""
    sim = make_sim({"preapproved": ["*"], "events": [{"date": "2026-09-22", "title": "Dentist"}]})
    text = sim.text("get_app_state", {"app": "Calendar"})
    assert (
        "Event Description: Dentist. September 22, 2026, All-Day, Help: This event belongs to calendar “Home”."
        in text
    )
    # Sep 22 is a Tuesday in the 4th grid row; Sep 24 is the Thursday next to it.
    x0, y0 = 2 * 126 + 20, 124 + 3 * 107 + 22 + 5
    text = sim.text(
        "drag",
        {"app": "Calendar", "from_x": x0, "from_y": y0, "to_x": 4 * 126 + 40, "to_y": y0 + 30},
    )
    assert "Event Description: Dentist. September 24, 2026, All-Day" in text
    day = text.split("list Thursday, September 24")[1].split("\n")[1]
    assert "Event Description: Dentist." in day and "image All Day" in text


def test_list_apps_lines(sim: Sim) -> None:
    """v26.9 lines `Name — /path/ — bundle [flags]`, running first; launched apps become running."""
    text = sim.text("list_apps")
    pattern = re.compile(r"^(.+) — (/\S+\.app)/ — ([\w.]+)( \[(.+)\])?$")
    lines = text.split("\n")
    parsed = [pattern.match(line) for line in lines]
    assert all(parsed), lines
    flags = [m.group(5).split(", ") for m in parsed if m]
    running = [("running" in f) for f in flags]
    assert running == sorted(running, reverse=True)
    assert lines[0] == (
        "Finder — /System/Library/CoreServices/Finder.app/ — com.apple.finder "
        "[frontmost, running, last-used=2026-09-18, uses=412]"
    )
    for f in flags:
        order = ["frontmost", "running", "last-used", "uses"]
        names = [x.split("=")[0] for x in f]
        assert names == [o for o in order if o in names]
    assert any(line.startswith("Calculator — ") and "running" not in line for line in lines)
    sim.call("get_app_state", {"app": "Calculator"})
    after = sim.text("list_apps")
    assert re.search(r"^Calculator — .* \[running, last-used=2026-09-13, uses=12\]$", after, re.M)


def test_app_resolution(approved: Sim) -> None:
    """Name, bundle id and path (with or without /) resolve case-insensitively; others fail."""
    expected = approved.text("get_app_state", {"app": "Calculator"})
    for given in ("calculator", "COM.APPLE.CALCULATOR", "/System/Applications/Calculator.app",
                  "/system/applications/calculator.app/"):  # fmt: skip
        assert approved.text("get_app_state", {"app": given}) == expected
    unknown = approved.call("get_app_state", {"app": "Photoshop"})
    assert unknown["content"][0]["text"] == 'appNotFound("Photoshop")' and unknown["isError"]
    assert approved.text("get_app_state", {"app": "iTerm2"}) == 'appNotFound("iTerm2")'
    assert approved.text("get_app_state", {"app": "com.googlecode.iterm2"}) == (
        "Computer Use is not allowed to use the app 'com.googlecode.iterm2' for safety reasons."
    )
    assert approved.text("get_app_state", {"app": "Finder"}) == (
        "Computer Use server error -10005: noWindowsAvailable"
    )


def test_zh_hans_locale(make_sim: MakeSim) -> None:
    """zh-Hans localizes role descriptions and app names; keys, flags and actions stay English."""
    sim = make_sim(
        {
            "locale": "zh-Hans",
            "preapproved": ["*"],
            "textedit": {"text": "第一行\n第二行", "path": "/TEST.txt"},
        }
    )
    text = sim.text("get_app_state", {"app": "文本编辑"})
    tree = check_state(text)
    assert tree.app_name == "文本编辑" and tree.title == "TEST.txt"
    assert (
        tree.nodes[0].text == "标准窗口 TEST.txt, URL: file:///TEST.txt, Secondary Actions: Raise"
    )
    assert tree.nodes[1].text == "滚动区 Secondary Actions: Scroll Up, Scroll Down"
    assert tree.nodes[2].text == "文本输入区 (settable) Value: 第一行\n第二行, ID: First Text View"
    assert tree.find("menu bar").depth == 0
    assert tree.find("关闭按钮")
    calc = check_state(sim.text("get_app_state", {"app": "Calculator"}))
    assert calc.app_name == "计算器" and calc.nodes[4].text.startswith("文本 ")
    assert "按钮 Description: 7, ID: Seven" in [n.text for n in calc.nodes]
    assert "日历 — /System/Applications/Calendar.app/ — com.apple.iCal" in sim.text("list_apps")


def test_grammar_checker_accepts_the_real_captures() -> None:
    """The test-side grammar checker itself accepts Sky's captured trees (it is not too strict)."""
    header = "Computer Use state (CUA App Version: 1001103)\n<app_state>\nApp=/A.app/ (bundleID a.b, pid 1)\n"
    for name in ("calculator-wangdada-1.txt", "calendar-wangdada-1.txt"):
        body = (FIXTURES / name).read_text().rstrip("\n")
        tree = check_state(header + body + "\n</app_state>")
        assert len(tree.nodes) in (37, 82)
