from __future__ import annotations

from dhtest.jev_rig import jev_factory

__all__ = ["jev_factory"]
