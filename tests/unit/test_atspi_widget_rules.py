"""What the tree shows for GTK 4 widgets and large containers, on values: names derived from
content, a drop-down's chosen value, pressed toggle buttons, windows without a window role,
embedded-object characters, untrustworthy action names, stacked pages and read windows."""

from __future__ import annotations

from typing import Any

from deskhand_d.programs.atspi import bounded, model, pages, render, roles
from deskhand_d.programs.atspi.model import EDITABLE_TEXT, Node
from deskhand_d.programs.atspi.roles import Role, State, bits

APP = ":1.9"
VISIBLE = bits(State.VISIBLE, State.SENSITIVE)


def node(path: str, role: int, name: str = "", *children: Node, **kw: Any) -> Node:
    kw.setdefault("states", VISIBLE)
    return Node(ref=(APP, path), role=role, name=name, children=children, **kw)


def label(path: str, text: str) -> Node:
    return node(path, Role.LABEL, text)


def line(n: Node, parent: Node | None = None) -> str:
    """The element line of ``n`` without its index."""
    r = render.render(n if parent is None else node("/root", Role.FRAME, "W", n))
    return r.lines[0 if parent is None else 1].lstrip("\t").split(" ", 1)[1]


def test_unnamed_list_items_take_the_text_they_hold() -> None:
    """A GTK 4 drop-down's items (list items around a box, a label and a tick) are named by
    their label; rows of a list view by their labels in order; an entry that holds a control
    is not just a label and keeps no name."""
    item = node(
        "/i",
        Role.LIST_ITEM,
        "",
        node("/box", Role.PANEL, "", label("/l", "5 minutes"), node("/tick", Role.IMAGE)),
    )
    assert line(item, node("/x", Role.LIST)) == "row 5 minutes"
    city = node(
        "/r",
        Role.LIST_ITEM,
        "",
        node("/b", Role.PANEL, "", label("/a", "Berlin"), label("/c", "Germany")),
        label("/d", "Europe/Berlin"),
    )
    assert render.content_label(city) == "Berlin Germany Europe/Berlin"
    with_switch = node("/s", Role.LIST_ITEM, "", label("/t", "Row 1"), node("/k", Role.CHECK_BOX))
    assert render.content_label(with_switch) == ""
    named = node("/n", Role.TABLE_ROW, "Own name", label("/o", "Other"))
    assert render.element_of(named, None).label == "Own name"
    cell = node("/cell", Role.TABLE_CELL, "", label("/z", "Latin"))
    assert render.element_of(cell, None).label == "Latin"
    nothing = node("/g", Role.LIST_ITEM, "", node("/cv", Role.FILLER))  # GTK 4 cell view
    assert render.element_of(nothing, None).label == ""


def test_a_drop_down_shows_what_is_chosen() -> None:
    """The chosen item's text inside the drop-down's button is its value; the open list of
    choices is not; a drop-down with an entry leaves the value to the entry."""
    button = node("/b", Role.PUSH_BUTTON, "", node("/box", Role.PANEL, "", label("/l", "2 min")))
    choices = node(
        "/pop",
        Role.FILLER,
        "",
        node("/list", Role.LIST, "", node("/i1", Role.LIST_ITEM, "", label("/x", "1 min"))),
    )
    combo = node("/c", Role.COMBO_BOX, "", button, choices)
    assert render.chosen_value(combo) == "2 min"
    assert line(combo).startswith("pop up button Value: 2 min")
    entry = node(
        "/e",
        Role.TEXT,
        "",
        states=VISIBLE | bits(State.EDITABLE),
        interfaces=frozenset({EDITABLE_TEXT}),
        text="typed",
    )
    assert render.chosen_value(node("/c2", Role.COMBO_BOX, "", entry)) == ""
    same = node("/c3", Role.COMBO_BOX, "Sans", label("/s", "Sans"))  # GTK 3 names it so
    assert render.element_of(same, None).value is None
    # Chromium: the text is one embedded object (the closed list), the choice is its selection
    select = node("/c4", Role.COMBO_BOX, "Colour", text="\ufffc", chosen="Blue")
    assert render.element_of(select, None).value == "Blue"


def test_pressed_buttons_and_windows_without_a_window_role() -> None:
    """GTK 4.8's toggle buttons are push buttons that say pressed: Value 1 then; GTK 4's About
    dialog is a modal filler: a dialog; a non-modal one a window."""
    pressed = node("/t", Role.PUSH_BUTTON, "togglebutton", states=VISIBLE | bits(State.PRESSED))
    assert render.element_of(pressed, None).value == "1"
    assert render.element_of(node("/u", Role.PUSH_BUTTON, "plain"), None).value is None
    about = node("/a", Role.FILLER, "About", states=VISIBLE | bits(State.MODAL))
    assert render.render(about).lines[0] == "0 dialog About"
    assert render.render(node("/f", Role.FILLER, "Tool")).lines[0] == "0 window Tool"
    assert line(node("/g", Role.FILLER), node("/p", Role.PANEL)) == "container"


def test_enabled_is_usable_too() -> None:
    """LibreOffice marks a document's paragraphs enabled but never sensitive: not disabled;
    GTK 4 says only sensitive; an element with neither is disabled."""
    assert not node("/p", 73, states=bits(State.VISIBLE, State.ENABLED)).disabled
    assert not node("/q", 73, states=bits(State.VISIBLE, State.SENSITIVE)).disabled
    assert node("/r", 73, states=bits(State.VISIBLE)).disabled


def test_embedded_object_characters_are_not_text() -> None:
    """U+FFFC stands for a child object in a hypertext: never shown in names or values."""
    assert roles.without_embeds("\ufffc\ufffc\ufffc") == ""
    assert roles.without_embeds("Read the \ufffc and then \ufffc please.") == (
        "Read the and then please."
    )
    assert roles.without_embeds("plain") == "plain"
    assert roles.display_name("\ufffc") == ""
    dialog = node("/d", Role.DIALOG, "Profile Missing", text="\ufffc\ufffc\ufffc")
    assert render.element_of(dialog, None).value is None
    section = node("/s", 85, "", text="\ufffc")
    assert render.element_of(section, None).label == ""
    links = (node("/a", Role.LINK, "first link"), node("/b", Role.LINK, "second link"))
    para = node("/p", 73, "", *links, text="Read the \ufffc and then \ufffc please.")
    assert render.element_of(para, None).label == (
        "Read the first link and then second link please."
    )
    runs = (node("/r1", Role.STATIC, "Read the "), links[0], node("/r2", Role.STATIC, " and"))
    chromium = node("/c", 73, "", *runs, text="Read the \ufffc and")
    assert render.element_of(chromium, None).label == "Read the first link and"
    assert render.element_of(runs[0], None).value is None  # "Read the " is its name
    page = node("/doc", 95, "Page", chromium, text="Read the first link and")
    assert render.element_of(page, None).value is None  # the children show it
    hidden_one = node("/q", 73, "", links[0], text="Read the \ufffc and then \ufffc please.")
    assert render.element_of(hidden_one, None).label == "Read the and then please."


def test_action_names_read_one_by_one_when_the_list_lies() -> None:
    """Firefox's bridge answers every field with the key binding: those names are not used."""
    assert roles.action_names([("click", "Clicks", "<Space>")]) == ("click",)
    assert roles.action_names([(";;", ";;", ";;")]) is None
    assert roles.action_names([("", "", "")]) is None
    assert roles.action_names([]) == ()
    assert roles.primary_action(["check", "showContextMenu"]) == 0  # a browser's check box
    assert roles.primary_action(["doDefault", "showContextMenu"]) is None


def test_tabs_and_links_act_late_like_buttons() -> None:
    """GTK's view-switcher tabs and link buttons are GtkButtons: their click action waits
    250 ms like a button's; a link whose action is jump does not."""
    assert model.click_is_delayed(Role.PAGE_TAB, ("Click",))
    assert model.click_is_delayed(Role.LINK, ("click",))
    assert not model.click_is_delayed(Role.LINK, ("jump",))
    assert not model.click_is_delayed(Role.CHECK_BOX, ("click",))


def test_stacked_pages_and_hollow_page_objects() -> None:
    """Siblings sharing one rectangle are a stack's pages; a page object without a rectangle
    has its content's; one whose content is not drawn is left out."""
    page = (0, 47, 860, 633)
    world = node("/world", Role.FILLER, "", box=page)
    stopwatch = node("/stop", Role.FILLER, "", node("/lap", Role.PUSH_BUTTON, "Lap"), box=page)
    bar = node("/bar", Role.PANEL, "", box=(0, 0, 860, 47))
    wrapper = node("/pg", Role.PANEL, "Page 2", node("/content", Role.PANEL, box=page))
    assert pages.extent(wrapper) == page
    assert pages.stacked([bar, world, stopwatch, wrapper]) == [[1, 2, 3]]
    assert pages.stacked([world, node("/z", Role.PANEL, box=(0, 47, 860, 0))]) == []
    assert pages.holder([world, stopwatch], (APP, "/lap")) == 1
    assert pages.holder([world, stopwatch], (APP, "/elsewhere")) is None
    assert pages.probe_points((0, 0, 100, 50))[0] == (50, 25)
    assert all(0 <= x < 100 and 0 <= y < 50 for x, y in pages.probe_points((0, 0, 100, 50)))
    assert model.hollow(None, [model.NOT_DRAWN, model.NOT_DRAWN])
    assert not model.hollow(None, [model.NOT_DRAWN, model.SHOWN])
    assert not model.hollow(None, [model.NOT_DRAWN, model.BELOW])  # scrolled, not hidden
    assert not model.hollow((0, 0, 5, 5), [model.NOT_DRAWN])
    assert not model.hollow(None, [])


def test_windows_of_large_containers() -> None:
    """Which containers are read by window, which positions are read, what is counted."""
    manages = bits(State.VISIBLE, State.MANAGES_DESCENDANTS)
    assert not bounded.is_large(manages, bounded.WINDOW)
    assert bounded.is_large(manages, bounded.WINDOW + 1)
    assert not bounded.is_large(VISIBLE, bounded.WINDOW + 1)
    assert bounded.is_large(VISIBLE, bounded.HARD_LIMIT + 1)
    assert bounded.span(10, 30, 1000, 200) == range(8, 33)
    assert bounded.span(0, 5, 6, 200) == range(6)
    assert bounded.span(50, 900, 1000, 200) == range(48, 248)  # never more than the limit
    assert bounded.span(3, 1, 1000, 200) == range(6)  # either order
    assert bounded.span(0, 0, 0, 200) == range(0)
    rows, cols = bounded.table_window(range(60), range(10), 200)
    assert (rows, cols) == (range(20), range(10))
    rows, cols = bounded.table_window(range(5, 10), range(500), 200)
    assert len(rows) * len(cols) <= 200 and len(rows) >= 1
    # a sheet of 1,048,576 x 16,384 cells, rows 100-129 and columns 2-11 read
    assert bounded.unread(range(100, 130), range(2, 12), 1_048_576, 16_384) == (
        100 * 16_384,
        (1_048_576 - 130) * 16_384,
        30 * 2,
        30 * (16_384 - 12),
    )


def test_a_menu_title_in_a_menu_bar_is_a_menu_bar_item_whatever_its_role() -> None:
    """GTK 3 says `menu`, Qt and GTK 4 `menu item` for the title in a menu bar: both are the
    macOS `menu bar item` a click opens; inside a menu, either is a `menu item`."""
    from deskhand_d.programs.atspi.roles import Role, role_words

    for role in (Role.MENU, Role.MENU_ITEM):
        assert role_words(role, parent_role=Role.MENU_BAR) == "menu bar item"
        assert role_words(role, parent_role=Role.MENU) == "menu item"
