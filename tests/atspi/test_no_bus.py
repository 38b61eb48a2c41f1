"""Without any desktop session the server keeps running and explains itself in tool results."""

from __future__ import annotations

import os

from mcpclient import Server


def test_no_accessibility_bus_is_a_clear_error(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """No session bus: get_app_state says why; list_apps and the process survive."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("DBUS_SESSION_BUS_ADDRESS", "AT_SPI_BUS_ADDRESS", "DISPLAY")
    }
    s = Server(env, stderr=tmp_path / "err")
    try:
        assert s.initialize()["result"]["serverInfo"]["name"] == "Computer Use"
        tools = s.request("tools/list")["result"]["tools"]
        assert [t["name"] for t in tools][:2] == ["list_apps", "get_app_state"]
        text, images, err = s.tool("get_app_state", app="Calculator")
        assert err and not images
        assert text.startswith(
            "Computer Use server error -10005: the accessibility bus is unavailable"
        )
        assert "DBUS_SESSION_BUS_ADDRESS is not set" in text
        text, _, err = s.tool("list_apps")
        assert not err  # installed apps are still listed
        text, _, err = s.tool("click", app="Calculator", element_index="3")
        assert err and "accessibility bus is unavailable" in text
        # An unreachable bus address is as clear.
    finally:
        assert s.close() == 0
        assert s.stderr_text() == ""


def test_unreachable_bus_address(tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A session bus address that leads nowhere: a clear error, not a crash."""
    env = dict(os.environ, DBUS_SESSION_BUS_ADDRESS=f"unix:path={tmp_path}/nobus")
    env.pop("AT_SPI_BUS_ADDRESS", None)
    s = Server(env)
    try:
        s.initialize()
        text, _, err = s.tool("get_app_state", app="Calculator")
        assert err and "cannot connect to" in text
    finally:
        assert s.close() == 0
