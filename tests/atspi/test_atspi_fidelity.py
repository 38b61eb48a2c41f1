"""What the tree shows, on values: on-screen rules, scrolled-away counts, several windows, menu
roles and ticks, the running app behind a desktop entry. Pure parts and a walk over an
in-memory bus; the real apps are in ``test_real_apps.py``."""

from __future__ import annotations

from typing import Any

from test_atspi_walk import APP, FakeBus

from deskhand_d.programs.atspi import apps, model, render, roles
from deskhand_d.programs.atspi.catalog import Catalog, RunningApp, entry_from_text
from deskhand_d.programs.atspi.engine import union
from deskhand_d.programs.atspi.model import ACCESSIBLE, ACTION, COMPONENT, Node
from deskhand_d.programs.atspi.roles import Role, State, bits
from deskhand_d.programs.atspi.walk import read_tree

VISIBLE = bits(State.VISIBLE, State.SENSITIVE)
SHOWING = bits(State.VISIBLE, State.SHOWING, State.SENSITIVE)
FAR = -(2**31)


def test_placement_and_clip() -> None:
    """A rectangle is shown, not drawn (no area, GTK 3's far-away placeholder) or on one side
    of the visible rectangle; scrolled views narrow the clip, popups start afresh."""
    clip = (0, 100, 200, 300)
    assert model.placement(None, clip) == model.SHOWN
    assert model.placement((10, 120, 50, 20), clip) == model.SHOWN
    assert model.placement((10, 120, 50, 20), None) == model.SHOWN
    assert model.placement((0, 47, 690, 0), None) == model.NOT_DRAWN  # GTK 4: unmapped
    assert model.placement((FAR, FAR, 1, 1), None) == model.NOT_DRAWN
    assert model.placement((10, 60, 50, 40), clip) == model.ABOVE  # ends right at the top
    assert model.placement((10, 400, 50, 20), clip) == model.BELOW
    assert model.placement((-60, 120, 50, 20), clip) == model.LEFT
    assert model.placement((200, 120, 50, 20), clip) == model.RIGHT
    assert model.child_clip(49, (0, 150, 100, 100), clip) == (0, 150, 100, 100)
    assert model.child_clip(49, (0, 50, 300, 100), clip) == (0, 100, 200, 50)
    assert model.child_clip(Role.PANEL, (0, 0, 5, 5), clip) == clip
    assert model.child_clip(Role.MENU, (0, 0, 40, 25), clip) is None  # items lie below it
    assert model.intersect((0, 0, 10, 10), (20, 20, 5, 5))[2:] == (0, 0)


def test_where_trusts_showing_only_where_it_is_kept() -> None:
    """GTK 4 (showing not kept): no area means not drawn. GTK 3: a page whose tab has no area
    is still showing; a list cell at the far-away placeholder with a size is scrolled away."""
    assert model.where(VISIBLE, (0, 0, 0, 0), None, window_showing=False) == model.NOT_DRAWN
    assert model.where(SHOWING, (0, 0, 0, 0), None, window_showing=True) == model.SHOWN
    assert model.where(VISIBLE, (0, 0, 0, 0), None, window_showing=True) == model.NOT_DRAWN
    cell = (FAR, FAR, 72, 21)
    assert model.where(SHOWING, cell, (0, 0, 9, 9), window_showing=True) == model.OUT
    assert model.where(VISIBLE, (FAR, FAR, 1, 1), None, window_showing=True) == model.NOT_DRAWN
    assert model.where(bits(State.SENSITIVE), (0, 0, 9, 9), None, window_showing=False) == (
        model.NOT_DRAWN
    )
    # outside the viewport counts as scrolled away even when GTK 3 stopped calling it showing
    assert model.where(VISIBLE, (0, 500, 9, 9), (0, 0, 99, 99), window_showing=True) == (
        model.BELOW
    )
    s, o = model.SHOWN, model.OUT
    assert model.resolve_sides([s, o, o, s, s, o]) == [s, "above", "above", s, s, "below"]
    assert model.resolve_sides([o, o]) == ["below", "below"]


def test_offscreen_note() -> None:
    assert render.offscreen_note((0, 0, 0, 0)) is None
    assert render.offscreen_note((40, 80, 0, 0)) == (
        "120 more items scrolled out of view (40 above, 80 below)"
    )
    assert render.offscreen_note((0, 1, 0, 0)) == "1 more item scrolled out of view (1 below)"
    assert render.offscreen_note((0, 0, 2, 3)) == (
        "5 more items scrolled out of view (2 to the left, 3 to the right)"
    )


def node(path: str, role: int, name: str = "", *children: Node, **kw: Any) -> Node:
    kw.setdefault("states", VISIBLE)
    return Node(ref=(APP, path), role=role, name=name, children=children, **kw)


def test_several_windows_one_numbering() -> None:
    """Each surface is a root at depth 0; numbering runs on; the Window line names the first;
    an index maps back to its surface."""
    dialog = node(
        "/d", Role.DIALOG, "Preferences", node("/c", Role.CHECK_BOX, "Wrap", states=VISIBLE)
    )
    main = node("/w", Role.FRAME, "Untitled", node("/b", Role.PUSH_BUTTON, "Save"))
    r = render.render([dialog, main])
    assert r.lines == (
        "0 dialog Preferences",
        "\t1 checkbox Wrap, Value: 0",
        "2 standard window Untitled",
        "\t3 button Save",
    )
    assert r.title == "Preferences" and r.roots == (0, 2)
    assert [r.surface_of(i) for i in range(4)] == [0, 0, 1, 1]
    assert union([(133, 0, 373, 482), (0, 0, 640, 480)]) == (0, 0, 640, 482)
    assert union([(-5, 10, 10, 10), (0, 0, 0, 0)]) == (0, 10, 5, 10)


def test_menu_roles_ticks_and_scrolled_lists() -> None:
    """GTK 3 menus: titles are menu bar items, submenus menu items, an open one is expanded;
    ticks come from states or from outside; a list cut by its viewport says so."""
    item = node("/i8", Role.MENU_ITEM, "8      ", states=SHOWING)
    radio = node("/r", Role.RADIO_MENU_ITEM, "Two", states=SHOWING | bits(State.CHECKED))
    sub = node("/tab", Role.MENU, "Tab Size      ", item, radio, states=SHOWING)
    doc = node("/doc", Role.MENU, "Document", sub, states=SHOWING)
    closed = node("/help", Role.MENU, "Help", states=SHOWING)
    bar = node("/bar", Role.MENU_BAR, "", doc, closed)
    rows = node(
        "/list",
        55,
        "",
        node("/row", 56, "Latin", actions=("expand or contract", "edit", "activate")),
        clipped=(70, 80, 0, 0),
    )
    r = render.render(node("/w", Role.FRAME, "M", bar, rows), checked={(APP, "/i8"): True})
    assert r.lines[1:] == (
        "\t1 menu bar",
        "\t\t2 menu bar item (expanded) Document",
        "\t\t\t3 menu item (expanded) Tab Size",
        "\t\t\t\t4 menu item 8, Value: 1",
        "\t\t\t\t5 menu item Two, Value: 1",
        "\t\t6 menu bar item Help",
        "\t7 table Details: 150 more items scrolled out of view (70 above, 80 below)",
        "\t\t8 cell Latin",
    )
    pressed = node("/t", Role.TOGGLE_BUTTON, "Bold", states=VISIBLE | bits(State.PRESSED))
    assert render.element_of(pressed, None).value == "1"  # GTK 4 says pressed, not checked
    checkable = node("/m", Role.MENU_ITEM, "Wrap", states=VISIBLE | bits(State.CHECKABLE))
    assert render.element_of(checkable, None).value == "0"


def test_names_with_mnemonics_and_cell_actions() -> None:
    assert roles.display_name("Save _As… Save As…", ["Save As…"]) == "Save As…"
    assert roles.display_name("_Retry Retry", ["Retry"]) == "Retry"
    assert roles.display_name("_Retry Retry", []) == "_Retry Retry"
    assert roles.display_name("New      ") == "New"
    cell_actions = ["Expand or contract", "Edit", "Activate"]
    assert roles.secondary_actions(cell_actions, 56, 0) == ()
    assert roles.secondary_actions(cell_actions, 56, bits(State.EXPANDABLE)) == (
        "Expand or contract",
    )
    assert roles.secondary_actions(["Edit", "click"], Role.PUSH_BUTTON, 0) == ("Edit",)


def test_order_surfaces() -> None:
    """A popup first, then a modal dialog, the rest newest first (the active one too: without
    a window manager the window keys went to stays active under a new dialog), tooltips last;
    hidden ones are left out (showing counts once any window shows it)."""
    frame, dialog, popup, tip, gone = (
        (APP, "/frame"),
        (APP, "/dialog"),
        (APP, "/popup"),
        (APP, "/tip"),
        (APP, "/gone"),
    )
    found = [
        (frame, Role.FRAME, SHOWING),
        (dialog, Role.DIALOG, SHOWING),
        (tip, 64, SHOWING),
        (gone, Role.FRAME, VISIBLE),  # visible but not showing: a hidden GTK 3 window
    ]
    assert apps.order_surfaces(found) == [dialog, frame, tip]  # newest first
    active = [(frame, Role.FRAME, SHOWING | bits(State.ACTIVE)), (dialog, Role.DIALOG, SHOWING)]
    assert apps.order_surfaces(active) == [dialog, frame]
    modal = [(dialog, Role.DIALOG, SHOWING | bits(State.MODAL)), (frame, Role.FRAME, SHOWING)]
    assert apps.order_surfaces(modal) == [dialog, frame]  # older, but it holds the app
    assert apps.order_surfaces([*active, (popup, Role.WINDOW, SHOWING)])[0] == popup
    gtk4 = [(frame, Role.FRAME, VISIBLE), (dialog, Role.DIALOG, VISIBLE)]  # no showing at all
    assert apps.order_surfaces(gtk4) == [dialog, frame]


MOUSEPAD = "[Desktop Entry]\nName=Mousepad\nExec=mousepad %U\n"
SETTINGS = "[Desktop Entry]\nName=Text Editor Settings\nExec=mousepad --preferences\n"


def test_running_state_follows_the_process() -> None:
    """Two entries start /usr/bin/mousepad; the running process is Mousepad, whichever entry
    sorts first (the settings entry's id does, by one character)."""
    settings = entry_from_text("org.xfce.mousepad-settings", "/a/s.desktop", SETTINGS)
    mousepad = entry_from_text("org.xfce.mousepad", "/a/m.desktop", MOUSEPAD)
    assert settings is not None and mousepad is not None
    running = [RunningApp(":1.4", "mousepad", 7, exe="/usr/bin/mousepad")]
    cat = Catalog([settings, mousepad], running)
    assert cat.entry_for(running[0]) == mousepad
    lines = cat.list_text().splitlines()
    assert lines[0].startswith("Mousepad \u2014") and lines[0].endswith("[running]")
    assert lines[1].startswith("Text Editor Settings") and "[running]" not in lines[1]


async def test_walk_prunes_what_is_not_on_screen() -> None:
    """A zero-sized subtree is dropped unread (GTK 4's closed info bar); rows outside the
    scroll area's rectangle are counted on their list, their subtrees unread."""
    rows = [f"/r{i}" for i in range(10)]
    objects: dict[str, dict[str, Any]] = {
        "/w": {
            "role": Role.FRAME,
            "name": "W",
            "box": (0, 0, 400, 300),
            "ifaces": [ACCESSIBLE, COMPONENT],
            "children": ["/bar", "/sc"],
        },
        "/bar": {
            "role": Role.PANEL,
            "box": (0, 47, 400, 0),
            "ifaces": [ACCESSIBLE, COMPONENT],
            "children": ["/msg"],
        },
        "/msg": {
            "role": Role.LABEL,
            "name": "Could Not Open File",
            "box": (0, 47, 0, 0),
            "ifaces": [ACCESSIBLE, COMPONENT],
        },
        "/sc": {
            "role": 49,
            "box": (0, 100, 400, 100),
            "ifaces": [ACCESSIBLE, COMPONENT],
            "children": ["/list"],
        },
        "/list": {
            "role": 31,
            "box": (0, 0, 400, 500),
            "ifaces": [ACCESSIBLE, COMPONENT],
            "children": rows,
        },
    }
    for i, path in enumerate(rows):  # 50 px rows from y=0: rows 2 and 3 are in view
        objects[path] = {
            "role": 32,
            "name": f"Row {i}",
            "box": (0, i * 50, 400, 50),
            "ifaces": [ACCESSIBLE, ACTION, COMPONENT],
            "actions": ["activate"],
            "children": [f"{path}/label"],
        }
        objects[f"{path}/label"] = {"role": Role.LABEL, "name": f"Row {i}"}
    fake = FakeBus(objects)
    root, _ = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None
    r = render.render(root)
    assert "Could Not Open File" not in "\n".join(r.lines)
    listed = r.nodes[
        r.lines.index("\t\t2 list Details: 8 more items scrolled out of view (2 above, 6 below)")
    ]
    assert [c.name for c in listed.children] == ["Row 2", "Row 3"]
    read = {path for path, _ in fake.calls}
    assert "/msg" not in read and "/r7/label" not in read and "/r2/label" in read


async def test_text_is_read_up_to_its_length() -> None:
    """GTK 3 table cells crash their app when asked for text past its end: the walk asks for
    exactly the character count (the fake refuses anything past it)."""
    fake = FakeBus(
        {
            "/w": {"role": Role.FRAME, "children": ["/c"]},
            "/c": {"role": 56, "ifaces": [ACCESSIBLE, "org.a11y.atspi.Text"], "text": "Latin"},
        }
    )
    root, _ = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and root.children[0].text == "Latin"


MOUSEPAD_TREE = """App=org.xfce.mousepad (pid 7)
Window: "Untitled 1 - Mousepad", App: Mousepad.
0 standard window Untitled 1 - Mousepad
\t1 menu bar
\t\t2 menu bar item File, Description: File menu
\t\t3 menu bar item (expanded) Document, Description: Document menu
\t\t\t4 menu item Word Wrap, Description: Toggle breaking lines in between words, Value: 0
\t\t\t5 menu item (expanded) Tab Size, Description: The number of space characters
\t\t\t\t6 menu item 8, Description: Eight spaces, Value: 1
\t\t\t7 separator
\t\t8 menu bar item Help, Description: Help menu
\t9 scroll area
\t\t10 text entry area (settable, string) Value: hello
"""


def test_jev_reads_menus_and_offers_them() -> None:
    """Menu bar items and menu items are parsed with their roles and ticks (Sky's bare menu
    titles keep the empty role) and are candidates; the goal's menu ranks first."""
    from deskhand_d import ax

    tree = ax.parse(MOUSEPAD_TREE)
    by_index = {e.index: e for e in tree.elements}
    assert by_index[3].role == "menu bar item" and "Document" in by_index[3].label
    assert by_index[3].states == ("expanded",)
    assert by_index[6].role == "menu item" and by_index[6].attributes["Value"] == "1"
    assert by_index[7].role == "separator"
    chosen = ax.select_candidates(tree, "open the Document menu")
    assert chosen.candidates[0].element.index == 3
    roles_offered = {c.element.role for c in chosen.candidates}
    assert {"menu bar item", "menu item"} <= roles_offered
    sky = ax.parse('Window: "C", App: C.\n0 standard window C\n1 menu bar\n\t2 Calculator\n')
    assert sky.elements[2].role == "" and sky.elements[2].label == "Calculator"
    rows = ax.parse('Window: "L", App: L.\n0 table\n\t1 cell (selectable) Latin\n')
    assert [c.element.index for c in ax.select_candidates(rows, "pick Latin").candidates] == [1]


def test_gmenu_ticks_from_the_published_model() -> None:
    """Mousepad's Document menu as org.gtk.Menus gives it (jeepney's variant tuples): a radio
    group ticks the item whose target equals the state, a boolean action ticks when true."""
    from deskhand_d.programs.atspi import gmenu

    menus = {
        (0, 0): [
            {"label": ("s", "_File"), ":submenu": ("(uu)", (1, 0))},
            {"label": ("s", "_Document"), ":submenu": ("(uu)", (1, 1))},
        ],
        (1, 0): [{"label": ("s", "_New"), "action": ("s", "win.file.new")}],
        (1, 1): [
            {"label": ("s", "_Word Wrap"), "action": ("s", "win.wrap")},
            {":section": ("(uu)", (2, 0))},
        ],
        (2, 0): [{"label": ("s", "Tab _Size"), ":submenu": ("(uu)", (2, 1))}],
        (2, 1): [
            {"label": ("s", "_2"), "action": ("s", "win.tab-size"), "target": ("i", 2)},
            {"label": ("s", "_8"), "action": ("s", "win.tab-size"), "target": ("i", 8)},
            {"label": ("s", "Dark"), "action": ("s", "app.dark")},
        ],
    }
    found = gmenu.ticks(menus, {"dark": True}, {"wrap": False, "tab-size": 8, "file.new": None})
    assert found == {
        ("Document", "Word Wrap"): False,
        ("Document", "Tab Size", "2"): False,
        ("Document", "Tab Size", "8"): True,
        ("Document", "Tab Size", "Dark"): True,
    }
    assert gmenu.strip_mnemonic("Save __As") == "Save _As"
    assert gmenu.object_path("org.xfce.mousepad") == "/org/xfce/mousepad"
    assert gmenu.object_path("org.gnome.text-editor") == "/org/gnome/text_editor"
    eight = node("/8", Role.MENU_ITEM, "8      ", states=SHOWING)
    ticked = node("/c", Role.CHECK_MENU_ITEM, "Wrap", states=SHOWING)  # reports its own tick
    sub = node("/t", Role.MENU, "Tab Size      ", eight, ticked, states=SHOWING)
    bar = node("/bar", Role.MENU_BAR, "", node("/d", Role.MENU, "Document", sub))
    window = node("/w", Role.FRAME, "M", bar, node("/x", Role.MENU_ITEM, "Not in a menu bar"))
    assert gmenu.unknown_ticks([window]) == [((APP, "/8"), ("Document", "Tab Size", "8"))]
