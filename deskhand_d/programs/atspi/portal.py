"""A remote-desktop session through the desktop portal, which asks the person first.

What this owns: ``org.freedesktop.portal.RemoteDesktop`` with a linked
``org.freedesktop.portal.ScreenCast`` source on the session bus: creating the session, asking
for keyboard and pointer and for one monitor to share, starting it (the desktop shows its own
dialog, and the person chooses), and then keys, pointer buttons, wheel steps and absolute
pointer motion in the shared monitor's stream, plus the PipeWire remote the stream is read
through. The person's approval is kept for later runs where the portal can keep it
(RemoteDesktop version 2 and later: a restore token, stored owner-only); version 1 portals
ask again each time the backend starts, and :attr:`PortalSession.remembered` says which.

Every portal request answers later, in a ``Response`` signal on its request object: 0 means
granted, 1 that the person said no, 2 that the dialog went away otherwise.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

from jeepney import DBusAddress, HeaderFields, MatchRule

from deskhand_d import paths

from .remote import Kept, Monitor, SeatUnavailable, SessionBus

PORTAL: Final = "org.freedesktop.portal.Desktop"
_PATH: Final = "/org/freedesktop/portal/desktop"
_RD: Final = DBusAddress(_PATH, PORTAL, "org.freedesktop.portal.RemoteDesktop")
_SC: Final = DBusAddress(_PATH, PORTAL, "org.freedesktop.portal.ScreenCast")
_RESPONSE: Final = MatchRule(
    type="signal", interface="org.freedesktop.portal.Request", member="Response"
)
KEYBOARD, POINTER = 1, 2
MONITOR = 1
CURSOR_HIDDEN = 1
PERSIST_UNTIL_REVOKED = 2
_TOKENS = itertools.count(1)


class PortalDeclined(SeatUnavailable):
    """The person said no in the portal's dialog (or closed it)."""


def token_path(env: Mapping[str, str]) -> Path:
    """Where the portal's restore token is kept (Deskhand's state folder)."""
    return paths.state_dir(env) / "portal-restore-token"


def read_token(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8").strip()
    except (OSError, UnicodeDecodeError):
        return ""


def write_token(path: Path, token: str) -> None:
    """Owner-only, replaced whole: a token lets whoever holds it skip the dialog."""
    path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    scratch = path.with_name(path.name + ".new")
    try:
        scratch.unlink()  # a leftover is never reused: it could carry a looser mode
    except FileNotFoundError:
        pass
    fd = os.open(scratch, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, 0o600)
    try:
        os.write(fd, token.encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(scratch, path)


def shared_monitor(results: Mapping[str, Any]) -> Monitor:
    """The monitor stream out of ``Start``'s results. Pure.

    Raises:
        SeatUnavailable: No monitor stream, or no keyboard and pointer were granted.
    """
    devices = int(results.get("devices", ("u", 0))[1])
    if devices & (KEYBOARD | POINTER) != KEYBOARD | POINTER:
        raise PortalDeclined(
            "remote interaction was not allowed in the desktop's dialog (tick 'Allow remote "
            "interaction' when it asks)"
        )
    streams = results.get("streams", ("a(ua{sv})", []))[1]
    for node, props in streams:
        position = props.get("position", ("(ii)", (0, 0)))[1]
        size = props.get("size", ("(ii)", (0, 0)))[1]
        return Monitor(
            int(node), (int(position[0]), int(position[1])), (int(size[0]), int(size[1]))
        )
    raise SeatUnavailable("the desktop's dialog shared no screen")


class PortalSession(Kept):
    """A started portal session: input and the shared monitor (see the module notes)."""

    def __init__(self, bus: SessionBus, handle: str, monitor: Monitor, *, remembered: bool) -> None:
        super().__init__()
        self.bus = bus
        self.handle = handle
        self.monitor = monitor
        self.remembered = remembered

    @classmethod
    async def start(cls, bus: SessionBus, env: Mapping[str, str]) -> PortalSession:
        """Ask the portal for a session; returns once the person answered its dialog (or a
        kept approval was honoured)."""
        version = int(await bus.get(_RD, "version"))
        keeps = version >= 2
        saved = token_path(env)
        with bus.router.filter(_RESPONSE, bufsize=16) as answers:
            created = await _request(
                bus, answers, _RD, "CreateSession", "a{sv}", {"session_handle_token": _token()}
            )
            handle = str(created["session_handle"][1])
            devices: dict[str, Any] = {"types": ("u", KEYBOARD | POINTER)}
            if keeps:
                devices["persist_mode"] = ("u", PERSIST_UNTIL_REVOKED)
                kept = read_token(saved)
                if kept:
                    devices["restore_token"] = ("s", kept)
            await _request(bus, answers, _RD, "SelectDevices", "oa{sv}", devices, handle)
            sources = {
                "types": ("u", MONITOR),
                "multiple": ("b", False),
                "cursor_mode": ("u", CURSOR_HIDDEN),
            }
            await _request(bus, answers, _SC, "SelectSources", "oa{sv}", sources, handle)
            started = await _request(bus, answers, _RD, "Start", "osa{sv}", {}, handle, "")
        monitor = shared_monitor(started)
        token = started.get("restore_token")
        remembered = False
        if keeps and token is not None and token[1]:
            try:
                write_token(saved, str(token[1]))
                remembered = True
            except OSError:
                pass  # the session works; only the next start asks the person again
        return cls(bus, handle, monitor, remembered=remembered)

    async def pipewire_fd(self) -> int | None:
        """A PipeWire remote that can read the shared stream (the caller closes it)."""
        (fd,) = await self.bus.call(_SC, "OpenPipeWireRemote", "oa{sv}", (self.handle, {}))
        return int(fd.to_raw_fd())

    async def key(self, keysym: int, down: bool) -> None:
        await self.bus.call(
            _RD, "NotifyKeyboardKeysym", "oa{sv}iu", (self.handle, {}, keysym, int(down))
        )

    async def move(self, x: float, y: float) -> None:
        await self.bus.call(
            _RD,
            "NotifyPointerMotionAbsolute",
            "oa{sv}udd",
            (self.handle, {}, self.monitor.node, x, y),
        )

    async def button(self, code: int, down: bool) -> None:
        await self.bus.call(
            _RD, "NotifyPointerButton", "oa{sv}iu", (self.handle, {}, code, int(down))
        )

    async def wheel(self, axis: int, steps: int) -> None:
        await self.bus.call(
            _RD, "NotifyPointerAxisDiscrete", "oa{sv}ui", (self.handle, {}, axis, steps)
        )

    async def stop(self) -> None:
        if self.closed:
            return
        self.closed = True
        session = DBusAddress(self.handle, PORTAL, "org.freedesktop.portal.Session")
        try:
            await self.bus.call(session, "Close")
        except SeatUnavailable:
            pass


def _token() -> tuple[str, str]:
    return "s", f"deskhand{os.getpid()}_{next(_TOKENS)}"


async def _request(
    bus: SessionBus,
    answers: Any,
    address: DBusAddress,
    method: str,
    signature: str,
    options: dict[str, Any],
    *leading: Any,
) -> dict[str, Any]:
    """Call a portal method whose answer comes as a ``Response`` and wait for it (as long as
    the person takes: the caller bounds it)."""
    options = {**options, "handle_token": _token()}
    body = (*leading, options) if method != "Start" else (leading[0], leading[1], options)
    (request,) = await bus.call(address, method, signature, body)
    while True:
        signal = await answers.receive()
        if signal.header.fields.get(HeaderFields.path) != request:
            continue
        code, results = signal.body
        if code == 0:
            return dict(results)
        if code == 1:
            raise PortalDeclined("you declined in the desktop's dialog")
        raise PortalDeclined("the desktop's dialog was closed without an answer")
