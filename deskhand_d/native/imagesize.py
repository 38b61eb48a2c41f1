"""The pixel size of a screenshot, read from its PNG or JPEG header. Pure.

Coordinates in a click or a drag count in the pixels of the observation's screenshot, from its
top-left corner, so its size is the window's extent in that space: the daemon checks a point
against it before anything is sent. Only the header is read (never the image data); anything
unreadable gives None, and then the backend's own answer decides.
"""

from __future__ import annotations

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"
# SOF0..SOF15 carry the frame size; C4 (DHT), C8 (JPG) and CC (DAC) share the range but do not.
_JPEG_FRAMES = frozenset(range(0xC0, 0xD0)) - {0xC4, 0xC8, 0xCC}
_JPEG_STANDALONE = frozenset({0x01, *range(0xD0, 0xD8)})  # TEM, RSTn: no length field
_JPEG_SCAN_LIMIT = 1 << 20  # a frame header after a megabyte of metadata is not believed


def image_size(data: bytes) -> tuple[int, int] | None:
    """``(width, height)`` of a PNG or JPEG image, or None when the header cannot be read."""
    if data.startswith(PNG_SIGNATURE):
        return _png(data)
    if data.startswith(b"\xff\xd8"):
        return _jpeg(data)
    return None


def _png(data: bytes) -> tuple[int, int] | None:
    # The first chunk must be IHDR: length (4), type (4), then width and height (4 each).
    if len(data) < 24 or data[12:16] != b"IHDR":
        return None
    width, height = int.from_bytes(data[16:20]), int.from_bytes(data[20:24])
    return (width, height) if width > 0 and height > 0 else None


def _jpeg(data: bytes) -> tuple[int, int] | None:
    i, end = 2, min(len(data), _JPEG_SCAN_LIMIT)
    while i + 4 <= end:
        if data[i] != 0xFF:
            return None
        marker = data[i + 1]
        if marker == 0xFF:  # fill byte before a marker
            i += 1
            continue
        if marker in _JPEG_STANDALONE:
            i += 2
            continue
        if marker in (0xD9, 0xDA):  # end of image, or start of scan before any frame header
            return None
        length = int.from_bytes(data[i + 2 : i + 4])
        if length < 2:
            return None
        if marker in _JPEG_FRAMES:
            if i + 9 > end:
                return None
            height = int.from_bytes(data[i + 5 : i + 7])
            width = int.from_bytes(data[i + 7 : i + 9])
            return (width, height) if width > 0 and height > 0 else None
        i += 2 + length
    return None
