"""The accessibility bus, spoken with jeepney: finding it, calling it, and what failures mean.

What this owns: locating the AT-SPI bus (``AT_SPI_BUS_ADDRESS``, else ``org.a11y.Bus.GetAddress``
on the session bus), one long-lived connection to it with its receiver task running in a
nursery the server hands over, typed method calls and property reads with a per-call timeout,
and the error tree the rest of the backend relies on:

* :class:`BusUnavailable`: there is no accessibility bus (no session, at-spi2-core missing, the
  bus refused us). Tools answer with a clear error; the process keeps running and tries again
  on the next call.
* :class:`Gone`: the object or its application vanished (the app quit, the widget was
  destroyed, the object went stale). A walk skips it; an action reports a stale element.
* :class:`BusTimeout`: an application did not answer in time (a hung or busy app).
* :class:`CallFailed`: any other D-Bus error reply.

libatspi is never loaded: it aborts the whole process when no bus is reachable.
"""

from __future__ import annotations

import os
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any, Final

import trio
from jeepney import DBusAddress, HeaderFields, MessageType, Properties, new_method_call
from jeepney.io.trio import DBusRouter, open_dbus_connection

from .model import Ref

CALL_TIMEOUT: Final = 5.0
CONNECT_TIMEOUT: Final = 5.0
REGISTRY: Final[Ref] = ("org.a11y.atspi.Registry", "/org/a11y/atspi/accessible/root")
_A11Y_BUS: Final[Ref] = ("org.a11y.Bus", "/org/a11y/bus")
_DBUS: Final[Ref] = ("org.freedesktop.DBus", "/org/freedesktop/DBus")
# Error names that mean "that object, or its whole application, is not there any more".
_GONE: Final = frozenset(
    {
        "org.freedesktop.DBus.Error.UnknownObject",
        "org.freedesktop.DBus.Error.UnknownMethod",
        "org.freedesktop.DBus.Error.UnknownInterface",
        "org.freedesktop.DBus.Error.ServiceUnknown",
        "org.freedesktop.DBus.Error.NameHasNoOwner",
        "org.freedesktop.DBus.Error.NoReply",
        "org.freedesktop.DBus.Error.Disconnected",
    }
)


class BusError(Exception):
    """Base of the accessibility-bus errors."""


class BusUnavailable(BusError):
    """No accessibility bus can be reached; the message says why and what to do."""


class Gone(BusError):
    """The object (or its application) no longer exists on the bus."""


class BusTimeout(BusError):
    """An application did not answer a call within the per-call timeout."""


class CallFailed(BusError):
    """A D-Bus error reply that does not mean the object is gone."""

    def __init__(self, name: str, detail: str) -> None:
        super().__init__(f"{name}: {detail}" if detail else name)
        self.name = name


_SEVERITY: Final = ("BusUnavailable", "BusTimeout", "Gone", "CallFailed", "BusError")


def _leaves(group: BaseExceptionGroup[BaseException]) -> Iterator[BaseException]:
    for exc in group.exceptions:
        if isinstance(exc, BaseExceptionGroup):
            yield from _leaves(exc)
        else:
            yield exc


@contextmanager
def one_error() -> Iterator[None]:
    """Concurrent bus calls fail as one bus error, not an exception group.

    When every failure in a nursery's group is a :class:`BusError`, the most severe one is
    raised alone (unavailable, then timeout, then gone, then any other), so callers can
    ``except Gone`` around a nursery. Anything else propagates as the group it is.
    """
    try:
        yield
    except BaseExceptionGroup as group:
        leaves = list(_leaves(group))
        if not leaves or not all(isinstance(e, BusError) for e in leaves):
            raise
        leaves.sort(key=lambda e: _SEVERITY.index(type(e).__name__))
        raise leaves[0] from None


async def await_reply(router: DBusRouter, message: Any, limit: float) -> tuple[Any, ...]:
    try:
        with trio.fail_after(limit):
            reply = await router.send_and_get_reply(message)
    except trio.TooSlowError:
        raise BusTimeout("no answer in time") from None
    if reply.header.message_type == MessageType.error:
        name = str(reply.header.fields.get(HeaderFields.error_name, ""))
        detail = str(reply.body[0]) if reply.body and isinstance(reply.body[0], str) else ""
        if name in _GONE:
            raise Gone(name)
        raise CallFailed(name, detail)
    return tuple(reply.body)


async def connect_address(address: str, *, enable_fds: bool = False) -> Any:
    try:
        with trio.fail_after(CONNECT_TIMEOUT):
            return await open_dbus_connection(address, enable_fds=enable_fds)
    except trio.TooSlowError:
        raise BusUnavailable(f"connecting to {address} timed out") from None
    except (OSError, ValueError, KeyError, RuntimeError) as exc:
        raise BusUnavailable(f"cannot connect to {address} ({type(exc).__name__}: {exc})") from exc
    except Exception as exc:  # jeepney's AuthenticationError and friends
        raise BusUnavailable(f"cannot connect to {address} ({type(exc).__name__})") from exc


async def find_address(env: Mapping[str, str]) -> str:
    """The accessibility bus address for this session, or :class:`BusUnavailable` saying why."""
    explicit = env.get("AT_SPI_BUS_ADDRESS", "")
    if explicit:
        return explicit
    session = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    if not session:
        raise BusUnavailable(
            "no desktop session: DBUS_SESSION_BUS_ADDRESS is not set, so the accessibility bus "
            "cannot be found. Run inside a graphical session (or set AT_SPI_BUS_ADDRESS)."
        )
    conn = await connect_address(session)
    try:
        async with trio.open_nursery() as nursery:
            router = DBusRouter(conn)
            await router.start(nursery)
            try:
                (address,) = await await_reply(
                    router,
                    new_method_call(
                        DBusAddress(_A11Y_BUS[1], _A11Y_BUS[0], "org.a11y.Bus"), "GetAddress"
                    ),
                    CONNECT_TIMEOUT,
                )
            except BusError as exc:
                raise BusUnavailable(
                    "the session bus has no accessibility bus (org.a11y.Bus: "
                    f"{exc}); install at-spi2-core and enable accessibility."
                ) from None
            finally:
                await router.aclose()
    finally:
        await conn.aclose()
    if not isinstance(address, str) or not address:
        raise BusUnavailable("the session's accessibility bus reported an empty address.")
    return address


class Bus:
    """One connection to the accessibility bus; reconnects after it breaks.

    The receiver task runs in ``nursery`` (the server's), so a connection opened during one
    tool call outlives it.
    """

    def __init__(self, nursery: trio.Nursery, env: Mapping[str, str] | None = None) -> None:
        self._nursery = nursery
        self._env = dict(os.environ if env is None else env)
        self._router: DBusRouter | None = None
        self._conn: Any = None
        self._lock = trio.Lock()
        self.call_timeout = CALL_TIMEOUT
        self.address = ""

    async def router(self) -> DBusRouter:
        """The live connection, connecting first when there is none (or it broke)."""
        async with self._lock:
            if self._router is not None and getattr(self._router, "is_running", False):
                return self._router
            await self._drop()
            address = await find_address(self._env)
            conn = await connect_address(address)
            router = DBusRouter(conn)
            await router.start(self._nursery)
            self._router, self._conn, self.address = router, conn, address
            return router

    async def _drop(self) -> None:
        if self._router is not None:
            await self._router.aclose()
        if self._conn is not None:
            try:
                await self._conn.aclose()
            except (OSError, trio.BrokenResourceError, trio.ClosedResourceError):
                pass
        self._router = self._conn = None

    async def aclose(self) -> None:
        async with self._lock:
            await self._drop()

    async def call(
        self,
        ref: Ref,
        interface: str,
        method: str,
        signature: str | None = None,
        body: tuple[Any, ...] = (),
        *,
        limit: float | None = None,
    ) -> tuple[Any, ...]:
        """Call ``interface.method`` on the object ``ref``; returns the reply body."""
        router = await self.router()
        address = DBusAddress(ref[1], ref[0], interface)
        message = new_method_call(address, method, signature, body)
        try:
            return await await_reply(router, message, limit or self.call_timeout)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as exc:
            await self.aclose()
            raise BusUnavailable(f"the accessibility bus connection broke ({exc})") from exc

    async def get(self, ref: Ref, interface: str, name: str) -> Any:
        """One property's value."""
        router = await self.router()
        message = Properties(DBusAddress(ref[1], ref[0], interface)).get(name)
        try:
            (variant,) = await await_reply(router, message, self.call_timeout)
        except (trio.BrokenResourceError, trio.ClosedResourceError, ConnectionError) as exc:
            await self.aclose()
            raise BusUnavailable(f"the accessibility bus connection broke ({exc})") from exc
        return variant[1]

    async def get_many(self, ref: Ref, interface: str, names: tuple[str, ...]) -> dict[str, Any]:
        """Several properties, each with its own ``Properties.Get``, asked at once.

        Never ``Properties.GetAll``: Qt's bridge reads a second argument that ``GetAll`` does
        not have and dies with SIGSEGV (every Qt 5 app, FeatherPad and SpeedCrunch among them;
        a screen reader asks property by property, which Qt answers). A property the object
        lacks is left out of the result."""
        got: dict[str, Any] = {}

        async def one(name: str) -> None:
            try:
                got[name] = await self.get(ref, interface, name)
            except CallFailed:
                pass

        with one_error():
            async with trio.open_nursery() as nursery:
                for name in names:
                    nursery.start_soon(one, name)
        return got

    async def set(self, ref: Ref, interface: str, name: str, signature: str, value: Any) -> None:
        router = await self.router()
        message = Properties(DBusAddress(ref[1], ref[0], interface)).set(name, signature, value)
        await await_reply(router, message, self.call_timeout)

    async def pid_of(self, bus_name: str) -> int | None:
        """The process behind a connection on the accessibility bus."""
        try:
            (pid,) = await self.call(
                _DBUS, "org.freedesktop.DBus", "GetConnectionUnixProcessID", "s", (bus_name,)
            )
        except (Gone, CallFailed, BusTimeout):
            return None
        return int(pid)
