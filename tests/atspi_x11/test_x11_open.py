"""Connecting, and the errors that say why there is no usable display."""

from __future__ import annotations

import pytest
from x11peer import SCREEN, need_xvfb, running_xvfb
from Xlib import X

from deskhand_d.programs.atspi.x11 import X11, X11Error, X11Unavailable


def test_open_reports_the_screen_size(display_name: str) -> None:
    """A connection knows the screen size, the space all coordinates live in."""
    with X11.open(display_name) as x11:
        assert (x11.width, x11.height) == SCREEN
        assert x11.name == display_name


def test_open_defaults_to_the_display_variable(
    display_name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without an argument, $DISPLAY names the display."""
    monkeypatch.setenv("DISPLAY", display_name)
    with X11.open() as x11:
        assert x11.name == display_name


def test_missing_display_variable(monkeypatch: pytest.MonkeyPatch) -> None:
    """No argument and no $DISPLAY: the error says so and how to get a display."""
    monkeypatch.delenv("DISPLAY", raising=False)
    with pytest.raises(X11Unavailable, match=r"DISPLAY is not set.*Xvfb"):
        X11.open()


def test_display_that_does_not_exist() -> None:
    """An unreachable display raises X11Unavailable naming it, never a python-xlib error."""
    need_xvfb()  # only so the suite's skip rule is uniform; no server is started here
    with pytest.raises(X11Unavailable, match="cannot connect to X display ':4077'"):
        X11.open(":4077")


def test_display_without_xtest() -> None:
    """A server lacking XTEST can't take synthetic input, and the error says that."""
    need_xvfb()
    with (
        running_xvfb("-extension", "XTEST") as name,
        pytest.raises(X11Unavailable, match="no XTEST"),
    ):
        X11.open(name)


def test_server_going_away_is_unavailable() -> None:
    """When the X server dies, the next call raises X11Unavailable, not a socket error."""
    need_xvfb()
    with running_xvfb() as name:
        x11 = X11.open(name)
        x11.click(10, 10)
    try:
        with pytest.raises(X11Unavailable, match="lost the connection"):
            x11.click(10, 10)
    finally:
        x11.close()


def test_closed_connection_is_unavailable(display_name: str) -> None:
    """Using a closed connection is an X11Unavailable; closing twice is harmless."""
    x11 = X11.open(display_name)
    x11.close()
    x11.close()
    with pytest.raises(X11Unavailable, match="closed"):
        x11.screenshot_png(0, 0, 10, 10)


def test_refused_requests_surface_as_x11error(x11: X11) -> None:
    """An error the server reports later for a request without a reply is raised, not printed.

    Keycode 3 is below every server's minimum (8), so XTEST answers BadValue.
    """
    with pytest.raises(X11Error, match="refused a request"), x11._session():
        x11._fake(X.KeyPress, 3)
    x11.click(5, 5)  # the connection is still fine afterwards
