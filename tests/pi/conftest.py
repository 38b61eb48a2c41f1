"""The fixtures of the pi extension's tests (defined in pirig.py)."""

from __future__ import annotations

from pirig import node, pi_desk

__all__ = ["node", "pi_desk"]
