"""A small baseline JPEG encoder (JFIF, 4:2:0, standard Huffman tables), pure Python.

What this owns: turning three 8-bit planes (Y at full resolution, Cb and Cr at half resolution
in both directions) into a baseline sequential JPEG. Screenshots of the simulated apps are flat
colour rectangles and small glyphs, so most 8x8 blocks are uniform: those take a fast path with
no DCT at all, and the remaining blocks are cached by content. The planes must already be padded
to a multiple of 16 pixels (luma) and 8 pixels (chroma); the SOF header carries the true size.
"""

from __future__ import annotations

import math
from operator import mul
from typing import Final

_ZIGZAG: Final = (
    0, 1, 8, 16, 9, 2, 3, 10, 17, 24, 32, 25, 18, 11, 4, 5,
    12, 19, 26, 33, 40, 48, 41, 34, 27, 20, 13, 6, 7, 14, 21, 28,
    35, 42, 49, 56, 57, 50, 43, 36, 29, 22, 15, 23, 30, 37, 44, 51,
    58, 59, 52, 45, 38, 31, 39, 46, 53, 60, 61, 54, 47, 55, 62, 63,
)  # fmt: skip

_LUMA_Q: Final = (
    16, 11, 10, 16, 24, 40, 51, 61, 12, 12, 14, 19, 26, 58, 60, 55,
    14, 13, 16, 24, 40, 57, 69, 56, 14, 17, 22, 29, 51, 87, 80, 62,
    18, 22, 37, 56, 68, 109, 103, 77, 24, 35, 55, 64, 81, 104, 113, 92,
    49, 64, 78, 87, 103, 121, 120, 101, 72, 92, 95, 98, 112, 100, 103, 99,
)  # fmt: skip

_CHROMA_Q: Final = (
    17, 18, 24, 47, 99, 99, 99, 99, 18, 21, 26, 66, 99, 99, 99, 99,
    24, 26, 56, 99, 99, 99, 99, 99, 47, 66, 99, 99, 99, 99, 99, 99,
    *([99] * 32),
)  # fmt: skip

_DC_LUMA_BITS: Final = (0, 1, 5, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0, 0, 0)
_DC_CHROMA_BITS: Final = (0, 3, 1, 1, 1, 1, 1, 1, 1, 1, 1, 0, 0, 0, 0, 0)
_DC_VALUES: Final = tuple(range(12))
_AC_LUMA_BITS: Final = (0, 2, 1, 3, 3, 2, 4, 3, 5, 5, 4, 4, 0, 0, 1, 0x7D)
_AC_LUMA_VALUES: Final = bytes.fromhex(
    "01020300041105122131410613516107227114328191a1082342b1c11552d1f0"
    "2433627282090a161718191a25262728292a3435363738393a43444546474849"
    "4a535455565758595a636465666768696a737475767778797a83848586878889"
    "8a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3c4c5"
    "c6c7c8c9cad2d3d4d5d6d7d8d9dae1e2e3e4e5e6e7e8e9eaf1f2f3f4f5f6f7f8"
    "f9fa"
)
_AC_CHROMA_BITS: Final = (0, 2, 1, 2, 4, 4, 3, 4, 7, 5, 4, 4, 0, 1, 2, 0x77)
_AC_CHROMA_VALUES: Final = bytes.fromhex(
    "000102031104052131061241510761711322328108144291a1b1c109233352f0"
    "156272d10a162434e125f11718191a262728292a35363738393a434445464748"
    "494a535455565758595a636465666768696a737475767778797a828384858687"
    "88898a92939495969798999aa2a3a4a5a6a7a8a9aab2b3b4b5b6b7b8b9bac2c3"
    "c4c5c6c7c8c9cad2d3d4d5d6d7d8d9dae2e3e4e5e6e7e8e9eaf2f3f4f5f6f7f8"
    "f9fa"
)
assert len(_AC_LUMA_VALUES) == sum(_AC_LUMA_BITS) == len(_AC_CHROMA_VALUES) == sum(_AC_CHROMA_BITS)

Huffman = dict[int, tuple[int, int]]  # symbol -> (code, length)


def _huffman(bits: tuple[int, ...], values: bytes | tuple[int, ...]) -> Huffman:
    table: Huffman = {}
    code = 0
    k = 0
    for length in range(1, 17):
        for _ in range(bits[length - 1]):
            table[values[k]] = (code, length)
            code += 1
            k += 1
        code <<= 1
    return table


def _scaled(base: tuple[int, ...], quality: int) -> tuple[int, ...]:
    scale = 5000 // quality if quality < 50 else 200 - 2 * quality
    return tuple(min(255, max(1, (q * scale + 50) // 100)) for q in base)


_C: Final = tuple(
    tuple(
        (math.sqrt(0.5) if u == 0 else 1.0) * 0.5 * math.cos((2 * x + 1) * u * math.pi / 16)
        for x in range(8)
    )
    for u in range(8)
)


def _dct_quantize(block: bytes, quant: tuple[int, ...]) -> list[int]:
    """Forward DCT of one 8x8 block (row-major samples) -> 64 quantized zigzag coefficients."""
    shifted = [v - 128 for v in block]
    rows = [shifted[r : r + 8] for r in range(0, 64, 8)]
    # tmp[u] holds the u-th horizontal frequency of every row (i.e. a column of the result).
    tmp = [[sum(map(mul, cu, row)) for row in rows] for cu in _C]
    coef = [0.0] * 64
    for u, col in enumerate(tmp):
        for v, cv in enumerate(_C):
            coef[v * 8 + u] = sum(map(mul, cv, col))
    return [round(coef[z] / quant[z]) for z in _ZIGZAG]


class _BitWriter:
    __slots__ = ("acc", "nbits", "out")

    def __init__(self) -> None:
        self.acc = 0
        self.nbits = 0
        self.out = bytearray()

    def put(self, code: int, length: int) -> None:
        self.acc = (self.acc << length) | code
        self.nbits += length
        if self.nbits >= 32:
            self._drain()

    def _drain(self) -> None:
        while self.nbits >= 8:
            self.nbits -= 8
            self.out.append((self.acc >> self.nbits) & 0xFF)
        self.acc &= (1 << self.nbits) - 1

    def finish(self) -> bytes:
        self._drain()
        if self.nbits:
            pad = 8 - self.nbits
            self.put((1 << pad) - 1, pad)
            self._drain()
        return bytes(self.out).replace(b"\xff", b"\xff\x00")


def _bits_of(value: int) -> tuple[int, int]:
    """JPEG magnitude category and the appended bits for a signed coefficient."""
    size = abs(value).bit_length()
    return size, (value if value >= 0 else value + (1 << size) - 1)


_Encoded = tuple[int, tuple[int, int]]  # quantized DC, (AC bits, their length)
# Encoded blocks by (quality, table) and content; screenshots repeat glyphs and edges a lot.
_BLOCK_CACHES: dict[tuple[int, str], dict[bytes, _Encoded]] = {}
_CACHE_LIMIT = 20000


def _cache(quality: int, table: str) -> dict[bytes, _Encoded]:
    cache = _BLOCK_CACHES.setdefault((quality, table), {})
    if len(cache) > _CACHE_LIMIT:
        cache.clear()
    return cache


class _Component:
    """One colour component's tables, DC predictor, and a cache of encoded blocks.

    A block's AC coefficients do not depend on its neighbours, so their Huffman bits are cached
    by block content as one (bits, length) pair; only the DC difference is coded per block.
    """

    __slots__ = ("ac", "cache", "dc", "eob", "pred", "quant")

    def __init__(
        self, quant: tuple[int, ...], dc: Huffman, ac: Huffman, cache: dict[bytes, _Encoded]
    ) -> None:
        self.quant = quant
        self.dc = dc
        self.ac = ac
        self.eob = ac[0x00]
        self.pred = 0
        self.cache = cache

    def encode_flat(self, w: _BitWriter, sample: int) -> None:
        """A uniform block: only a DC term, then end-of-block."""
        self._dc(w, round(8 * (sample - 128) / self.quant[0]))
        w.put(*self.eob)

    def encode(self, w: _BitWriter, block: bytes) -> None:
        cached = self.cache.get(block)
        if cached is None:
            if block.count(block[0]) == 64:
                self.encode_flat(w, block[0])
                return
            cached = self._prepare(block)
            self.cache[block] = cached
        dc, ac_bits = cached
        self._dc(w, dc)
        w.put(*ac_bits)

    def _prepare(self, block: bytes) -> _Encoded:
        coeffs = _dct_quantize(block, self.quant)
        acc, length = 0, 0

        def put(code: int, n: int) -> None:
            nonlocal acc, length
            acc = (acc << n) | code
            length += n

        run = 0
        for c in coeffs[1:]:
            if c == 0:
                run += 1
                continue
            while run > 15:
                put(*self.ac[0xF0])
                run -= 16
            size, bits = _bits_of(c)
            put(*self.ac[(run << 4) | size])
            put(bits, size)
            run = 0
        if run:
            put(*self.eob)
        return coeffs[0], (acc, length)

    def _dc(self, w: _BitWriter, dc: int) -> None:
        diff = dc - self.pred
        self.pred = dc
        size, bits = _bits_of(diff)
        w.put(*self.dc[size])
        if size:
            w.put(bits, size)


def _segment(marker: int, payload: bytes) -> bytes:
    return bytes((0xFF, marker)) + (len(payload) + 2).to_bytes(2, "big") + payload


def _dht(cls_id: int, bits: tuple[int, ...], values: bytes | tuple[int, ...]) -> bytes:
    return bytes((cls_id, *bits, *values))


def encode(
    width: int,
    height: int,
    y: bytes,
    cb: bytes,
    cr: bytes,
    stride: int,
    rows: int,
    *,
    quality: int = 90,
) -> bytes:
    """Encode padded planes: ``y`` is ``stride x rows``, chroma planes half that each way."""
    if stride % 16 or rows % 16 or stride < width or rows < height:
        raise ValueError("planes must be padded to a multiple of 16 and cover the image")
    lq, cq = _scaled(_LUMA_Q, quality), _scaled(_CHROMA_Q, quality)
    dcl, dcc = _huffman(_DC_LUMA_BITS, _DC_VALUES), _huffman(_DC_CHROMA_BITS, _DC_VALUES)
    acl, acc = (
        _huffman(_AC_LUMA_BITS, _AC_LUMA_VALUES),
        _huffman(_AC_CHROMA_BITS, _AC_CHROMA_VALUES),
    )
    comp_y = _Component(lq, dcl, acl, _cache(quality, "luma"))
    comp_cb = _Component(cq, dcc, acc, _cache(quality, "chroma"))
    comp_cr = _Component(cq, dcc, acc, _cache(quality, "chroma"))
    w = _BitWriter()
    cstride = stride // 2

    zero8 = bytes(8)

    def band(plane: bytes, pstride: int, y0: int) -> tuple[list[bytes], bytes]:
        """The band's 8 rows, and a mask that is 0 wherever all 8 rows agree with the first."""
        lines = [plane[(y0 + r) * pstride : (y0 + r + 1) * pstride] for r in range(8)]
        first = int.from_bytes(lines[0], "big")
        differs = 0
        for line in lines[1:]:
            differs |= first ^ int.from_bytes(line, "big")
        return lines, differs.to_bytes(pstride, "big")

    def emit(comp: _Component, lines: list[bytes], mask: bytes, x0: int) -> None:
        if mask[x0 : x0 + 8] == zero8:
            seg = lines[0][x0 : x0 + 8]
            if seg.count(seg[0]) == 8:
                comp.encode_flat(w, seg[0])
                return
        comp.encode(w, b"".join(line[x0 : x0 + 8] for line in lines))

    for my in range(0, rows, 16):
        top, bottom = band(y, stride, my), band(y, stride, my + 8)
        cbb, crb = band(cb, cstride, my // 2), band(cr, cstride, my // 2)
        for mx in range(0, stride, 16):
            emit(comp_y, *top, mx)
            emit(comp_y, *top, mx + 8)
            emit(comp_y, *bottom, mx)
            emit(comp_y, *bottom, mx + 8)
            emit(comp_cb, *cbb, mx // 2)
            emit(comp_cr, *crb, mx // 2)
    scan = w.finish()

    app0 = b"JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    dqt = bytes([0]) + bytes(lq[z] for z in _ZIGZAG) + bytes([1]) + bytes(cq[z] for z in _ZIGZAG)
    sof = (
        bytes([8])
        + height.to_bytes(2, "big")
        + width.to_bytes(2, "big")
        + bytes([3, 1, 0x22, 0, 2, 0x11, 1, 3, 0x11, 1])
    )
    dht = (
        _dht(0x00, _DC_LUMA_BITS, _DC_VALUES)
        + _dht(0x10, _AC_LUMA_BITS, _AC_LUMA_VALUES)
        + _dht(0x01, _DC_CHROMA_BITS, _DC_VALUES)
        + _dht(0x11, _AC_CHROMA_BITS, _AC_CHROMA_VALUES)
    )
    sos = bytes([3, 1, 0x00, 2, 0x11, 3, 0x11, 0, 63, 0])
    return b"".join(
        [
            b"\xff\xd8",
            _segment(0xE0, app0),
            _segment(0xDB, dqt),
            _segment(0xC0, sof),
            _segment(0xC4, dht),
            _segment(0xDA, sos),
            scan,
            b"\xff\xd9",
        ]
    )
