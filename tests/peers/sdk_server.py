"""A computer-use-like MCP server built on the official ``mcp`` SDK (1.x, FastMCP).

Run as a child process over stdio. Its server-to-client requests carry integer ids counted
from 0, independently of the client's ids, which is what the interop tests rely on.
"""

from __future__ import annotations

from mcp.server.fastmcp import Context, FastMCP
from pydantic import BaseModel

server = FastMCP("sdk-peer")


class Confirm(BaseModel):
    """A confirmation with no fields."""


@server.tool()
async def get_app_state(app: str, ctx: Context) -> str:  # type: ignore[type-arg]
    """Ask for approval, then report what the client answered."""
    answer = await ctx.elicit(message=f"Allow ChatGPT to use {app}?", schema=Confirm)
    return f"elicit -> {answer.action}"


@server.tool()
async def list_apps() -> str:
    """No approval needed."""
    return "Calculator — com.apple.calculator [running]"


if __name__ == "__main__":
    server.run()
