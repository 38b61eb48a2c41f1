"""Reading trees against an in-memory accessibility bus: vanishing nodes, the cache, timeouts."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
import trio

from deskhand_d.programs.atspi import bounded, render
from deskhand_d.programs.atspi import bus as busmod
from deskhand_d.programs.atspi.model import ACCESSIBLE, ACTION, COMPONENT, TEXT
from deskhand_d.programs.atspi.roles import Role, State, bits
from deskhand_d.programs.atspi.walk import Facts, parse_cache_items, read_tree

APP = ":1.7"
SHOWN = bits(State.VISIBLE, State.SENSITIVE)


class FakeBus:
    """Objects as dicts; ``gone`` paths raise Gone (the object vanished); counts calls."""

    def __init__(
        self,
        objects: dict[str, dict[str, Any]],
        made: Callable[[str], dict[str, Any] | None] | None = None,
    ) -> None:
        self.objects = objects
        self.made = made  # objects made on demand (a huge table's cells)
        self.gone: set[str] = set()
        self.gone_after_listing: set[str] = set()
        self.silent: set[str] = set()  # objects whose app does not answer in time
        self.calls: list[tuple[str, str]] = []

    def _obj(self, ref: tuple[str, str]) -> dict[str, Any]:
        if ref[1] in self.gone:
            raise busmod.Gone("org.freedesktop.DBus.Error.UnknownObject")
        if ref[1] in self.silent:
            raise busmod.BusTimeout("no answer in time")
        if ref[1] not in self.objects and self.made is not None:
            made = self.made(ref[1])
            if made is not None:
                self.objects[ref[1]] = made
        if ref[1] not in self.objects:
            raise busmod.Gone("org.freedesktop.DBus.Error.UnknownObject")
        return self.objects[ref[1]]

    async def call(self, ref, iface, method, signature=None, body=(), *, limit=None):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        self.calls.append((ref[1], method))
        if method == "GetChildren":
            kids = [(APP, k) for k in self._obj(ref).get("children", [])]
            self.gone |= self.gone_after_listing  # they vanish right after being listed
            return (kids,)
        o = self._obj(ref)
        if method in o:  # anything else an object answers: a function of the arguments
            return (o[method](*body),)
        if method == "GetRole":
            return (o["role"],)
        if method == "GetState":
            return ([o.get("states", SHOWN) & 0xFFFFFFFF, o.get("states", SHOWN) >> 32],)
        if method == "GetInterfaces":
            return (sorted(o.get("ifaces", [ACCESSIBLE])),)
        if method == "GetActions":
            return ([(a, "", "") for a in o.get("actions", [])],)
        if method == "GetText":
            start, end = body
            assert 0 <= end <= len(o.get("text", "")), "text asked past its end"
            return (o.get("text", "")[start:end],)
        if method == "GetExtents":
            if "box" not in o:  # no Component interface
                raise busmod.Gone("org.freedesktop.DBus.Error.UnknownMethod")
            return (o["box"],)
        raise AssertionError(method)

    async def get_many(self, ref, iface, names):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        self.calls.append((ref[1], "GetMany"))
        o = self._obj(ref)
        props = {
            "Name": o.get("name", ""),
            "Description": "",
            "ChildCount": o.get("count", len(o.get("children", []))),
        }
        return {k: props[k] for k in names}

    async def get(self, ref, iface, name):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        self.calls.append((ref[1], name))
        o = self._obj(ref)
        if name == "CharacterCount":
            return len(o.get("text", ""))
        if name == "ChildCount":
            return o.get("count", len(o.get("children", [])))
        if name in o:
            return o[name]
        raise AssertionError(name)


def objects() -> dict[str, dict[str, Any]]:
    return {
        "/w": {"role": Role.FRAME, "name": "Win", "children": ["/p", "/hidden"]},
        "/p": {"role": Role.PANEL, "children": ["/b1", "/b2", "/t"]},
        "/b1": {
            "role": Role.PUSH_BUTTON,
            "name": "One",
            "ifaces": [ACCESSIBLE, ACTION],
            "actions": ["click"],
        },
        "/b2": {
            "role": Role.PUSH_BUTTON,
            "name": "Two",
            "ifaces": [ACCESSIBLE, ACTION],
            "actions": ["click"],
        },
        "/t": {"role": Role.TEXT, "ifaces": [ACCESSIBLE, TEXT], "text": "42"},
        "/hidden": {"role": Role.PANEL, "states": bits(State.SENSITIVE), "children": ["/b1"]},
    }


async def test_live_walk_keeps_order_and_drops_hidden() -> None:
    """Children stay in order, invisible subtrees are left out, details are read."""
    fake = FakeBus(objects())
    root, walk = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and walk.complete and walk.vanished == 0
    assert [c.ref[1] for c in root.children] == ["/p"]
    panel = root.children[0]
    assert [c.name for c in panel.children] == ["One", "Two", ""]
    assert panel.children[0].actions == ("click",)
    assert panel.children[2].text == "42"


async def test_vanished_nodes_are_skipped() -> None:
    """An object that disappears between being listed and being read is simply absent."""
    fake = FakeBus(objects())
    fake.gone_after_listing = {"/b2"}
    root, walk = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None
    assert [c.name for c in root.children[0].children] == ["One", ""]
    assert walk.vanished == 1


async def test_vanished_window_raises() -> None:
    fake = FakeBus(objects())
    fake.gone = {"/w"}
    with pytest.raises(busmod.Gone):
        await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]


async def test_budget_stops_the_walk() -> None:
    fake = FakeBus(objects())
    root, walk = await read_tree(fake, (APP, "/w"), budget=3)  # type: ignore[arg-type]
    assert root is not None and not walk.complete


async def test_facts_spare_calls_on_the_next_walk() -> None:
    """Role, interfaces and action names are read once per object and remembered."""
    fake = FakeBus(objects())
    facts: dict[tuple[str, str], Facts] = {}
    await read_tree(fake, (APP, "/w"), facts=facts)  # type: ignore[arg-type]
    first = len(fake.calls)
    fake.calls.clear()
    await read_tree(fake, (APP, "/w"), facts=facts)  # type: ignore[arg-type]
    methods = {m for _, m in fake.calls}
    assert (
        "GetRole" not in methods and "GetInterfaces" not in methods and "GetActions" not in methods
    )
    assert len(fake.calls) < first


async def test_cache_path_reads_structure_from_one_call() -> None:
    """GTK 4's cache supplies the structure; only text is read live; stale parts are re-read."""
    fake = FakeBus(objects())

    def item(
        path: str,
        parent: str,
        index: int,
        count: int,
        role: int,
        name: str = "",
        ifaces=(ACCESSIBLE,),
    ):  # type: ignore[no-untyped-def]
        return (
            (APP, path),
            (APP, "/root"),
            (APP, parent),
            index,
            count,
            list(ifaces),
            name,
            role,
            "",
            [SHOWN, 0],
        )

    cache = parse_cache_items(
        [
            item("/b2", "/p", 1, 0, Role.PUSH_BUTTON, "Two"),
            item("/w", "/root", 0, 1, Role.FRAME, "Win"),
            item("/p", "/w", 0, 3, Role.PANEL),  # says 3 children, the cache knows 2: re-read
            item("/b1", "/p", 0, 0, Role.PUSH_BUTTON, "One"),
            item("/t", "/p", 2, 0, Role.TEXT, "", (ACCESSIBLE, TEXT)),
        ][:4]
    )
    assert cache.items[(APP, "/w")].children == ((APP, "/p"),)
    root, _ = await read_tree(fake, (APP, "/w"), cache=cache)  # type: ignore[arg-type]
    assert root is not None
    panel = root.children[0]
    assert [c.name for c in panel.children] == ["One", "Two", ""]
    assert panel.children[2].text == "42"
    live = {p for p, m in fake.calls if m in ("GetMany", "GetRole")}
    assert live == {"/t"}  # only the object missing from the cache was read in full


async def test_call_timeout_is_bus_timeout() -> None:
    """An application that never answers makes a call fail with BusTimeout, not hang."""

    class Silent:
        async def send_and_get_reply(self, message: object) -> object:
            await trio.sleep_forever()
            raise AssertionError

    with pytest.raises(busmod.BusTimeout):
        await busmod.await_reply(Silent(), object(), 0.05)  # type: ignore[arg-type]


async def test_missing_session_bus_is_unavailable() -> None:
    with pytest.raises(busmod.BusUnavailable, match="DBUS_SESSION_BUS_ADDRESS is not set"):
        await busmod.find_address({})
    assert await busmod.find_address({"AT_SPI_BUS_ADDRESS": "unix:path=/x"}) == "unix:path=/x"


# --- large containers, budgets, action names, stacked pages ---------------------------------

ROW_H = 20
VIEW = (0, 100, 400, 300)  # 15 rows of 20 px


def big_list(top: int, count: int, *, answers: bool = True) -> FakeBus:
    """A list that manages its descendants with ``count`` items, scrolled so that item
    ``top`` is the first one in view; items exist only when asked for."""

    def at_point(x: int, y: int, _coords: int) -> tuple[str, str]:
        if not answers:
            return ("", "/org/a11y/atspi/null")
        return (APP, f"/list/{top + (y - VIEW[1]) // ROW_H}")

    def made(path: str) -> dict[str, Any] | None:
        if not path.startswith("/list/"):
            return None
        i = int(path.rsplit("/", 1)[1])
        return {
            "role": Role.LIST_ITEM,
            "name": f"Item {i}",
            "box": (0, VIEW[1] + (i - top) * ROW_H, 400, ROW_H),
            "ifaces": [ACCESSIBLE, COMPONENT],
            "Parent": (APP, "/list"),
            "GetIndexInParent": lambda: i,
        }

    return FakeBus(
        {
            "/w": {
                "role": Role.FRAME,
                "box": (0, 0, 400, 500),
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/sc"],
            },
            "/sc": {
                "role": 49,
                "box": VIEW,
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/list"],
            },
            "/list": {
                "role": Role.LIST,
                "count": count,
                "states": SHOWN | bits(State.MANAGES_DESCENDANTS),
                "box": VIEW,
                "ifaces": [ACCESSIBLE, COMPONENT],
                "GetAccessibleAtPoint": at_point,
                "GetChildAtIndex": lambda i: (APP, f"/list/{i}"),
            },
        },
        made,
    )


async def test_a_huge_list_is_read_by_what_it_shows() -> None:
    """A list of a million items that manages its descendants is never listed: the items in
    view are found at its corners and read with a few around them; the rest are counted."""
    fake = big_list(5000, 1_000_000)
    root, walk = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and walk.complete
    assert ("/list", "GetChildren") not in fake.calls
    assert len(fake.calls) < 250
    lines = render.render(root).lines
    assert lines[2] == (
        "\t\t2 list Details: 999985 more items scrolled out of view (5000 above, 994985 below)"
    )
    assert [line.strip() for line in lines[3:]] == [
        f"{3 + k} row Item {5000 + k}" for k in range(15)
    ]


async def test_a_huge_list_that_cannot_place_its_view_is_read_from_the_top_and_cut() -> None:
    """No answer at the corners: the first items are read, the tree is reported cut."""
    fake = big_list(0, 1_000_000, answers=False)
    root, walk = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and not walk.complete
    assert ("/list", "GetChildren") not in fake.calls
    assert sum(1 for path, m in fake.calls if m == "GetChildAtIndex") == bounded.WINDOW


async def test_a_spreadsheet_is_read_by_its_visible_cells() -> None:
    """A table of 1,048,576 x 16,384 cells shows rows 100-114 and columns 2-5: those cells
    (and two rows around them, judged against the table's rectangle) are read through the
    Table interface, nothing else; everything else is counted by side."""
    rows, cols, row0, col0, cell_w = 1_048_576, 16_384, 100, 2, 100

    def made(path: str) -> dict[str, Any] | None:
        if not path.startswith("/sheet/"):
            return None
        r, c = (int(v) for v in path.split("/")[2:])
        return {
            "role": Role.TABLE_CELL,
            "name": f"R{r}C{c}",
            "box": (VIEW[0] + (c - col0) * cell_w, VIEW[1] + (r - row0) * ROW_H, cell_w, ROW_H),
            "ifaces": [ACCESSIBLE, COMPONENT],
            "Parent": (APP, "/sheet"),
            "GetIndexInParent": lambda: r * cols + c,
        }

    def at_point(x: int, y: int, _coords: int) -> tuple[str, str]:
        return (APP, f"/sheet/{row0 + (y - VIEW[1]) // ROW_H}/{col0 + (x - VIEW[0]) // cell_w}")

    fake = FakeBus(
        {
            "/w": {"role": Role.FRAME, "children": ["/sheet"]},
            "/sheet": {
                "role": Role.TABLE,
                "count": rows * cols,
                "states": SHOWN | bits(State.MANAGES_DESCENDANTS),
                "box": VIEW,
                "ifaces": [ACCESSIBLE, COMPONENT, bounded.TABLE],
                "NRows": rows,
                "NColumns": cols,
                "GetAccessibleAtPoint": at_point,
                "GetRowAtIndex": lambda i: i // cols,
                "GetColumnAtIndex": lambda i: i % cols,
                "GetAccessibleAt": lambda r, c: (APP, f"/sheet/{r}/{c}"),
            },
        },
        made,
    )
    root, walk = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and walk.complete
    sheet = root.children[0]
    names = [c.name for c in sheet.children]
    assert names[0] == "R100C2" and names[-1] == "R114C5" and len(names) == 15 * 4
    assert len(fake.calls) < 8 * 19 * 4 + 40  # a handful of calls per cell read
    above, below, left, right = sheet.clipped
    assert above == 98 * cols + 2 * 4  # unread rows, and the two read rows above the view
    assert left == 19 * 2 and right == 19 * (cols - 6)
    assert below == (rows - 117) * cols + 2 * 4


async def test_a_walk_stops_at_its_deadline() -> None:
    """Past the time budget nothing more is read (the window itself always is) and the walk
    says it is cut."""
    fake = FakeBus(objects())
    root, walk = await read_tree(fake, (APP, "/w"), time_budget=0)  # type: ignore[arg-type]
    assert root is not None and root.children == () and not walk.complete


async def test_action_names_are_read_by_index_when_the_list_lies() -> None:
    """Firefox answers GetActions with ';;' everywhere: the names come from GetName."""
    fake = FakeBus(
        {
            "/w": {"role": Role.FRAME, "children": ["/ok"]},
            "/ok": {
                "role": Role.PUSH_BUTTON,
                "name": "OK",
                "ifaces": [ACCESSIBLE, ACTION],
                "GetActions": lambda: [(";;", ";;", ";;")],
                "GetName": lambda i: ["press"][i],
            },
        }
    )
    root, _ = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and root.children[0].actions == ("press",)


def stack(picked: str) -> FakeBus:
    """A GTK 4 stack: three pages with the same rectangle (the world page keeps the one it
    had when it was swapped out), one wrapped in a page object without a rectangle; the
    stack answers ``picked`` at any point."""
    page = (0, 50, 400, 300)
    return FakeBus(
        {
            "/w": {
                "role": Role.FRAME,
                "box": (0, 0, 400, 350),
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/stack"],
            },
            "/stack": {
                "role": Role.PANEL,
                "box": page,
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/world", "/stop", "/wrap"],
                "GetAccessibleAtPoint": lambda x, y, c: (
                    (APP, picked) if picked else ("", "/org/a11y/atspi/null")
                ),
            },
            "/world": {
                "role": Role.FILLER,
                "name": "World",
                "box": page,
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/add"],
            },
            "/add": {
                "role": Role.PUSH_BUTTON,
                "name": "Add World Clock",
                "box": (10, 60, 90, 20),
                "ifaces": [ACCESSIBLE, COMPONENT],
            },
            "/stop": {
                "role": Role.FILLER,
                "name": "Stopwatch",
                "box": page,
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/lap"],
            },
            "/lap": {
                "role": Role.PUSH_BUTTON,
                "name": "Lap",
                "box": (10, 60, 90, 20),
                "ifaces": [ACCESSIBLE, COMPONENT],
                "Parent": (APP, "/stop"),
            },
            "/deep": {"role": Role.LABEL, "Parent": (APP, "/lap")},
            "/wrap": {"role": Role.PANEL, "name": "Timer page", "children": ["/timer"]},
            "/timer": {
                "role": Role.FILLER,
                "name": "Timer",
                "box": (0, 50, 400, 0),
                "ifaces": [ACCESSIBLE, COMPONENT],
            },
        }
    )


async def test_only_the_stack_page_on_screen_is_listed() -> None:
    """GTK 4 keeps a swapped-out page's rectangle: the stack is asked what lies in it (an
    object below the tree's leaves counts through its ancestors); a page object whose content
    has no area is left out too."""
    for picked in ("/lap", "/deep"):
        root, _ = await read_tree(stack(picked), (APP, "/w"))  # type: ignore[arg-type]
        assert root is not None
        text = "\n".join(render.render(root).lines)
        assert "Stopwatch" in text and "Lap" in text, text
        assert "World" not in text and "Timer" not in text, text


async def test_stacked_pages_are_all_kept_when_the_app_cannot_tell() -> None:
    """No answer at any point: nothing is guessed, both pages stay."""
    root, _ = await read_tree(stack(""), (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None
    text = "\n".join(render.render(root).lines)
    assert "World" in text and "Stopwatch" in text


async def test_a_cached_list_that_manages_its_descendants_is_read_by_window_too() -> None:
    """at-spi2-atk's cache counts a list that manages its descendants as -1 children and
    lists none: it is counted live and read by window, never listed (Mousepad's Open dialog
    on a folder of 3,000 files took 10-15 s and was cut at the node limit)."""
    fake = big_list(5000, 12_000)
    manages = bits(State.VISIBLE, State.SENSITIVE, State.MANAGES_DESCENDANTS)

    def item(path: str, parent: str, index: int, count: int, role: int, states: int = SHOWN):  # type: ignore[no-untyped-def]
        ifaces = [ACCESSIBLE, COMPONENT]
        return (
            (APP, path),
            (APP, "/app"),
            (APP, parent),
            index,
            count,
            ifaces,
            "",
            role,
            "",
            [states & 0xFFFFFFFF, states >> 32],
        )

    cache = parse_cache_items(
        [
            item("/w", "/app", 0, 1, Role.FRAME),
            item("/sc", "/w", 0, 1, 49),
            item("/list", "/sc", 0, -1, Role.LIST, manages),
        ]
    )
    root, walk = await read_tree(fake, (APP, "/w"), cache=cache)  # type: ignore[arg-type]
    assert root is not None and walk.complete
    assert ("/list", "GetChildren") not in fake.calls
    lines = render.render(root).lines
    assert "(5000 above, 6985 below)" in lines[2] and lines[3].endswith("row Item 5000")


async def test_an_object_that_does_not_answer_in_time_is_left_out_and_the_tree_cut() -> None:
    """A busy app leaves one object unanswered: the rest is listed, the walk says it is cut;
    the window itself not answering still fails the reading."""
    fake = FakeBus(objects())
    fake.silent = {"/b2"}
    root, walk = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None and not walk.complete
    assert [c.name for c in root.children[0].children] == ["One", ""]
    fake.silent = {"/w"}
    with pytest.raises(busmod.BusTimeout):
        await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]


async def test_a_drop_down_reads_its_choice_from_its_closed_list() -> None:
    """Chromium's select shows its chosen option nowhere but in its closed list's selection:
    the list is left out (not visible) yet asked what it has selected."""
    fake = FakeBus(
        {
            "/w": {"role": Role.FRAME, "children": ["/combo"]},
            "/combo": {
                "role": Role.COMBO_BOX,
                "name": "Colour",
                "box": (75, 170, 63, 19),
                "ifaces": [ACCESSIBLE, COMPONENT],
                "children": ["/menu"],
            },
            "/menu": {
                "role": Role.MENU,
                "states": bits(State.SENSITIVE),
                "children": ["/blue"],
                "GetSelectedChild": lambda i: (APP, "/blue"),
            },
            "/blue": {"role": Role.MENU_ITEM, "name": "Blue", "Name": "Blue"},
        }
    )
    root, _ = await read_tree(fake, (APP, "/w"))  # type: ignore[arg-type]
    assert root is not None
    combo = root.children[0]
    assert combo.children == () and combo.chosen == "Blue"
    assert render.render(root).lines[1] == "\t1 pop up button Colour, Value: Blue"
