"""A remote-desktop session with GNOME's compositor: the D-Bus calls, nothing more.

What this owns: one connection to the session bus and, over it, Mutter's
``org.gnome.Mutter.RemoteDesktop`` session (keys by keysym, pointer buttons, wheel steps,
absolute pointer motion inside a stream) linked with an ``org.gnome.Mutter.ScreenCast``
session recording the primary monitor, whose stream pointer motion is measured in; and
screen casts on their own (:func:`screen_cast_only`) that record the window that has the
keyboard focus (``RecordWindow`` without a window id records the compositor's focus window:
the one place the compositor says which window keys go to) or a monitor. Each stream
announces its PipeWire node in ``PipeWireStreamAdded``.

The compositor adds a session's virtual keyboard and pointer while their first events already
arrive: the first key of a new session never reached GTK windows (6 of 6), typing right
after an app started lost the first three key events, and a click right after the first
pointer motion was lost in about half of the sessions. So :func:`warm_up` presses and
releases Shift, which does nothing by itself, and :func:`point_at` moves the pointer, each
followed by :data:`WAKE_S` before the first real event.

Errors: :class:`SeatUnavailable` when the compositor offers no such API (not GNOME, an old
Mutter, a session bus that refuses us) or a call fails.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Protocol

import trio
from jeepney import DBusAddress, HeaderFields, MatchRule, Properties, new_method_call
from jeepney.io.trio import DBusRouter

from .bus import BusError, await_reply, connect_address

RD_NAME: Final = "org.gnome.Mutter.RemoteDesktop"
SC_NAME: Final = "org.gnome.Mutter.ScreenCast"
_RD: Final = DBusAddress("/org/gnome/Mutter/RemoteDesktop", RD_NAME, RD_NAME)
_SC: Final = DBusAddress("/org/gnome/Mutter/ScreenCast", SC_NAME, SC_NAME)
_RD_SESSION: Final = f"{RD_NAME}.Session"
_SC_SESSION: Final = f"{SC_NAME}.Session"
_SC_STREAM: Final = f"{SC_NAME}.Stream"
CALL_LIMIT: Final = 5.0
XK_SHIFT_L: Final = 0xFFE1
WAKE_S: Final = 0.05
#: evdev button codes, as Mutter takes them.
BUTTONS: Final = {"left": 0x110, "right": 0x111, "middle": 0x112}


class SeatUnavailable(Exception):
    """The compositor's remote-desktop API cannot be used; the message says why."""


@dataclass(frozen=True, slots=True)
class Monitor:
    """A monitor's screen-cast stream: its PipeWire node and where the monitor sits."""

    node: int
    position: tuple[int, int]
    size: tuple[int, int]


@dataclass(frozen=True, slots=True)
class Stream:
    """A screen-cast stream: its object (pointer motion is measured inside it) and node."""

    path: str
    node: int


class SessionBus:
    """One connection to the session bus with its router running in ``nursery``."""

    def __init__(self, router: DBusRouter, conn: Any) -> None:
        self.router = router
        self._conn = conn

    @classmethod
    async def open(cls, env: Mapping[str, str], nursery: trio.Nursery) -> SessionBus:
        address = env.get("DBUS_SESSION_BUS_ADDRESS", "")
        if not address:
            raise SeatUnavailable("DBUS_SESSION_BUS_ADDRESS is not set: there is no session bus")
        try:
            conn = await connect_address(address, enable_fds=True)  # the portal hands one over
        except BusError as exc:
            raise SeatUnavailable(str(exc)) from None
        router = DBusRouter(conn)
        await router.start(nursery)
        return cls(router, conn)

    async def call(
        self,
        address: DBusAddress,
        method: str,
        signature: str | None = None,
        body: tuple[Any, ...] = (),
    ) -> tuple[Any, ...]:
        try:
            return await await_reply(
                self.router, new_method_call(address, method, signature, body), CALL_LIMIT
            )
        except BusError as exc:
            raise SeatUnavailable(f"{address.interface}.{method}: {exc}") from None

    async def get(self, address: DBusAddress, name: str) -> Any:
        try:
            (value,) = await await_reply(self.router, Properties(address).get(name), CALL_LIMIT)
        except BusError as exc:
            raise SeatUnavailable(f"{address.interface}.{name}: {exc}") from None
        return value[1]

    async def aclose(self) -> None:
        try:
            await self.router.aclose()
        finally:
            await self._conn.aclose()


class Kept:
    """What a kept remote-desktop session knows of itself: whether its keyboard and its
    pointer have had their first event (:func:`warm_up`, :func:`point_at`), and whether it
    was stopped."""

    def __init__(self) -> None:
        self.warm = False
        self.pointed = False
        self.closed = False


class RemoteSession(Kept):
    """A started Mutter remote-desktop session, with its linked screen cast recording the
    primary monitor (pointer motion is measured in that stream)."""

    def __init__(self, bus: SessionBus, rd: DBusAddress, stream: Stream, monitor: Monitor) -> None:
        super().__init__()
        self.bus = bus
        self._rd = rd
        self.stream = stream
        self.monitor = monitor

    @classmethod
    async def start(cls, bus: SessionBus) -> RemoteSession:
        """Create both sessions, record the primary monitor and start them (nothing is sent
        to any app)."""
        (rd_path,) = await bus.call(_RD, "CreateSession")
        rd = DBusAddress(rd_path, RD_NAME, _RD_SESSION)
        try:
            session_id = await bus.get(rd, "SessionId")
            (sc_path,) = await bus.call(
                _SC, "CreateSession", "a{sv}", ({"remote-desktop-session-id": ("s", session_id)},)
            )
            sc = DBusAddress(sc_path, SC_NAME, _SC_SESSION)
            with bus.router.filter(_ADDED) as queue:
                (path,) = await bus.call(sc, "RecordMonitor", "sa{sv}", ("", {}))
                await bus.call(rd, "Start")
                node = await _node_of(queue, path)
            params = await bus.get(DBusAddress(path, SC_NAME, _SC_STREAM), "Parameters")
        except BaseException:
            with trio.CancelScope(shield=True):
                try:
                    await bus.call(rd, "Stop")
                except SeatUnavailable:
                    pass
            raise
        position = params.get("position", ("(ii)", (0, 0)))[1]
        size = params.get("size", ("(ii)", (0, 0)))[1]
        monitor = Monitor(node, (int(position[0]), int(position[1])), (int(size[0]), int(size[1])))
        return cls(bus, rd, Stream(path, node), monitor)

    async def pipewire_fd(self) -> int | None:
        """None: Mutter's streams are read through the session's own PipeWire."""
        return None

    async def key(self, keysym: int, down: bool) -> None:
        await self.bus.call(self._rd, "NotifyKeyboardKeysym", "ub", (keysym, down))

    async def move(self, x: float, y: float) -> None:
        """The pointer to ``(x, y)`` of the monitor's stream."""
        await self.bus.call(
            self._rd, "NotifyPointerMotionAbsolute", "sdd", (self.stream.path, x, y)
        )

    async def button(self, code: int, down: bool) -> None:
        await self.bus.call(self._rd, "NotifyPointerButton", "ib", (code, down))

    async def wheel(self, axis: int, steps: int) -> None:
        """``axis`` 0 vertical, 1 horizontal; positive steps scroll down or right."""
        await self.bus.call(self._rd, "NotifyPointerAxisDiscrete", "ui", (axis, steps))

    async def stop(self) -> None:
        if self.closed:
            return
        self.closed = True
        try:
            await self.bus.call(self._rd, "Stop")
        except SeatUnavailable:
            pass  # already gone with the compositor or the bus


_ADDED: Final = MatchRule(type="signal", interface=_SC_STREAM, member="PipeWireStreamAdded")


async def _node_of(queue: Any, path: str) -> int:
    """The PipeWire node announced for stream ``path`` (other streams' news is skipped)."""
    with trio.move_on_after(CALL_LIMIT):
        while True:
            signal = await queue.receive()
            if signal.header.fields.get(HeaderFields.path) == path:
                return int(signal.body[0])
    raise SeatUnavailable("the compositor announced no stream for the focused window")


async def screen_cast_only(bus: SessionBus, *, monitor: bool = False) -> tuple[DBusAddress, Stream]:
    """A screen-cast session on its own (for pictures, no input) recording the focus window,
    or with ``monitor`` the primary monitor; the caller stops it with
    :func:`stop_screen_cast`."""
    (path,) = await bus.call(_SC, "CreateSession", "a{sv}", ({},))
    session = DBusAddress(path, SC_NAME, _SC_SESSION)
    try:
        with bus.router.filter(_ADDED) as queue:
            if monitor:
                (stream_path,) = await bus.call(session, "RecordMonitor", "sa{sv}", ("", {}))
            else:
                (stream_path,) = await bus.call(session, "RecordWindow", "a{sv}", ({},))
            await bus.call(session, "Start")
            return session, Stream(stream_path, await _node_of(queue, stream_path))
    except BaseException:
        with trio.CancelScope(shield=True):
            await stop_screen_cast(bus, session)
        raise


async def stop_screen_cast(bus: SessionBus, session: DBusAddress) -> None:
    try:
        await bus.call(session, "Stop")
    except SeatUnavailable:
        pass


async def offered(bus: SessionBus) -> dict[str, int]:
    """The compositor's remote-desktop and screen-cast API versions (empty where absent)."""
    out: dict[str, int] = {}
    for name, address in ((RD_NAME, _RD), (SC_NAME, _SC)):
        try:
            out[name] = int(await bus.get(address, "Version"))
        except SeatUnavailable:
            continue
    return out


class _Sender(Protocol):
    warm: bool
    pointed: bool

    async def key(self, keysym: int, down: bool) -> None: ...

    async def move(self, x: float, y: float) -> None: ...


async def warm_up(sender: _Sender) -> None:
    """Spend a session's first key event on Shift alone (see the module notes), once."""
    if sender.warm:
        return
    await sender.key(XK_SHIFT_L, True)
    await sender.key(XK_SHIFT_L, False)
    await trio.sleep(WAKE_S)
    sender.warm = True


async def point_at(sender: _Sender, x: float, y: float) -> None:
    """The pointer to ``(x, y)`` as a session's first pointer event. The compositor takes a
    new virtual pointer's first event in a while: a button pressed right after it was lost in
    about half of the sessions, and in none of 8 with :data:`WAKE_S` between. The first event
    lands one pixel beside the point, so that the second one moves."""
    await sender.move(x + (1 if x < 1 else -1), y)
    await trio.sleep(WAKE_S)
    await sender.move(x, y)
