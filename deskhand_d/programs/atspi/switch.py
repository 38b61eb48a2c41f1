"""The session's accessibility switch: on while this server runs, as it was found afterwards.

What this owns: reading and setting ``org.a11y.Status.IsEnabled`` on the session bus's
``org.a11y.Bus`` object, the switch screen readers turn on, and putting it back as it was.

Why: Firefox, Thunderbird and other Gecko apps, Qt apps and LibreOffice join the accessibility
bus only while that switch is on (Firefox even turns its accessibility on while running when it
flips). A desktop where no screen reader ever ran has it off, and such apps then answer
nothing: every observation would wait for a window that never appears. The launcher stores the
switch in the desktop's settings (GNOME's ``toolkit-accessibility``), so it outlives the
session: :meth:`Switch.restore` turns it back off when this server stops, if it was off when
the server found it. The switch only makes apps answer a reader; it changes nothing a person
sees.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

import trio
from jeepney import DBusAddress, Properties
from jeepney.io.trio import DBusRouter

from .bus import BusError, await_reply, connect_address

_A11Y: Final = DBusAddress("/org/a11y/bus", "org.a11y.Bus", "org.a11y.Status")
_LIMIT: Final = 2.0


async def _exchange(address: str, value: bool | None) -> bool:
    """Set the switch to ``value`` (None: only read it); returns what it was before."""
    conn = await connect_address(address)
    try:
        async with trio.open_nursery() as nursery:
            router = DBusRouter(conn)
            await router.start(nursery)
            try:
                status = Properties(_A11Y)
                (was,) = await await_reply(router, status.get("IsEnabled"), _LIMIT)
                if value is not None and bool(was[1]) != value:
                    await await_reply(router, status.set("IsEnabled", "b", value), _LIMIT)
                return bool(was[1])
            finally:
                await router.aclose()
    finally:
        await conn.aclose()


class Switch:
    """Turns the switch on once per server and remembers whether it did."""

    def __init__(self, env: Mapping[str, str]) -> None:
        self._address = env.get("DBUS_SESSION_BUS_ADDRESS", "")
        self.checked = False
        self.turned_on = False  # by us: restore turns it off again
        self.turned_on_at: float | None = None  # trio clock
        self.problem = ""  # why the switch could not be read or set

    async def ensure_on(self) -> None:
        """Turn the switch on if it is off (once; later calls return at once). Never raises:
        a session without the launcher, or one that refuses, is noted in ``problem``."""
        if self.checked or not self._address:
            return
        self.checked = True
        try:
            was = await _exchange(self._address, True)
        except BusError as exc:
            self.problem = f"the accessibility switch could not be turned on ({exc})"
            return
        if not was:
            self.turned_on = True
            self.turned_on_at = trio.current_time()

    def just_turned_on(self, within: float) -> bool:
        """Whether this server turned the switch on less than ``within`` seconds ago."""
        at = self.turned_on_at
        return at is not None and trio.current_time() - at < within

    async def restore(self) -> None:
        """Turn the switch off again if this server turned it on."""
        if not self.turned_on:
            return
        self.turned_on = False
        try:
            await _exchange(self._address, False)
        except BusError:
            pass  # the session is ending or gone: nothing left to restore
