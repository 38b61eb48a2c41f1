"""A small, independent PNG reader for tests: checks the structure and returns RGB pixels.

Written from the PNG specification with zlib and struct only, so encoder bugs can't hide
behind a shared helper. Handles 8-bit RGB, non-interlaced, filter type 0
(the only one our encoder writes; anything else fails the test loudly).
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

SIGNATURE = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Image:
    width: int
    height: int
    rgb: bytes  # packed, row after row

    def pixel(self, x: int, y: int) -> tuple[int, int, int]:
        i = (y * self.width + x) * 3
        r, g, b = self.rgb[i : i + 3]
        return r, g, b


def chunks(data: bytes) -> list[tuple[bytes, bytes]]:
    """Split a PNG into (type, data) chunks, checking lengths and CRCs."""
    assert data[:8] == SIGNATURE, "bad PNG signature"
    out: list[tuple[bytes, bytes]] = []
    pos = 8
    while pos < len(data):
        (length,) = struct.unpack(">I", data[pos : pos + 4])
        kind = data[pos + 4 : pos + 8]
        body = data[pos + 8 : pos + 8 + length]
        (crc,) = struct.unpack(">I", data[pos + 8 + length : pos + 12 + length])
        assert len(body) == length, f"truncated {kind!r} chunk"
        assert crc == zlib.crc32(kind + body), f"bad CRC on {kind!r}"
        out.append((kind, body))
        pos += 12 + length
    assert pos == len(data), "trailing bytes after the last chunk"
    return out


def decode(data: bytes) -> Image:
    """Decode an 8-bit RGB PNG into packed pixels."""
    parts = chunks(data)
    assert parts[0][0] == b"IHDR" and parts[-1] == (b"IEND", b"")
    width, height, depth, colour, compression, filtering, interlace = struct.unpack(
        ">IIBBBBB", parts[0][1]
    )
    assert (depth, colour, compression, filtering, interlace) == (8, 2, 0, 0, 0)
    raw = zlib.decompress(b"".join(body for kind, body in parts if kind == b"IDAT"))
    stride = width * 3
    assert len(raw) == (stride + 1) * height, "wrong amount of image data"
    out = bytearray()
    for row in range(height):
        start = row * (stride + 1)
        # Only filter type 0 (None) is accepted: it is the one the encoder promises to use.
        assert raw[start] == 0, f"row {row} uses filter type {raw[start]}, expected 0"
        out += raw[start + 1 : start + 1 + stride]
    return Image(width, height, bytes(out))
