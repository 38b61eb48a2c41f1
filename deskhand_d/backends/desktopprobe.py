"""The desktop checks themselves: the X display, XTEST, a screenshot and the accessibility bus.

What this owns: :func:`run`, which asks the X server named by ``DISPLAY`` and the buses in
``env`` whether the AT-SPI backend could act there, as the named checks of :mod:`.desktop`.
It is read-only on purpose: it connects, asks the X server which extensions it has, reads one
pixel of the root window and connects to the accessibility bus. No input event is ever sent
and no window is touched, so ``doctor`` and ``backend = "auto"`` may run it at any time.

Blocking (python-xlib and jeepney): ``auto`` runs it when it resolves the backend, a rare
event, and ``doctor`` in a worker thread. A check that cannot run because an earlier one
failed is reported as ``not_checked``, never as passed.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping

from deskhand_d import sessionkind
from deskhand_d.backends import a11ybus, desktop
from deskhand_d.backends.desktop import Check


def run(
    env: Mapping[str, str],
    *,
    screenshot: bool = True,
    wayland_input: str = "portal",
    probe: Callable[[Mapping[str, str]], a11ybus.Probe] = a11ybus.probe,
) -> list[Check]:
    """``display``, ``xtest``, ``screenshot`` (unless not asked for) and ``accessibility_bus``;
    on a Wayland session ``display``, ``input`` and ``screenshot`` of :mod:`.wlcheck`."""
    missing = desktop.missing_display(env)
    if sessionkind.wayland_session(env):
        from deskhand_d.backends import wlcheck

        checks = wlcheck.run(env, wayland_input=wayland_input, screenshot=screenshot)
    elif missing is not None:
        checks = [missing, desktop.not_checked("xtest", "not checked: there is no X display.")]
        if screenshot:
            checks.append(desktop.not_checked("screenshot", "not checked: there is no X display."))
    else:
        checks = x_checks(env["DISPLAY"], wayland=env.get("WAYLAND_DISPLAY", ""))
        if not screenshot:
            checks = [c for c in checks if c.name != "screenshot"]
        elif checks[1].status == "ok":
            checks[2] = screenshot_check(env["DISPLAY"])
    checks.append(desktop.bus_check(probe(env)))
    return checks


def x_checks(name: str, *, wayland: str = "") -> list[Check]:
    """``display`` and ``xtest`` from one connection, and ``screenshot`` as not yet checked."""
    later = desktop.not_checked("screenshot", "not checked: it needs the display and XTEST.")
    try:
        from Xlib import display as xdisplay

        from deskhand_d.programs.atspi import xlibquirks
    except ImportError as exc:  # python-xlib is a Linux-only dependency
        return [
            Check(
                "display",
                "failed",
                f"python-xlib is not installed ({exc}), so no X display can be reached.",
                "reinstall Deskhand with its Linux dependencies (python-xlib, jeepney).",
            ),
            desktop.not_checked("xtest", "not checked: there is no X connection."),
            later,
        ]
    try:
        conn = xdisplay.Display(name)
    except Exception as exc:  # DisplayError, ConnectionClosedError, XauthError, OSError
        xlibquirks.close_abandoned_sockets(exc)
        return [
            Check(
                "display",
                "failed",
                f"cannot connect to X display {name!r} ({type(exc).__name__}: {exc}).",
                "check that the desktop's X server runs on that display and that DISPLAY, and "
                "XAUTHORITY if the server uses one, are the desktop's own (a terminal inside "
                "the desktop shows them with `echo $DISPLAY $XAUTHORITY`).",
            ),
            desktop.not_checked("xtest", "not checked: there is no X connection."),
            later,
        ]
    try:
        screen = conn.screen()
        size = f"{int(screen.width_in_pixels)}x{int(screen.height_in_pixels)}"
        xtest = bool(conn.has_extension("XTEST"))
    finally:
        conn.close()
    through = f" (XWayland in the Wayland session {wayland})" if wayland else ""
    shown = Check("display", "ok", f"X display {name} answers{through}, screen {size}.")
    if not xtest:
        return [
            shown,
            Check(
                "xtest",
                "failed",
                f"X display {name!r} has no XTEST extension, so keys and clicks cannot be sent.",
                "run the desktop on an X server with XTEST (Xorg, Xvfb and XWayland have it "
                "unless started with `-extension XTEST`).",
            ),
            desktop.not_checked(
                "screenshot", "not checked: the backend uses the display only with XTEST."
            ),
        ]
    return [shown, Check("xtest", "ok", f"X display {name} has XTEST for keys and clicks."), later]


def screenshot_check(name: str) -> Check:
    """Read one pixel of the root window the way the backend reads screenshots."""
    try:
        from deskhand_d.programs.atspi import x11
    except ImportError as exc:
        return Check(
            "screenshot",
            "failed",
            f"the X11 code could not be loaded ({exc}).",
            "reinstall Deskhand with its Linux dependencies (python-xlib, jeepney).",
        )
    try:
        with x11.X11.open(name) as handle:
            handle.screenshot_rgb(0, 0, 1, 1)
    except (x11.X11Unavailable, x11.X11Error, ValueError) as exc:
        return Check(
            "screenshot",
            "failed",
            f"the screen of X display {name!r} cannot be read: {exc}.",
            "run the X server at 24-bit colour depth (for Xvfb: `-screen 0 1280x900x24`); "
            "actions still work, but observations come without a screenshot.",
        )
    return Check("screenshot", "ok", f"the screen of X display {name} can be read.")
