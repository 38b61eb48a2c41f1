"""The MCP client for the backend connection: pure session logic plus a thin trio shell."""

from __future__ import annotations
