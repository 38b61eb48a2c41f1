"""Whether this Linux session has a desktop Deskhand can operate through AT-SPI.

What this owns: :func:`probe`, the quick blocking check behind ``backend = "auto"`` on Linux:
the session bus must answer, and the accessibility bus it names (``org.a11y.Bus.GetAddress``,
or ``AT_SPI_BUS_ADDRESS`` when the session exports one) must accept a connection. The answer
says why in a sentence a person can act on, because ``doctor`` shows it as the notice.

It blocks for at most a few ``timeout`` periods. It runs when the daemon resolves which backend
to start, a rare event, and keeps libatspi out of the daemon's process: only jeepney is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_BUS_NAME = "org.a11y.Bus"
_BUS_PATH = "/org/a11y/bus"


@dataclass(frozen=True, slots=True)
class Probe:
    usable: bool
    why: str  # a full sentence either way: what was found, or what is missing and what to do


def probe(env: Mapping[str, str], timeout: float = 1.0) -> Probe:
    """Is a session bus with a reachable accessibility bus present in ``env``?"""
    try:
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection
        from jeepney.wrappers import unwrap_msg
    except ImportError:  # jeepney is a Linux-only dependency
        return Probe(False, "jeepney is not installed, so the accessibility bus cannot be reached.")
    session = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    if not session:
        return Probe(
            False,
            "no session bus (DBUS_SESSION_BUS_ADDRESS is not set): start the daemon inside a "
            "desktop session to operate real apps.",
        )
    address = env.get("AT_SPI_BUS_ADDRESS", "")
    if not address:
        try:
            conn = open_dbus_connection(session, auth_timeout=timeout)
        except Exception as exc:  # jeepney raises OSError, AuthenticationError, ValueError
            return Probe(False, f"the session bus does not answer ({type(exc).__name__}).")
        try:
            bus = DBusAddress(_BUS_PATH, bus_name=_BUS_NAME, interface=_BUS_NAME)
            reply = conn.send_and_get_reply(new_method_call(bus, "GetAddress"), timeout=timeout)
            body = unwrap_msg(reply)  # raises DBusErrorResponse for an error reply
            found = body[0] if body else ""
            address = found if isinstance(found, str) else ""
        except Exception as exc:  # a D-Bus error reply or a timeout
            return Probe(
                False,
                "the session bus has no accessibility bus (org.a11y.Bus: "
                f"{type(exc).__name__}); install at-spi2-core or enable accessibility.",
            )
        finally:
            conn.close()
    if not address:
        return Probe(False, "the accessibility bus reported an empty address.")
    try:
        open_dbus_connection(address, auth_timeout=timeout).close()
    except Exception as exc:
        why = type(exc).__name__
        return Probe(False, f"the accessibility bus does not accept connections ({why}).")
    return Probe(True, "a session bus and its accessibility bus are reachable.")
