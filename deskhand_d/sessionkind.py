"""Which kind of desktop session an environment names. Pure.

What this owns: the two questions both the daemon and the AT-SPI program ask of an
environment: is there a desktop session at all (:func:`session_present`), and is it a Wayland
session (:func:`wayland_session`), where the compositor and not X11 is the way in. One
answer for both sides, so the daemon's checks and the program's choice of screen never
disagree.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

SESSION_VARS: Final = ("DISPLAY", "WAYLAND_DISPLAY", "DBUS_SESSION_BUS_ADDRESS")


def session_present(env: Mapping[str, str]) -> bool:
    """Is there any desktop session here: an X or Wayland display, or a session bus?"""
    return any(env.get(name) for name in SESSION_VARS)


def wayland_session(env: Mapping[str, str]) -> bool:
    """Whether ``env`` is a Wayland session: apps there take no X11 input, and the compositor
    is the only way in (XWayland's ``DISPLAY``, when also set, serves X11 apps only)."""
    return bool(env.get("WAYLAND_DISPLAY")) and env.get("XDG_SESSION_TYPE", "wayland") != "x11"
