from __future__ import annotations

from dhtest.consent_rig import rig_factory

__all__ = ["rig_factory"]
