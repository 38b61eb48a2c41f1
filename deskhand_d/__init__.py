"""Deskhand daemon: the single owner of a desktop's computer-use connection."""

from __future__ import annotations

__version__ = "0.1.0"
