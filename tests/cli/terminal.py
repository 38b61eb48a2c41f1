"""The CLI tests' name for :mod:`dhtest.terminal` (``deskhandctl`` on a pseudo-terminal), which
lives in ``dhtest`` so that tests outside ``tests/cli`` can act as the person too."""

from __future__ import annotations

from dhtest.terminal import Terminal

__all__ = ["Terminal"]
