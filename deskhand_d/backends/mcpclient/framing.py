"""Newline-delimited JSON framing for MCP over stdio. Pure: bytes in, lines out.

Lines are split on LF (0x0A) only. U+2028/U+2029 and every other character may appear inside
a JSON string and must not end a line, which rules out ``str.splitlines`` and readline
implementations that treat them as line breaks. A line longer than the limit (64 MiB by
default: screenshots and large accessibility trees are big) is a framing error, because the
peer is either broken or hostile and the stream cannot be resynchronised safely.
"""

from __future__ import annotations

DEFAULT_MAX_LINE = 64 * 1024 * 1024


class FramingError(Exception):
    """The byte stream cannot be split into lines within the limit."""


class LineSplitter:
    """Incremental splitter: :meth:`feed` any chunking of the stream, get complete lines."""

    def __init__(self, max_line: int = DEFAULT_MAX_LINE) -> None:
        self._max = max_line
        self._buf = bytearray()

    def feed(self, data: bytes | bytearray) -> list[bytes]:
        if not data:
            return []
        start_scan = len(self._buf)
        self._buf += data
        lines: list[bytes] = []
        begin = 0
        pos = self._buf.find(b"\n", start_scan)
        while pos != -1:
            if pos - begin > self._max:
                raise FramingError(f"a line is longer than {self._max} bytes")
            line = bytes(self._buf[begin:pos])
            if line.strip():
                lines.append(line)
            begin = pos + 1
            pos = self._buf.find(b"\n", begin)
        del self._buf[:begin]
        if len(self._buf) > self._max:
            raise FramingError(f"a line is longer than {self._max} bytes")
        return lines

    @property
    def pending(self) -> int:
        """Bytes received after the last complete line (a partial line at EOF is lost)."""
        return len(self._buf)


def encode_line(payload: bytes) -> bytes:
    """Terminate one encoded JSON message. msgspec never emits a raw LF inside JSON."""
    return payload + b"\n"
