"""The real gnome-calculator through ``deskhandctl mcp``: an MCP host (the official Python SDK
client) works the Calculator to 13 on a private desktop, through the daemon with the AT-SPI
backend, by element index, and sees the screenshot as MCP image content."""

from __future__ import annotations

import base64
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import trio
from dhtest.daemon import short_tmpdir, spawn_daemon
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpsaid import said_delivery, said_state_id
from test_through_daemon import KEYS, backend_env, grant_calculator, key_index, shows

ROOT = Path(__file__).resolve().parents[2]
PNG = b"\x89PNG\r\n\x1a\n"


@pytest.fixture
def desk() -> Iterator[Desktop]:
    with desktop_or_skip(require=("gnome-calculator",)) as d:
        yield d


def _text(result: Any) -> str:
    return "\n".join(c.text for c in result.content if c.type == "text")


async def test_an_mcp_host_drives_the_real_calculator_to_13(desk: Desktop) -> None:
    from mcp import ClientSession, StdioServerParameters
    from mcp.client.stdio import stdio_client

    root = short_tmpdir()
    env = backend_env(desk)
    grant_calculator(env)(root / "config")
    daemon = spawn_daemon(root, extra_env=env)
    facade_env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(root / "home"),
        "DESKHAND_NO_AUTOSTART": "1",
        "PYTHONPATH": str(ROOT / "clients"),
    }
    argv = ["-m", "deskhandctl", "--socket", str(daemon.socket), "mcp"]
    params = StdioServerParameters(command=sys.executable, args=argv, env=facade_env)
    try:
        async with stdio_client(params) as (read, write), ClientSession(read, write) as host:
            await host.initialize()
            seen = await host.call_tool("get_app_state", {"app": "Calculator"})
            with trio.fail_after(30):  # the backend started the app; its keypad comes later
                while seen.isError or " 6" not in _text(seen):
                    await trio.sleep(0.3)
                    seen = await host.call_tool("get_app_state", {"app": "Calculator"})
            images = [c for c in seen.content if c.type == "image"]
            assert len(images) == 1 and images[0].mimeType == "image/png"
            assert base64.b64decode(images[0].data).startswith(PNG)
            state = said_state_id(seen)
            text = _text(seen)
            for key in KEYS:
                done = await host.call_tool(
                    "click",
                    {"app": "Calculator", "state_id": state, "element_index": key_index(text, key)},
                )
                assert not done.isError, _text(done)
                assert said_delivery(done) == "dispatched"
                seen = await host.call_tool("get_app_state", {"app": "Calculator"})
                state, text = said_state_id(seen), _text(seen)
            with trio.fail_after(10):
                while not shows(text, "13"):
                    await trio.sleep(0.2)
                    seen = await host.call_tool("get_app_state", {"app": "Calculator"})
                    text = _text(seen)
            assert shows(text, "13"), text
        audit = "\n".join(p.read_text() for p in (root / "state").rglob("*.jsonl"))
        assert audit.count('"tool":"click"') + audit.count('"tool": "click"') >= 4
    finally:
        daemon.stop()
