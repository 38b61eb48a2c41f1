"""Ticks of menu items that the accessibility tree does not report, from the app's own menus.

What this owns: reading whether a menu item is checked (a check item ticked, a radio item
chosen) from the menu model and actions a GTK application publishes on the session bus, for
items whose accessible object says nothing about it.

Why: a GTK 3 menu built from a ``GMenuModel`` can show check and radio items as plain menu
items to accessibility (Mousepad's Document > Tab Size > 8 is ticked on screen, yet its object
has the role ``menu item`` and no ``checked`` state). Every ``GtkApplication`` publishes its menu
bar (``org.gtk.Menus`` at ``<app path>/menus/menubar``) and its actions with their states
(``org.gtk.Actions`` at the app path for ``app.*`` and at ``<app path>/window/<n>`` for
``win.*``) on the session bus, for desktop shells to draw the menus themselves. An item whose
action has a state is ticked when the state is true (a boolean action) or equals the item's
target (a radio group).

Items are matched to tree elements by their label path: the titles of the menus above them
and their own label, mnemonic underscores removed (``_Document`` > ``Tab _Size`` > ``8``).
Anything unexpected (no such application on the bus, another process owning the name, a
timeout) gives no ticks: the tree then shows what accessibility says, never a guess.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

import trio
from jeepney import DBusAddress, MessageType, new_method_call
from jeepney.io.trio import DBusRouter, open_dbus_connection

from . import roles
from .model import Node, Ref
from .roles import Role

#: How long reading the menus may take before the observation goes on without them.
TIME_LIMIT: Final = 1.0
_DBUS: Final = DBusAddress("/org/freedesktop/DBus", "org.freedesktop.DBus", "org.freedesktop.DBus")
_MENU_ITEM_ROLES: Final = frozenset({Role.MENU_ITEM, Role.CHECK_MENU_ITEM, Role.RADIO_MENU_ITEM})

#: One menu of the model: ``(group, menu)`` -> its items (label, action, target, links).
Menus = Mapping[tuple[int, int], Sequence[Mapping[str, Any]]]
#: Action name -> its state (None for a stateless action).
States = Mapping[str, Any]
Path = tuple[str, ...]


def strip_mnemonic(label: str) -> str:
    """``_Document`` -> ``Document``; ``__`` stands for one underscore. Pure."""
    return label.replace("__", "\0").replace("_", "").replace("\0", "_").strip()


def _plain(value: Any) -> Any:
    """jeepney gives a variant as ``(signature, value)``: the value alone."""
    if isinstance(value, tuple) and len(value) == 2 and isinstance(value[0], str):
        return value[1]
    return value


def ticks(menus: Menus, app_states: States, win_states: States) -> dict[Path, bool]:
    """Label path -> ticked, for every item of the menu bar model whose action has a state.

    Pure. Sections are part of the menu they are in; a submenu adds its label to the path.
    """
    out: dict[Path, bool] = {}

    def walk(key: tuple[int, int], path: Path, depth: int) -> None:
        if depth > 16:  # a model that links back to itself
            return
        for item in menus.get(key, ()):
            label = strip_mnemonic(str(_plain(item.get("label", ""))))
            section = _plain(item.get(":section"))
            submenu = _plain(item.get(":submenu"))
            if section is not None:
                walk((int(section[0]), int(section[1])), path, depth + 1)
                continue
            if submenu is not None:
                walk((int(submenu[0]), int(submenu[1])), (*path, label), depth + 1)
                continue
            action = str(_plain(item.get("action", "")))
            scope, _, name = action.partition(".")
            states = app_states if scope == "app" else win_states if scope == "win" else {}
            if name not in states or states[name] is None:
                continue
            state = states[name]
            target = item.get("target")
            if target is not None:
                out[(*path, label)] = state == _plain(target)
            elif isinstance(state, bool):
                out[(*path, label)] = state

    walk((0, 0), (), 0)
    return out


def menu_paths(root: Node) -> Iterator[tuple[Ref, Path]]:
    """``(ref, label path)`` of every menu item under a menu bar in ``root``'s tree. Pure.

    The path is the labels of the menus above the item (GTK 3 gives a menu title and a submenu
    item the role ``menu``) and its own."""
    stack: list[tuple[Node, Path, bool]] = [(root, (), False)]
    while stack:
        node, path, in_menus = stack.pop()
        label = roles.display_name(node.name)
        if in_menus and node.role in _MENU_ITEM_ROLES:
            yield node.ref, (*path, label)
        below = path
        inside = in_menus or node.role == Role.MENU_BAR
        if node.role == Role.MENU and inside:
            below = (*path, label)
        stack.extend((child, below, inside) for child in node.children)


def unknown_ticks(roots: Sequence[Node]) -> list[tuple[Ref, Path]]:
    """The menu items on screen whose tick accessibility does not report. Pure."""
    out = []
    for root in roots:
        for ref, path in menu_paths(root):
            node = _find(root, ref)
            if node is not None and not (
                node.role in roles.CHECKABLE_ROLES
                or node.has(roles.State.CHECKABLE)
                or node.has(roles.State.CHECKED)
            ):
                out.append((ref, path))
    return out


def _find(root: Node, ref: Ref) -> Node | None:
    return next((n for _, n, _ in root.walk() if n.ref == ref), None)


def object_path(app_id: str) -> str:
    """GApplication's object path for an application id (``org.xfce.mousepad`` ->
    ``/org/xfce/mousepad``; ``-`` becomes ``_``). Pure."""
    return "/" + app_id.replace(".", "/").replace("-", "_")


async def _call(router: DBusRouter, address: DBusAddress, method: str, *body: Any) -> Any:
    signature = {"GetConnectionUnixProcessID": "s", "Start": "au", "End": "au"}.get(method)
    reply = await router.send_and_get_reply(new_method_call(address, method, signature, body))
    if reply.header.message_type == MessageType.error:
        raise LookupError(method)
    return reply.body


async def _states(router: DBusRouter, name: str, path: str) -> dict[str, Any]:
    (described,) = await _call(router, DBusAddress(path, name, "org.gtk.Actions"), "DescribeAll")
    out: dict[str, Any] = {}
    for action, (_enabled, _param, state) in described.items():
        out[str(action)] = _plain(state[0]) if state else None
    return out


async def _menus(router: DBusRouter, name: str, path: str) -> dict[tuple[int, int], Any]:
    address = DBusAddress(path, name, "org.gtk.Menus")
    menus: dict[tuple[int, int], Any] = {}
    wanted, started = [0], set()
    while wanted:
        (groups,) = await _call(router, address, "Start", wanted)
        started.update(wanted)
        found: set[int] = set()
        for group, menu, items in groups:
            menus[(int(group), int(menu))] = items
            for item in items:
                for link in (":section", ":submenu"):
                    if link in item:
                        found.add(int(_plain(item[link])[0]))
        wanted = sorted(found - started)
    try:
        await _call(router, address, "End", sorted(started))
    except LookupError:
        pass
    return menus


async def _windows(router: DBusRouter, name: str, path: str) -> list[str]:
    address = DBusAddress(path + "/window", name, "org.freedesktop.DBus.Introspectable")
    (xml,) = await _call(router, address, "Introspect")
    return [f"{path}/window/{n}" for n in re.findall(r'<node name="([0-9]+)"', str(xml))]


async def read_ticks(env: Mapping[str, str], app_ids: Sequence[str], pid: int) -> dict[Path, bool]:
    """Label path -> ticked from the menu bar that process ``pid`` publishes under one of
    ``app_ids``; empty when it publishes none (or anything goes wrong, or it takes too long)."""
    address = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    if not address or not app_ids:
        return {}
    with trio.move_on_after(TIME_LIMIT):
        try:
            conn = await open_dbus_connection(address)
        except Exception:  # no session bus to ask: no ticks
            return {}
        try:
            async with conn.router() as router:
                for app_id in app_ids:
                    try:
                        (owner_pid,) = await _call(
                            router, _DBUS, "GetConnectionUnixProcessID", app_id
                        )
                    except LookupError:
                        continue
                    if int(owner_pid) != pid:
                        continue  # someone else's process holds the name
                    path = object_path(app_id)
                    menus = await _menus(router, app_id, path + "/menus/menubar")
                    app_states = await _states(router, app_id, path)
                    win_states: dict[str, Any] = {}
                    for window in await _windows(router, app_id, path):
                        for action, state in (await _states(router, app_id, window)).items():
                            win_states.setdefault(action, state)
                    return ticks(menus, app_states, win_states)
        except (LookupError, OSError, ValueError, KeyError, TypeError, IndexError):
            return {}
        finally:
            await conn.aclose()
    return {}
