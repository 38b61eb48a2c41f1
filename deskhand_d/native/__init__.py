"""Native mode: sessions, stateIds, the action queue, the allowlist and native ops."""

from __future__ import annotations
