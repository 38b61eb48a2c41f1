"""GTK 4 widgets as the screen shows them, on real apps (issue 22, section 5).

Three GTK 4.8 apps on one private desktop, driven through the AT-SPI server as a client would,
checked on the tree and, where it helps, on the screenshot read back with tesseract:

* the GTK 4 Widget Factory: toggle buttons that are pressed say ``Value: 1`` (GTK 4.8 gives
  them the role of a push button); the pages of its stack that are not shown are not listed,
  though GTK keeps their rectangles; a click on a page tab answers with the new page;
* GTK Demo's drop-downs (``gtk4-demo --run=dropdown``): a drop-down shows its chosen item as
  its value, and the items of its open list carry their labels;
* GNOME Clocks: a tab of its view switcher answers with the new tab selected (the reply, not
  the next observation), and the World page's empty state ("Add World Clock") is gone from
  the tree once a clock was added, as it is from the screen;
* the Widget Factory's About dialog, a modal GTK 4 ``filler`` that never says ``showing``, is
  listed first with its buttons (last: it stays open).

One of the issue's cases needs a change outside the tree (the click of an item in a GTK 4
popover, in ``actions.py``): it is here as a strict expected failure, so that it passes the
day that change lands and the mark must go.
"""

from __future__ import annotations

import re
import subprocess
from collections.abc import Iterator

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import ToolResult
from mcpclient import Server, serving
from screenread import observe_until, ok

pytestmark = pytest.mark.slow

FACTORY = "org.gtk.WidgetFactory4"
DEMO = "GTK Demo"
CLOCKS = "Clocks"


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    apps = ("gtk4-widget-factory", "gtk4-demo", "gnome-clocks", "tesseract")
    with desktop_or_skip(require=apps) as desk:
        desk.env["XDG_DATA_HOME"] = str(desk.root / "data")
        desk.spawn(["gtk4-widget-factory"], "widget-factory")
        desk.spawn(["gtk4-demo", "--run=dropdown"], "gtk4-demo")
        desk.spawn(["gnome-clocks"], "gnome-clocks")
        yield desk


@pytest.fixture(scope="module")
def server(desktop: Desktop) -> Iterator[Server]:
    with serving(desktop.env, desktop.root) as s:
        yield s


def index(text: str, pattern: str) -> str:
    """The index of the first element line matching ``pattern`` (after the index)."""
    found = re.search(rf"^\t*(\d+) {pattern}", text, re.MULTILINE)
    assert found, f"no element matching {pattern!r} in\n{text}"
    return found.group(1)


def click(server: Server, app: str, text: str, pattern: str) -> ToolResult:
    return ok(server.call("click", 30, app=app, element_index=index(text, pattern)))


def seen(result: ToolResult) -> str:
    """The screenshot's words, lower case, as tesseract reads them."""
    assert result.images, f"no screenshot: {result.text[:300]}"
    _, png = result.images[-1]
    return (
        subprocess.run(
            ["tesseract", "stdin", "stdout", "--psm", "11"],
            input=png,
            capture_output=True,
            check=True,
            timeout=60,
        )
        .stdout.decode()
        .lower()
    )


# --- the Widget Factory -------------------------------------------------------------------


def test_pressed_toggle_buttons_say_so(server: Server) -> None:
    """The third and fourth toggle buttons start pressed: Value 1; pressing the first by
    index answers with it pressed, and pressing it again with it released. (The insensitive
    copies follow their neighbours' state through a binding, so only the first is checked.)"""

    def toggles(text: str) -> list[str]:
        pattern = r"button (?:\(disabled\) )?togglebutton(, Value: 1)?$"
        return re.findall(pattern, text, re.M)

    state = observe_until(server, FACTORY, r"tab \(selected\) Page _1")
    assert toggles(state.text) == ["", "", ", Value: 1", ", Value: 1"], state.text[:3000]
    pressed = click(server, FACTORY, state.text, "button togglebutton$")
    assert toggles(pressed.text)[0] == ", Value: 1", pressed.text[:3000]
    released = click(server, FACTORY, pressed.text, "button togglebutton, Value: 1$")
    assert toggles(released.text)[0] == "", released.text[:3000]


def test_only_the_stack_page_on_screen_is_listed(server: Server) -> None:
    """Page 1 shows, pages 2 and 3 are not listed (their page objects neither); a click on
    the Page 2 tab answers with page 2 selected and drawn, page 1's widgets gone from the
    tree although GTK keeps their rectangles; back to page 1 the other way round."""
    state = observe_until(server, FACTORY, r"tab \(selected\) Page _1")
    assert "comboboxentry" in state.text
    assert not re.search(r"container Page _[23]", state.text)
    lines = state.text.splitlines()
    for at, line in enumerate(lines):  # a notebook's page objects: only the shown page, filled
        if re.fullmatch(r"\t*\d+ container Tab", line):
            depth = len(line) - len(line.lstrip("\t"))
            assert len(lines[at + 1]) - len(lines[at + 1].lstrip("\t")) > depth, line
    page2 = click(server, FACTORY, state.text, r"tab \(selectable\) Page _2")
    assert "tab (selected) Page _2" in page2.text
    assert "Translation updates" in page2.text
    assert "comboboxentry" not in page2.text and "container Page _1" not in page2.text
    assert "translation" in seen(page2)
    page1 = click(server, FACTORY, page2.text, r"tab \(selectable\) Page _1")
    assert "tab (selected) Page _1" in page1.text and "comboboxentry" in page1.text
    assert "Translation updates" not in page1.text


# --- GTK Demo's drop-downs -----------------------------------------------------------------


def open_first_drop_down(server: Server) -> ToolResult:
    state = observe_until(server, DEMO, r"pop up button Value: ")
    found = re.search(r"^\t*\d+ pop up button Value: 1 minute\n\t*(\d+) button", state.text, re.M)
    assert found, state.text
    return ok(server.call("click", 30, app=DEMO, element_index=found.group(1)))


def test_a_drop_down_shows_its_value_and_names_its_items(server: Server) -> None:
    """Every drop-down says what it shows; its open list names each item by its label, the
    chosen one selected, as drawn."""
    state = observe_until(server, DEMO, r"pop up button Value: ")
    values = re.findall(r"pop up button Value: (.+)$", state.text, re.M)
    assert values == ["1 minute", "1 minute", "DejaVu Sans Mono", "Digital Output"], values
    opened = open_first_drop_down(server)
    items = re.findall(r"^\t*\d+ row (?:\((selected|selectable)\) )?(.+)$", opened.text, re.M)
    assert [name for _, name in items] == ["1 minute", "2 minutes", "5 minutes", "20 minutes"]
    assert items[0][0] == "selected"
    assert "minutes" in seen(opened)
    closed = ok(server.call("press_key", 30, app=DEMO, key="Escape"))
    assert "row 2 minutes" not in closed.text


def test_a_drop_down_item_clicked_by_index_is_the_one_chosen(server: Server) -> None:
    """The third item (5 minutes) clicked by index becomes the drop-down's value."""
    opened = open_first_drop_down(server)
    chosen = click(server, DEMO, opened.text, r"row (?:\(\w+\) )?5 minutes$")
    try:
        assert "pop up button Value: 5 minutes" in chosen.text, chosen.text[:1500]
    finally:
        if "row 5 minutes" in chosen.text:
            server.call("press_key", 30, app=DEMO, key="Escape")


# --- GNOME Clocks ----------------------------------------------------------------------------


def test_clocks_tabs_answer_with_the_new_page_and_hidden_pages_go(server: Server) -> None:
    """A view-switcher tab clicked by index: the reply shows it selected and its page, and
    not the page it replaced (GTK keeps that one's rectangle). After a world clock is added,
    the empty state ("Add World Clock") is gone from the tree as from the screen."""
    state = observe_until(server, CLOCKS, r"tab \(selected\) World")
    assert "button Add World Clock" in state.text
    stopwatch = click(server, CLOCKS, state.text, r"tab \(selectable\) Stopwatch")
    assert "tab (selected) Stopwatch" in stopwatch.text, stopwatch.text[:3000]
    assert "button Start" in stopwatch.text
    assert "Add World Clock" not in stopwatch.text and "WorldFace" not in stopwatch.text
    world = click(server, CLOCKS, stopwatch.text, r"tab \(selectable\) World")
    assert "tab (selected) World" in world.text and "button Add World Clock" in world.text
    assert "button Start" not in world.text
    dialog = click(server, CLOCKS, world.text, "button Add World Clock")
    field = index(dialog.text, r"text field \(settable, string\)")
    ok(server.call("set_value", 30, app=CLOCKS, element_index=field, value="Berlin"))
    found = observe_until(server, CLOCKS, r"row Berlin Germany")
    chosen = click(server, CLOCKS, found.text, "row Berlin Germany")
    added = click(server, CLOCKS, chosen.text, r"button Add$")
    assert "Add a New World Clock" not in added.text
    assert re.search(r"row \((?:selectable|selected)\) Berlin$", added.text, re.M), added.text
    assert "Add World Clock" not in added.text
    assert "add world clock" not in seen(added)


# --- last: a modal dialog stays open --------------------------------------------------------


def test_the_about_dialog_is_listed_with_its_buttons(server: Server) -> None:
    """Menu > About opens a modal dialog: the reply lists it first, with its Close button."""
    state = observe_until(server, FACTORY, r"tab \(selected\) Page _1")
    header = re.search(
        r"^\t*\d+ tab \(selectable\) Page _3\n(?:.*\n)*?\t*\d+ button\n\t*(\d+) button",
        state.text,
        re.M,
    )
    assert header, state.text[-1500:]
    menu = ok(server.call("click", 30, app=FACTORY, element_index=header.group(1)))
    about = click(server, FACTORY, menu.text, "menu item About Widget Factory")
    assert re.match(r"(?s).*^0 dialog About GTK Widget Factory", about.text, re.M), about.text[:800]
    assert re.search(r"button Close", about.text)
