"""The pure side of the AT-SPI backend: roles, rendering, node cap, text search, apps."""

from __future__ import annotations

import pytest

from deskhand_d.programs.atspi import render, roles
from deskhand_d.programs.atspi.actions import ToolError, find_text, scroll_bar_for
from deskhand_d.programs.atspi.apps import pick_window
from deskhand_d.programs.atspi.catalog import Catalog, RunningApp, app_line, entry_from_text
from deskhand_d.programs.atspi.engine import check_arguments
from deskhand_d.programs.atspi.model import ACTION, EDITABLE_TEXT, TEXT, VALUE, Node
from deskhand_d.programs.atspi.roles import Role, State, bits
from deskhand_d.programs.core import texts

SHOWN = (State.VISIBLE, State.SENSITIVE)


def node(path: str, role: int, name: str = "", *children: Node, **kw: object) -> Node:
    states = kw.pop("states", bits(*SHOWN))
    return Node(
        ref=(":1.2", f"/{path}"), role=role, name=name, states=states, children=children, **kw
    )  # type: ignore[arg-type]


def calculator() -> Node:
    label = node(
        "l6",
        Role.LABEL,
        "6",
        interfaces=frozenset({TEXT, ACTION}),
        actions=("clipboard.copy", "link.open"),
    )
    six = node(
        "b6", Role.PUSH_BUTTON, "6 6", label, interfaces=frozenset({ACTION}), actions=("click",)
    )
    entry = node(
        "e",
        Role.TEXT,
        "GtkSourceView",
        states=bits(*SHOWN, State.EDITABLE, State.MULTI_LINE, State.FOCUSED),
        interfaces=frozenset({TEXT, EDITABLE_TEXT, ACTION}),
        text="13",
        actions=("clipboard.copy", "menu.popup"),
    )
    off = node(
        "m", Role.PUSH_BUTTON, "MR", states=bits(State.VISIBLE), description="Read from memory"
    )
    check = node("c", Role.CHECK_BOX, "Bold", states=bits(*SHOWN, State.CHECKED))
    bar = node(
        "s",
        Role.SCROLL_BAR,
        "",
        interfaces=frozenset({VALUE}),
        value=0.25,
        states=bits(*SHOWN, State.VERTICAL),
    )
    panel = node("p", Role.PANEL, "", six, entry, off, check, bar)
    return node(
        "w",
        Role.FRAME,
        "Calculator",
        panel,
        actions=("win.close", "default.activate"),
        interfaces=frozenset({ACTION}),
    )


def test_role_words_follow_sky() -> None:
    """Numeric AT-SPI roles map to Sky's role words; text depends on its states."""
    assert roles.role_words(Role.FRAME) == "standard window"
    assert roles.role_words(Role.PUSH_BUTTON) == "button"
    assert roles.role_words(Role.LABEL) == "text"
    assert roles.role_words(49) == "scroll area"
    assert roles.role_words(Role.TEXT, bits(State.EDITABLE, State.SINGLE_LINE)) == "text field"
    assert roles.role_words(Role.TEXT, bits(State.EDITABLE, State.MULTI_LINE)) == "text entry area"
    assert roles.role_words(Role.TEXT, bits(State.EDITABLE, State.READ_ONLY)) == "text"
    assert roles.role_words(Role.MENU, parent_role=Role.MENU_BAR) == "menu bar item"
    assert roles.role_words(Role.MENU, parent_role=Role.MENU) == "menu item"  # opens a submenu
    assert roles.role_words(Role.MENU, parent_role=Role.PUSH_BUTTON) == "menu"  # a popover
    assert roles.role_words(9999) == "unknown"


def test_names_quirks() -> None:
    """GTK 4.8 doubled names are undone only with a matching child; type names are dropped."""
    assert roles.display_name("6 6", ["6"]) == "6"
    assert roles.display_name("Go Go", []) == "Go Go"
    assert roles.display_name("mod mod", ["mod"]) == "mod"
    assert roles.display_name("GtkButton") == ""
    assert roles.display_name("AdwGizmo") == ""
    assert roles.display_name("HistoryView") == "HistoryView"


def test_actions() -> None:
    """The press-like action is the click; the rest are secondary; inert label menus hidden."""
    assert roles.primary_action(["clipboard.copy", "Click"]) == 1
    assert roles.primary_action(["link.open", "clipboard.copy"]) is None
    assert roles.secondary_actions(["click"]) == ()
    assert roles.secondary_actions(["win.undo", "default.activate"]) == ("win.undo",)
    label_actions = ["clipboard.copy", "menu.popup", "custom.thing"]
    assert roles.secondary_actions(label_actions, Role.LABEL, 0) == ("custom.thing",)
    selectable = bits(State.SELECTABLE_TEXT)
    assert roles.secondary_actions(label_actions, Role.LABEL, selectable) == tuple(label_actions)


def test_render_lines_values() -> None:
    """The whole rendering of a small GTK-like window, byte for byte."""
    r = render.render(calculator())
    assert r.lines == (
        "0 standard window Calculator, Secondary Actions: win.close",
        "\t1 container",
        "\t\t2 button 6",
        "\t\t\t3 text 6",
        "\t\t4 text entry area (settable, string) Value: 13, Secondary Actions: clipboard.copy, menu.popup",
        "\t\t5 button (disabled) MR, Description: Read from memory",
        "\t\t6 checkbox Bold, Value: 1",
        "\t\t7 scroll bar (settable, float) 0.25",
    )
    assert r.focus_index == 4
    assert r.refs[2] == (":1.2", "/b6")
    assert not r.truncated
    text = render.state_text(
        r, app_name="Calculator", path="/usr/share/applications/x.desktop", bundle_id="x", pid=7
    )
    lines = text.splitlines()
    assert lines[:4] == [
        texts.banner(texts.DEFAULT_CUA_VERSION),
        "<app_state>",
        "App=/usr/share/applications/x.desktop/ (bundleID x, pid 7)",
        'Window: "Calculator", App: Calculator.',
    ]
    assert lines[-3:] == [
        "",
        "The focused UI element is 4 text entry area (settable, string) Value: 13, Secondary Actions: clipboard.copy, menu.popup",
        "</app_state>",
    ]
    action = render.action_text(r, app_name="Calculator", bundle_id="x", pid=7)
    assert action.splitlines()[:2] == ["App=x (pid 7)", 'Window: "Calculator", App: Calculator.']


def test_value_settable_scroll_bar_and_expanded() -> None:
    """A settable scalar shows its bare value; expandable rows say collapsed or expanded."""
    slider = Node(
        ref=(":1", "/s"),
        role=Role.SLIDER,
        states=bits(*SHOWN),
        interfaces=frozenset({VALUE}),
        value=0.5,
    )
    element = render.element_of(slider, None)
    assert element.flags == ("settable", "float") and element.label == "0.5"
    progress = Node(
        ref=(":1", "/p"),
        role=Role.PROGRESS_BAR,
        name="Load",
        states=bits(*SHOWN),
        interfaces=frozenset({VALUE}),
        value=40.0,
    )
    element = render.element_of(progress, None)
    assert element.flags == () and element.value == "40"
    row = Node(
        ref=(":1", "/r"),
        role=90,
        name="Row",
        states=bits(*SHOWN, State.EXPANDABLE, State.SELECTABLE),
    )
    assert render.element_of(row, None).flags == ("selectable", "collapsed")


def test_node_cap_truncation() -> None:
    """Past the node cap the tree stops and the header says how many were left out."""
    kids = tuple(node(f"k{i}", Role.LABEL, f"item {i}") for i in range(10))
    window = node("w", Role.FRAME, "Big", node("p", Role.PANEL, "", *kids))
    r = render.render(window, max_nodes=5)
    assert len(r.lines) == 5 and r.total == 12 and r.truncated
    body = render.body_text(r, "Big").splitlines()
    assert body[1] == render.truncation_note(r)
    assert "5 of 12" in body[1] and not body[1][0].isdigit()
    assert body[2] == "0 standard window Big"
    incomplete = render.render(window, max_nodes=50, complete=False)
    assert incomplete.truncated and "not read" in render.truncation_note(incomplete)


def test_format_value() -> None:
    assert render.format_value(0.0) == "0"
    assert render.format_value(12.0) == "12"
    assert render.format_value(0.1851851791143417) == "0.1851851791143417"


def test_find_text() -> None:
    """Prefix and suffix pick among repeated matches; a missing one is None."""
    assert find_text("a b a b", "b") == (2, 3)
    assert find_text("a b a b", "b", prefix="a b a ") == (6, 7)
    assert find_text("x12y12z", "12", suffix="z") == (4, 6)
    assert find_text("abc", "zz") is None
    assert find_text("abc", "") is None


def test_scroll_bar_for() -> None:
    area = calculator()
    bar = scroll_bar_for(area, "down")
    assert bar is not None and bar.ref == (":1.2", "/s")
    assert scroll_bar_for(area, "left") is None


def test_pick_window() -> None:
    """Active window first, then showing, then visible, then any window-like child."""
    a, b = (":1", "/a"), (":1", "/b")
    assert (
        pick_window([(a, Role.FRAME, bits(State.VISIBLE)), (b, Role.DIALOG, bits(State.ACTIVE))])
        == b
    )
    assert pick_window([(a, Role.FRAME, 0), (b, Role.FRAME, bits(State.VISIBLE))]) == b
    assert pick_window([(a, Role.PANEL, 0)]) == a
    assert pick_window([]) is None


CALC_ENTRY = """[Desktop Entry]
Name=Calculator
Name[de]=Rechner
Exec=gnome-calculator %U
Type=Application
"""


def test_catalog_resolution_and_listing() -> None:
    """Display name, localised name, id, executable, running name; running apps listed first."""
    calc = entry_from_text("org.gnome.Calculator", "/apps/org.gnome.Calculator.desktop", CALC_ENTRY)
    hidden = entry_from_text(
        "h", "/apps/h.desktop", "[Desktop Entry]\nName=Hidden\nExec=h\nNoDisplay=true\n"
    )
    assert calc is not None and hidden is not None and calc.argv == ("gnome-calculator",)
    running = [RunningApp(":1.5", "gnome-calculator", 42), RunningApp(":1.9", "xeyes", 43)]
    cat = Catalog([calc, hidden], running)
    for name in (
        "Calculator",
        "rechner",
        "org.gnome.Calculator",
        "org.gnome.calculator.desktop",
        "gnome-calculator",
    ):
        target = cat.resolve(name)
        assert target is not None and target.bundle_id == "org.gnome.Calculator", name
        assert target.running is not None and target.running.pid == 42
    assert cat.resolve("Hidden") is None  # hidden entries do not answer to their name...
    hid = cat.resolve("h")
    assert hid is not None and hid.bundle_id == "h"  # ...but do to their id
    eyes = cat.resolve("xeyes")
    assert eyes is not None and eyes.entry is None and eyes.running is not None
    assert cat.resolve("nothing") is None
    assert cat.list_text().splitlines() == [
        "Calculator \u2014 /apps/org.gnome.Calculator.desktop \u2014 org.gnome.Calculator [running]",
        "xeyes \u2014 xeyes [running]",
    ]
    assert app_line(cat.resolve("Calculator"), running=False).endswith("org.gnome.Calculator")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("name", "arguments", "error"),
    [
        ("get_app_state", {}, texts.missing_argument("app")),
        ("click", {"app": 3}, texts.missing_argument("app")),
        ("scroll", {"app": "a", "element_index": "1"}, texts.MISSING_SCROLL_DIRECTION),
        (
            "drag",
            {"app": "a", "from_x": 1, "from_y": "2", "to_x": 3, "to_y": 4},
            texts.INVALID_PARAMETER,
        ),
        ("set_value", {"app": "a", "element_index": "1"}, texts.missing_argument("value")),
    ],
)
def test_argument_errors(name: str, arguments: dict[str, object], error: str) -> None:
    with pytest.raises(ToolError) as info:
        check_arguments(name, arguments)
    assert info.value.text == error


def test_numeric_index_is_accepted() -> None:
    assert check_arguments("click", {"app": "a", "element_index": 4})["element_index"] == "4"
