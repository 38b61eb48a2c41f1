"""What a backend prints on stdout before it answers ``initialize``. Pure.

MCP keeps stdout for protocol messages, but what Deskhand starts is not always the server
alone: a jump host (Sky's ``codex``), a wrapper script or a runtime can print a warning first.
Failing the start on such a line would report a harmless warning as a crash (and, for Sky,
stop the next recipe from being tried). So until the reply to ``initialize`` arrives, a line
that is not JSON-RPC at all is logged and skipped; after it, the stream is the protocol and
such a line is a protocol error as before.

Skipping is bounded (:data:`MAX_LINES` lines, :data:`MAX_BYTES` bytes): a backend that keeps
printing something else is not going to speak MCP, and the failure then quotes the first
lines it printed. The first few lines are kept for ``doctor`` (their text may name the
problem, such as a launch constraint) and never logged above debug, like stderr.
"""

from __future__ import annotations

from typing import Final

MAX_LINES: Final = 20
MAX_BYTES: Final = 16 * 1024
KEPT_LINES: Final = 5
SHOWN_CHARS: Final = 200


class Prelude:
    """The lines skipped before the handshake's reply, counted against the bounds."""

    def __init__(self, *, max_lines: int = MAX_LINES, max_bytes: int = MAX_BYTES) -> None:
        self.max_lines = max_lines
        self.max_bytes = max_bytes
        self.count = 0
        self.size = 0
        self.lines: list[str] = []  # the first KEPT_LINES, decoded and cut to SHOWN_CHARS
        self.open = True  # until the reply to initialize arrives

    def skip(self, line: bytes) -> str:
        """Count one line that is not JSON-RPC: ``""`` while within the bounds, else the
        failure, saying what was printed."""
        self.count += 1
        self.size += len(line) + 1  # with its newline
        if len(self.lines) < KEPT_LINES:
            self.lines.append(line[:SHOWN_CHARS].decode("utf-8", "replace"))
        if self.count <= self.max_lines and self.size <= self.max_bytes:
            return ""
        return (
            f"it printed {self.count} lines ({self.size} bytes) that are not JSON-RPC before "
            f"answering, more than the {self.max_lines} lines or {self.max_bytes // 1024} KiB "
            f"allowed, beginning with {self.quote()}"
        )

    def quote(self) -> str:
        """The first kept lines, quoted, for a message (empty when nothing was skipped)."""
        return " / ".join(repr(line) for line in self.lines[:3])
