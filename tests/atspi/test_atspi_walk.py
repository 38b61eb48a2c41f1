"""Reading trees against an in-memory accessibility bus: vanishing nodes, the cache, timeouts."""

from __future__ import annotations

from typing import Any

import pytest
import trio

from deskhand_d.backends.atspi import bus as busmod
from deskhand_d.backends.atspi.model import ACCESSIBLE, ACTION, TEXT
from deskhand_d.backends.atspi.roles import Role, State, bits
from deskhand_d.backends.atspi.walk import Facts, parse_cache_items, read_tree

APP = ":1.7"
SHOWN = bits(State.VISIBLE, State.SENSITIVE)


class FakeBus:
    """Objects as dicts; ``gone`` paths raise Gone (the object vanished); counts calls."""

    def __init__(self, objects: dict[str, dict[str, Any]]) -> None:
        self.objects = objects
        self.gone: set[str] = set()
        self.gone_after_listing: set[str] = set()
        self.calls: list[tuple[str, str]] = []

    def _obj(self, ref: tuple[str, str]) -> dict[str, Any]:
        if ref[1] in self.gone or ref[1] not in self.objects:
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

    async def get_all(self, ref, iface):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        self.calls.append((ref[1], "GetAll"))
        o = self._obj(ref)
        return {
            "Name": o.get("name", ""),
            "Description": "",
            "ChildCount": len(o.get("children", [])),
        }

    async def get(self, ref, iface, name):  # type: ignore[no-untyped-def]
        await trio.lowlevel.checkpoint()
        self.calls.append((ref[1], name))
        if name == "CharacterCount":
            return len(self._obj(ref).get("text", ""))
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
    live = {p for p, m in fake.calls if m in ("GetAll", "GetRole")}
    assert live == {"/t"}  # only the object missing from the cache was read in full


async def test_call_timeout_is_bus_timeout() -> None:
    """An application that never answers makes a call fail with BusTimeout, not hang."""

    class Silent:
        async def send_and_get_reply(self, message: object) -> object:
            await trio.sleep_forever()
            raise AssertionError

    with pytest.raises(busmod.BusTimeout):
        await busmod._reply(Silent(), object(), 0.05)  # type: ignore[arg-type]


async def test_missing_session_bus_is_unavailable() -> None:
    with pytest.raises(busmod.BusUnavailable, match="DBUS_SESSION_BUS_ADDRESS is not set"):
        await busmod.find_address({})
    assert await busmod.find_address({"AT_SPI_BUS_ADDRESS": "unix:path=/x"}) == "unix:path=/x"
