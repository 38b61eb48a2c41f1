"""Whether this Linux session has a desktop Deskhand can operate through AT-SPI.

What this owns: :func:`probe`, the quick blocking check behind ``backend = "auto"`` on Linux
and ``doctor``'s ``accessibility_bus`` check: the session bus must answer, and the
accessibility bus it names (``org.a11y.Bus.GetAddress``, or ``AT_SPI_BUS_ADDRESS`` when the
session exports one) must accept a connection. The answer says what was found and, when the
bus cannot be used, the fix, in sentences a person can act on: they are shown as they are.

It blocks for at most a few ``timeout`` periods. It runs when the daemon resolves which backend
to start, a rare event, and keeps libatspi out of the daemon's process: only jeepney is used.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

_BUS_NAME = "org.a11y.Bus"
_BUS_PATH = "/org/a11y/bus"
_RESTART = (
    "restart the accessibility bus: log out and back in (or run "
    "`/usr/libexec/at-spi-bus-launcher --launch-immediately &` in the session), and check "
    "that AT_SPI_BUS_ADDRESS, if set, is current."
)

#: What gets a missing accessibility bus going (at-spi2-core provides it; GNOME's switch is
#: the one most desktops follow, and apps only join the bus when they start).
ENABLE_A11Y = (
    "install at-spi2-core (Debian and Ubuntu: `sudo apt install at-spi2-core`), turn "
    "accessibility on where the desktop has a switch (GNOME and most GTK desktops: "
    "`gsettings set org.gnome.desktop.interface toolkit-accessibility true`), then log out and "
    "back in so the bus starts and apps join it."
)
SESSION_BUS_FIX = (
    "start deskhand-d from inside the desktop session, or give it the session's bus: "
    "DBUS_SESSION_BUS_ADDRESS (usually unix:path=$XDG_RUNTIME_DIR/bus; under systemd "
    "`systemctl --user import-environment DBUS_SESSION_BUS_ADDRESS DISPLAY`), then "
    "`deskhandctl shutdown` so that the next command starts it with that environment."
)


@dataclass(frozen=True, slots=True)
class Probe:
    usable: bool
    why: str  # a full sentence either way: what was found, or what is missing
    fix: str = ""  # what to do about it, when not usable


def probe(env: Mapping[str, str], timeout: float = 1.0) -> Probe:
    """Is a session bus with a reachable accessibility bus present in ``env``?"""
    try:
        from jeepney import DBusAddress, new_method_call
        from jeepney.io.blocking import open_dbus_connection
        from jeepney.wrappers import unwrap_msg
    except ImportError:  # jeepney is a Linux-only dependency
        return Probe(
            False,
            "jeepney is not installed, so the accessibility bus cannot be reached.",
            "reinstall Deskhand with its Linux dependencies (jeepney, python-xlib).",
        )
    session = env.get("DBUS_SESSION_BUS_ADDRESS", "")
    if not session:
        return Probe(
            False,
            "no session bus: DBUS_SESSION_BUS_ADDRESS is not set in deskhand-d's environment.",
            SESSION_BUS_FIX,
        )
    address = env.get("AT_SPI_BUS_ADDRESS", "")
    switch = ""
    if not address:
        try:
            conn = open_dbus_connection(session, auth_timeout=timeout)
        except Exception as exc:  # jeepney raises OSError, AuthenticationError, ValueError
            return Probe(
                False,
                f"the session bus at {session} does not answer ({type(exc).__name__}).",
                SESSION_BUS_FIX,
            )
        try:
            bus = DBusAddress(_BUS_PATH, bus_name=_BUS_NAME, interface=_BUS_NAME)
            reply = conn.send_and_get_reply(new_method_call(bus, "GetAddress"), timeout=timeout)
            body = unwrap_msg(reply)  # raises DBusErrorResponse for an error reply
            found = body[0] if body else ""
            address = found if isinstance(found, str) else ""
            switch = _switch_words(conn, timeout)
        except Exception as exc:  # a D-Bus error reply or a timeout
            return Probe(
                False,
                f"the session bus has no accessibility bus (org.a11y.Bus: {type(exc).__name__}).",
                ENABLE_A11Y,
            )
        finally:
            conn.close()
    if not address:
        return Probe(False, "the accessibility bus reported an empty address.", _RESTART)
    try:
        open_dbus_connection(address, auth_timeout=timeout).close()
    except Exception as exc:
        why = type(exc).__name__
        return Probe(False, f"the accessibility bus does not accept connections ({why}).", _RESTART)
    return Probe(True, f"a session bus and its accessibility bus are reachable.{switch}")


#: What the accessibility switch means for the apps, said once it is known to be off.
SWITCH_OFF = (
    " The session's accessibility switch (org.a11y.Status IsEnabled) is off, as on a desktop "
    "where no screen reader ran: Firefox, Qt apps and LibreOffice answer only while it is on, "
    "so Deskhand's Linux backend turns it on while it runs and back off when it stops (an "
    "app that was started before and does not notice may need a restart)."
)
#: Chromium's own switch, which no session setting replaces.
CHROMIUM_NOTE = (
    " Chromium, Chrome and Electron apps fill their windows for accessibility only when "
    "started with --force-renderer-accessibility: Deskhand adds it when it starts one; one "
    "started otherwise must be quit and observed again."
)


def _switch_words(conn: object, timeout: float) -> str:
    """What the session's accessibility switch says, as sentences for ``why``."""
    from jeepney import DBusAddress, Properties
    from jeepney.wrappers import unwrap_msg

    status = DBusAddress(_BUS_PATH, bus_name=_BUS_NAME, interface="org.a11y.Status")
    try:
        reply = conn.send_and_get_reply(  # type: ignore[attr-defined]
            Properties(status).get("IsEnabled"), timeout=timeout
        )
        (value,) = unwrap_msg(reply)
        on = bool(value[1])
    except Exception:  # an old launcher without the property: nothing to say
        return CHROMIUM_NOTE
    return (" The session's accessibility switch is on." if on else SWITCH_OFF) + CHROMIUM_NOTE
