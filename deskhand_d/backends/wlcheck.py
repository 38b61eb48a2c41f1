"""The desktop checks of a Wayland session: the session itself, how keys and clicks can be
sent, and how the screen can be read.

What this owns: :func:`run`, blocking and read-only like the X11 checks of :mod:`.desktopprobe`:
it asks the session bus which names it has (and can start) and which interface versions
they offer, looks for the PipeWire socket and for GStreamer's PipeWire element. No portal
session is created, so no dialog is shown, and no input event is ever sent.

* ``display``: the Wayland session (and XWayland, whose X11 apps get input the same way).
* ``input``: the configured path (``backend.wayland_input``): the desktop's remote-desktop
  portal (``portal``), or GNOME's own interface (``mutter``); and, for either, GNOME's screen
  cast, the only way the compositor says which window has the keyboard. Without it keys and
  clicks are refused (clicks by element index, which the app carries out itself, still work).
* ``screenshot``: GNOME's screen cast, PipeWire and ``gst-launch-1.0`` with ``pipewiresrc``.

X11's screenshot advice (24-bit colour) is never given here: on a Wayland session no program
may read XWayland's root window, whatever its depth.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Mapping
from typing import Any

from deskhand_d.backends.desktop import Check
from deskhand_d.childenv import child_env

PORTAL = "org.freedesktop.portal.Desktop"
MUTTER_RD = "org.gnome.Mutter.RemoteDesktop"
MUTTER_SC = "org.gnome.Mutter.ScreenCast"
_GST_PACKAGES = "gstreamer1.0-pipewire and gstreamer1.0-tools"
_NOT_GNOME = (
    "this compositor offers no GNOME screen cast, the only way Deskhand can prove which window "
    "has the keyboard and find the app's window; on KDE Plasma and other non-GNOME Wayland "
    "desktops keys and clicks are refused for now (reading apps and clicks by element index "
    "work), or run the app in an X11 session."
)


class _Bus:
    """A blocking session-bus connection for a few questions."""

    def __init__(self, env: Mapping[str, str], timeout: float) -> None:
        from jeepney.io.blocking import open_dbus_connection

        self.timeout = timeout
        self.conn: Any = open_dbus_connection(env["DBUS_SESSION_BUS_ADDRESS"])

    def call(
        self, address: Any, method: str, signature: str | None = None, body: tuple[Any, ...] = ()
    ) -> Any:
        from jeepney import new_method_call
        from jeepney.wrappers import unwrap_msg

        reply = self.conn.send_and_get_reply(
            new_method_call(address, method, signature, body), timeout=self.timeout
        )
        return unwrap_msg(reply)

    def names(self) -> set[str]:
        from jeepney import message_bus

        owned = self.call(message_bus, "ListNames")[0]
        startable = self.call(message_bus, "ListActivatableNames")[0]
        return set(owned) | set(startable)

    def version(self, name: str, path: str, interface: str) -> int | None:
        from jeepney import DBusAddress, Properties

        try:
            reply = self.conn.send_and_get_reply(
                Properties(DBusAddress(path, name, interface)).get(
                    "version" if name == PORTAL else "Version"
                ),
                timeout=self.timeout,
            )
            from jeepney.wrappers import unwrap_msg

            return int(unwrap_msg(reply)[0][1])
        except Exception:  # no such interface or property: not offered
            return None

    def close(self) -> None:
        self.conn.close()


def run(
    env: Mapping[str, str],
    *,
    wayland_input: str = "portal",
    screenshot: bool = True,
    timeout: float = 2.0,
) -> list[Check]:
    """``display``, ``input`` and (unless not asked for) ``screenshot`` of a Wayland session."""
    wayland = env.get("WAYLAND_DISPLAY", "")
    xwayland = f"; X11 apps run through XWayland at {env['DISPLAY']}" if env.get("DISPLAY") else ""
    checks = [
        Check(
            "display",
            "ok",
            f"a Wayland session ({wayland}){xwayland}: Deskhand sends keys and clicks through "
            "the compositor, not X11.",
        )
    ]
    if not env.get("DBUS_SESSION_BUS_ADDRESS"):
        why = "not checked: there is no session bus to ask."
        checks.append(Check("input", "not_checked", why))
        if screenshot:
            checks.append(Check("screenshot", "not_checked", why))
        return checks
    try:
        bus = _Bus(env, timeout)
    except Exception as exc:  # cannot connect: the accessibility-bus check says more
        why = f"not checked: the session bus refused a connection ({type(exc).__name__})."
        checks.append(Check("input", "not_checked", why))
        if screenshot:
            checks.append(Check("screenshot", "not_checked", why))
        return checks
    try:
        names = bus.names()
        cast = MUTTER_SC in names and bus.version(
            MUTTER_SC, "/org/gnome/Mutter/ScreenCast", MUTTER_SC
        )
        checks.append(_input(bus, names, wayland_input, bool(cast)))
        if screenshot:
            checks.append(_screenshot(env, bool(cast)))
    finally:
        bus.close()
    return checks


def _input(bus: _Bus, names: set[str], kind: str, cast: bool) -> Check:
    if kind == "mutter":
        version = (
            bus.version(MUTTER_RD, "/org/gnome/Mutter/RemoteDesktop", MUTTER_RD)
            if MUTTER_RD in names
            else None
        )
        if version is None:
            return Check(
                "input",
                "failed",
                'backend.wayland_input is "mutter", but this session has no GNOME '
                "remote-desktop interface (org.gnome.Mutter.RemoteDesktop).",
                'set backend.wayland_input = "portal" (the desktop asks you once) and restart '
                "deskhand-d, or use a GNOME session.",
            )
        if not cast:
            return Check(
                "input",
                "failed",
                "GNOME's remote-desktop interface is there but its screen cast is not.",
                _NOT_GNOME,
            )
        return Check(
            "input",
            "ok",
            f"keys and clicks go through GNOME's own remote-desktop interface (version "
            f'{version}), as configured (backend.wayland_input = "mutter"): no dialog asks '
            "you first.",
        )
    version = (
        bus.version(
            PORTAL, "/org/freedesktop/portal/desktop", "org.freedesktop.portal.RemoteDesktop"
        )
        if PORTAL in names
        else None
    )
    if version is None:
        return Check(
            "input",
            "failed",
            "this session has no remote-desktop portal (org.freedesktop.portal.RemoteDesktop), "
            "so keys and clicks cannot be sent.",
            "install xdg-desktop-portal and your desktop's portal (GNOME: "
            "xdg-desktop-portal-gnome; KDE Plasma: xdg-desktop-portal-kde), then log out and "
            "back in.",
        )
    if not cast:
        return Check(
            "input",
            "failed",
            f"the remote-desktop portal (version {version}) is there.",
            _NOT_GNOME,
        )
    kept = (
        "the approval is kept for later runs"
        if version >= 2
        else "this portal (version 1) cannot keep the approval, so it asks each time "
        "deskhand-d's backend starts"
    )
    return Check(
        "input",
        "ok",
        f"keys and clicks go through the desktop's remote-desktop portal (version {version}): "
        f"the desktop asks you in its own dialog the first time (tick 'Allow remote "
        f"interaction' and share the screen); {kept}.",
    )


def _screenshot(env: Mapping[str, str], cast: bool) -> Check:
    if not cast:
        return Check(
            "screenshot",
            "failed",
            "this compositor offers no GNOME screen cast, so no screenshot can be taken.",
            "observations come without a screenshot here; on GNOME, the screen cast is part "
            "of the compositor.",
        )
    runtime = env.get("XDG_RUNTIME_DIR", "")
    socket_path = os.path.join(runtime, env.get("PIPEWIRE_REMOTE", "pipewire-0"))
    if not runtime or not os.path.exists(socket_path):
        return Check(
            "screenshot",
            "failed",
            f"PipeWire is not running ({socket_path} is missing), and screen casts travel "
            "through it.",
            "install and start PipeWire with WirePlumber (`systemctl --user enable --now "
            "pipewire wireplumber`).",
        )
    gst = shutil.which("gst-launch-1.0", path=env.get("PATH"))
    inspect = shutil.which("gst-inspect-1.0", path=env.get("PATH"))
    if gst is None or inspect is None:
        return Check(
            "screenshot",
            "failed",
            "gst-launch-1.0 is not installed; it reads frames from the screen cast.",
            f"install {_GST_PACKAGES}.",
        )
    try:
        found = (
            subprocess.run(
                [inspect, "pipewiresrc"],
                env=child_env(env),  # the daemon runs this check: no secret of ours for it
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=10,
                check=False,
            ).returncode
            == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        found = False
    if not found:
        return Check(
            "screenshot",
            "failed",
            "GStreamer has no PipeWire element (pipewiresrc), so frames cannot be read.",
            f"install {_GST_PACKAGES}.",
        )
    return Check(
        "screenshot",
        "ok",
        "screenshots come from GNOME's screen cast through PipeWire: each shows the app's "
        "window while it has the keyboard (none otherwise).",
    )
