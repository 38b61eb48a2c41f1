"""The simulated applications: Calculator, Calendar and TextEdit."""

from __future__ import annotations
