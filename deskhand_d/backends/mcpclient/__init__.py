"""The daemon's MCP client for its backend connection: pure session logic plus a thin trio shell."""

from __future__ import annotations
