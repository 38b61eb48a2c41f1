"""Screenshots of a simulated window, and the rectangle map that coordinate clicks use.

What this owns: a palette-indexed canvas (one byte per pixel, so fills and colour conversion run
at C speed through slicing and ``bytes.translate``), painting an element tree onto it (frames
filled in pre-order, labels lettered with the 3x5 font), encoding as baseline JPEG (what Sky
sends) or indexed PNG, a small cache of encoded images, and hit-testing a screenshot point back
to the element drawn there. The screenshot's pixel grid *is* the coordinate space of ``click``
and ``drag``.
"""

from __future__ import annotations

import base64
import struct
import zlib
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from . import font, jpeg
from .ax import Element, Paint, Rect, Window

PALETTE: Final[dict[str, tuple[int, int, int]]] = {
    "window": (236, 236, 236),
    "titlebar": (222, 222, 222),
    "text": (28, 28, 30),
    "text_light": (250, 250, 250),
    "text_dim": (142, 142, 147),
    "close": (255, 95, 87),
    "minimize": (254, 188, 46),
    "zoom": (40, 200, 64),
    "disabled": (160, 160, 160),
    "calc_bg": (38, 38, 40),
    "calc_key": (92, 92, 94),
    "calc_fn": (64, 64, 66),
    "calc_op": (255, 159, 10),
    "toolbar_button": (205, 205, 208),
    "paper": (255, 255, 255),
    "greek": (110, 110, 115),
    "selection": (179, 215, 255),
    "caret": (0, 0, 0),
    "grid_line": (214, 214, 214),
    "other_month": (246, 246, 246),
    "today": (255, 59, 48),
    "accent": (0, 122, 255),
    "holiday": (120, 196, 120),
    "event": (98, 160, 245),
    "scrollbar": (186, 186, 190),
}
_NAMES: Final = tuple(PALETTE)
_INDEX: Final = {name: i for i, name in enumerate(_NAMES)}


def _ycc(rgb: tuple[int, int, int]) -> tuple[int, int, int]:
    r, g, b = rgb
    y = 0.299 * r + 0.587 * g + 0.114 * b
    cb = 128 - 0.168736 * r - 0.331264 * g + 0.5 * b
    cr = 128 + 0.5 * r - 0.418688 * g - 0.081312 * b
    return tuple(min(255, max(0, round(v))) for v in (y, cb, cr))  # type: ignore[return-value]


def _table(channel: int) -> bytes:
    values = [_ycc(PALETTE[name])[channel] for name in _NAMES]
    return bytes(values + [0] * (256 - len(values)))


_Y_TABLE: Final = _table(0)
_CB_TABLE: Final = _table(1)
_CR_TABLE: Final = _table(2)


class Canvas:
    """Palette indices, padded to a multiple of 16 pixels each way for the JPEG encoder."""

    def __init__(self, width: int, height: int, background: str) -> None:
        self.width = width
        self.height = height
        self.stride = (width + 15) // 16 * 16
        self.rows = (height + 15) // 16 * 16
        self.pixels = bytearray([_INDEX[background]]) * (self.stride * self.rows)

    def fill(self, rect: Rect, colour: str) -> None:
        x, y, w, h = rect
        x0, y0 = max(0, x), max(0, y)
        x1, y1 = min(self.width, x + w), min(self.height, y + h)
        if x1 <= x0 or y1 <= y0:
            return
        run = bytes([_INDEX[colour]]) * (x1 - x0)
        for row in range(y0, y1):
            start = row * self.stride + x0
            self.pixels[start : start + len(run)] = run

    def letter(self, text: str, x: int, y: int, scale: int, colour: str) -> None:
        advance = (font.WIDTH + 1) * scale
        for i, char in enumerate(text):
            bitmap = font.glyph(char)
            gx = x + i * advance
            for cell, ink in enumerate(bitmap):
                if ink == "#":
                    r, c = divmod(cell, font.WIDTH)
                    self.fill((gx + c * scale, y + r * scale, scale, scale), colour)

    def pad(self) -> None:
        """Replicate the last column and row into the padding (avoids ringing at the edges)."""
        px, w, s = self.pixels, self.width, self.stride
        if s > w:
            for row in range(self.height):
                edge = px[row * s + w - 1]
                px[row * s + w : (row + 1) * s] = bytes([edge]) * (s - w)
        last = bytes(px[(self.height - 1) * s : self.height * s])
        for row in range(self.height, self.rows):
            px[row * s : (row + 1) * s] = last

    def jpeg(self) -> bytes:
        self.pad()
        raw = bytes(self.pixels)
        y = raw.translate(_Y_TABLE)
        cb_full, cr_full = raw.translate(_CB_TABLE), raw.translate(_CR_TABLE)
        s = self.stride
        cb = b"".join(cb_full[r * s : (r + 1) * s : 2] for r in range(0, self.rows, 2))
        cr = b"".join(cr_full[r * s : (r + 1) * s : 2] for r in range(0, self.rows, 2))
        return jpeg.encode(self.width, self.height, y, cb, cr, self.stride, self.rows)

    def png(self) -> bytes:
        s, w = self.stride, self.width
        raw = b"".join(b"\x00" + bytes(self.pixels[r * s : r * s + w]) for r in range(self.height))
        plte = b"".join(bytes(PALETTE[name]) for name in _NAMES)

        def chunk(kind: bytes, data: bytes) -> bytes:
            body = kind + data
            return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

        ihdr = struct.pack(">IIBBBBB", self.width, self.height, 8, 3, 0, 0, 0)
        return b"".join(
            [
                b"\x89PNG\r\n\x1a\n",
                chunk(b"IHDR", ihdr),
                chunk(b"PLTE", plte),
                chunk(b"IDAT", zlib.compress(raw, 6)),
                chunk(b"IEND", b""),
            ]
        )


def _text_origin(frame: Rect, paint: Paint) -> tuple[int, int]:
    x, y, w, h = frame
    tw = len(paint.text) * (font.WIDTH + 1) * paint.scale - paint.scale
    th = font.HEIGHT * paint.scale
    if paint.align == "right":
        return x + w - tw - 8, y + h - th - 8
    if paint.align == "left":
        return x + 6, y + (h - th) // 2
    if paint.align == "left-top":
        return x, y
    if paint.align == "top-right":
        return x + w - tw - 6, y + 6
    return x + (w - tw) // 2, y + (h - th) // 2


def _draw(canvas: Canvas, frame: Rect, look: Paint) -> None:
    if look.fill is not None:
        canvas.fill(frame, look.fill)
    if look.text:
        x, y = _text_origin(frame, look)
        canvas.letter(look.text, x, y, look.scale, look.ink)


def _ops(window: Window) -> list[tuple[Rect, Paint]]:
    tree = [
        (node.frame, node.paint)
        for _, node in window.root.walk()
        if node.frame is not None and node.paint is not None
    ]
    return tree + list(window.overlays)


def paint(window: Window, width: int, height: int, background: str) -> Canvas:
    """The window's elements in pre-order (parents under children), then its overlays."""
    canvas = Canvas(width, height, background)
    for frame, look in _ops(window):
        _draw(canvas, frame, look)
    return canvas


def hit(root: Element, x: float, y: float) -> Element | None:
    """The element painted last (so the topmost) whose frame contains the point."""
    found = None
    for _, node in root.walk():
        if node.frame is None:
            continue
        fx, fy, fw, fh = node.frame
        if fx <= x < fx + fw and fy <= y < fy + fh:
            found = node
    return found


@dataclass(frozen=True, slots=True)
class Screenshot:
    mime_type: str
    data: bytes
    width: int
    height: int

    def block(self) -> dict[str, str]:
        """The MCP image content block (base64 without a ``data:`` prefix)."""
        encoded = base64.b64encode(self.data).decode("ascii")
        return {"data": encoded, "mimeType": self.mime_type, "type": "image"}


def _paint_key(window: Window) -> tuple[object, ...]:
    return tuple(
        (frame, look.fill, look.text, look.ink, look.scale, look.align)
        for frame, look in _ops(window)
    )


class Camera:
    """Encodes screenshots, remembering the last few so unchanged windows cost nothing."""

    def __init__(self, image_format: str, cache_size: int = 8) -> None:
        self.image_format = image_format
        self._cache: OrderedDict[tuple[object, ...], Screenshot] = OrderedDict()
        self._size = cache_size

    def shoot(self, window: Window, width: int, height: int, background: str) -> Screenshot:
        key = (width, height, background, _paint_key(window))
        shot = self._cache.get(key)
        if shot is not None:
            self._cache.move_to_end(key)
            return shot
        canvas = paint(window, width, height, background)
        if self.image_format == "png":
            shot = Screenshot("image/png", canvas.png(), width, height)
        else:
            shot = Screenshot("image/jpeg", canvas.jpeg(), width, height)
        self._cache[key] = shot
        if len(self._cache) > self._size:
            self._cache.popitem(last=False)
        return shot
