"""Fixtures for native-mode tests."""

from __future__ import annotations

from dhtest.desk import desk_factory

__all__ = ["desk_factory"]
