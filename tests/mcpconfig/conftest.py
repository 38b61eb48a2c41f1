"""The fixtures of the ``mcp config`` tests (defined in hostdesk.py)."""

from __future__ import annotations

from hostdesk import desk

__all__ = ["desk"]
