"""Computer-use backends behind Sky's tool surface: how to launch them, and the simulator."""

from __future__ import annotations
