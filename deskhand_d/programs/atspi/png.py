"""A minimal PNG encoder for screenshots: pixels in, PNG bytes out.

This module owns turning pixels into a valid PNG file: repacking a padded buffer of 3- or
4-byte pixels (as an X server sends them) into packed RGB, and encoding packed RGB as PNG.
It is pure (no I/O) and uses only the standard library, so the daemon needs neither Pillow
nor a compiled image library to return a screenshot.

Every scanline uses filter type 0 (None). Better filters (Sub, Up, Paeth) need per-byte
arithmetic, which is far too slow in pure Python for a full screen; desktop screenshots are
mostly flat colour, and zlib alone already shrinks them well.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# zlib level 1 compresses a 1280x900 desktop several times faster than the default level 6,
# and for flat UI pixels the files are only slightly larger. Screenshots are sent right away
# and thrown away, so speed wins.
DEFAULT_LEVEL = 1

_COLOUR_TYPE_RGB = 2
_BIT_DEPTH = 8


@dataclass(frozen=True, slots=True)
class PixelFormat:
    """How pixels sit in a row-major buffer, such as an X server's ZPixmap image."""

    bytes_per_pixel: int  # 3 or 4
    row_align: int  # each row is padded to a multiple of this many bytes
    offsets: tuple[int, int, int]  # the byte of red, green and blue within a pixel

    def stride(self, width: int) -> int:
        """Bytes from the start of one row to the next."""
        return -(-width * self.bytes_per_pixel // self.row_align) * self.row_align


def pack_rgb(pixels: bytes | bytearray, width: int, height: int, fmt: PixelFormat) -> bytes:
    """Repack ``height`` padded rows of ``fmt`` pixels into packed RGB.

    For 32-bit little-endian ``0x00RRGGBB`` pixels the offsets are ``(2, 1, 0)``. Strided
    slice assignment does the work in C: milliseconds for a full screen, where a per-pixel
    Python loop would take seconds.
    """
    row_bytes, stride = width * fmt.bytes_per_pixel, fmt.stride(width)
    if len(pixels) < stride * (height - 1) + row_bytes:
        raise ValueError(f"{len(pixels)} bytes are too few for {height} rows of {stride}")
    if stride != row_bytes:
        view = memoryview(pixels)
        pixels = b"".join(view[r * stride : r * stride + row_bytes] for r in range(height))
    rgb = bytearray(width * height * 3)
    end = width * height * fmt.bytes_per_pixel
    for channel, offset in enumerate(fmt.offsets):
        rgb[channel::3] = pixels[offset : end : fmt.bytes_per_pixel]
    return bytes(rgb)


def _chunk(kind: bytes, data: bytes) -> bytes:
    # A chunk is length, type, data, then the CRC-32 of type and data together.
    crc = zlib.crc32(data, zlib.crc32(kind))
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", crc)


def _scanlines(width: int, height: int, rgb: bytes | bytearray | memoryview) -> bytearray:
    """Prefix every row with its filter byte (0), as the IDAT stream requires."""
    stride = width * 3
    out = bytearray((stride + 1) * height)
    src = memoryview(rgb)
    for row in range(height):
        start = row * (stride + 1) + 1
        out[start : start + stride] = src[row * stride : (row + 1) * stride]
    return out


def encode_rgb(
    width: int,
    height: int,
    rgb: bytes | bytearray | memoryview,
    *,
    level: int = DEFAULT_LEVEL,
) -> bytes:
    """Encode packed 8-bit RGB pixels (row after row, no padding) as a PNG file.

    Args:
        width: Image width in pixels, at least 1.
        height: Image height in pixels, at least 1.
        rgb: Exactly ``width * height * 3`` bytes: red, green, blue for each pixel.
        level: zlib compression level, 0 (store) to 9 (smallest).

    Raises:
        ValueError: The size is not positive or does not match the buffer length.
    """
    if width < 1 or height < 1:
        raise ValueError(f"PNG size must be positive, got {width}x{height}")
    if width > 0x7FFFFFFF or height > 0x7FFFFFFF:
        raise ValueError(f"PNG size {width}x{height} is too large")
    expected = width * height * 3
    if len(rgb) != expected:
        raise ValueError(f"a {width}x{height} RGB image needs {expected} bytes, got {len(rgb)}")
    if not 0 <= level <= 9:
        raise ValueError(f"zlib level must be 0..9, got {level}")
    header = struct.pack(">IIBBBBB", width, height, _BIT_DEPTH, _COLOUR_TYPE_RGB, 0, 0, 0)
    idat = zlib.compress(_scanlines(width, height, rgb), level)
    return b"".join(
        (
            PNG_SIGNATURE,
            _chunk(b"IHDR", header),
            _chunk(b"IDAT", idat),
            _chunk(b"IEND", b""),
        )
    )
