"""The pure PNG encoder: valid files whose pixels decode back exactly."""

from __future__ import annotations

import os
import struct
import zlib

import pytest
from atspi_x11.pngdecode import SIGNATURE, chunks, decode
from hypothesis import given, settings
from hypothesis import strategies as st

from deskhand_d.programs.atspi.png import PixelFormat, encode_rgb, pack_rgb


def _gradient(width: int, height: int) -> bytes:
    return bytes(
        v for y in range(height) for x in range(width) for v in (x % 256, y % 256, (x ^ y) % 256)
    )


def test_layout_is_signature_ihdr_idat_iend() -> None:
    """The file is the signature, then IHDR, IDAT and IEND, each with a valid CRC."""
    data = encode_rgb(3, 2, bytes(18))
    assert data.startswith(SIGNATURE)
    kinds = [kind for kind, _ in chunks(data)]
    assert kinds == [b"IHDR", b"IDAT", b"IEND"]


def test_header_says_8_bit_rgb() -> None:
    """IHDR records the size, bit depth 8, colour type 2 (RGB), no interlacing."""
    header = chunks(encode_rgb(7, 5, bytes(7 * 5 * 3)))[0][1]
    assert struct.unpack(">IIBBBBB", header) == (7, 5, 8, 2, 0, 0, 0)


def test_single_pixel_round_trips() -> None:
    """A 1x1 image keeps its exact colour."""
    image = decode(encode_rgb(1, 1, b"\x12\x34\x56"))
    assert (image.width, image.height) == (1, 1)
    assert image.pixel(0, 0) == (0x12, 0x34, 0x56)


def test_gradient_round_trips() -> None:
    """Every pixel of a non-square gradient comes back unchanged."""
    rgb = _gradient(300, 17)
    image = decode(encode_rgb(300, 17, rgb))
    assert image.rgb == rgb
    assert image.pixel(299, 16) == (299 % 256, 16, (299 ^ 16) % 256)


@pytest.mark.parametrize("level", [0, 1, 6, 9])
def test_every_level_round_trips(level: int) -> None:
    """Compression levels change the size, never the pixels."""
    rgb = os.urandom(64 * 48 * 3)
    assert decode(encode_rgb(64, 48, rgb, level=level)).rgb == rgb


def test_accepts_bytearray_and_memoryview() -> None:
    """Callers may pass any bytes-like buffer without copying it first."""
    rgb = _gradient(4, 4)
    assert (
        encode_rgb(4, 4, bytearray(rgb))
        == encode_rgb(4, 4, memoryview(rgb))
        == encode_rgb(4, 4, rgb)
    )


def test_every_row_uses_filter_none() -> None:
    """Each scanline starts with filter byte 0, as the module promises."""
    idat = chunks(encode_rgb(5, 4, _gradient(5, 4)))[1][1]
    raw = zlib.decompress(idat)
    assert [raw[row * 16] for row in range(4)] == [0, 0, 0, 0]


def test_flat_screen_compresses_well() -> None:
    """A flat 1280x900 screen, the common desktop case, shrinks to a few kilobytes."""
    data = encode_rgb(1280, 900, b"\x30\x60\x90" * (1280 * 900))
    assert len(data) < 20_000


@pytest.mark.parametrize(
    ("width", "height", "length", "message"),
    [
        (0, 1, 0, "positive"),
        (1, -1, 0, "positive"),
        (2, 2, 11, "needs 12 bytes, got 11"),
        (2, 2, 13, "needs 12 bytes, got 13"),
    ],
)
def test_bad_sizes_are_rejected(width: int, height: int, length: int, message: str) -> None:
    """Sizes that don't match the buffer fail with a message naming the problem."""
    with pytest.raises(ValueError, match=message):
        encode_rgb(width, height, bytes(length))


def test_bad_level_is_rejected() -> None:
    """zlib levels outside 0..9 are an error, not silently clamped."""
    with pytest.raises(ValueError, match=r"0\.\.9"):
        encode_rgb(1, 1, bytes(3), level=10)


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 24), st.integers(1, 24), st.data())
def test_any_image_round_trips(width: int, height: int, data: st.DataObject) -> None:
    """Arbitrary small images decode to exactly the pixels that went in."""
    rgb = data.draw(st.binary(min_size=width * height * 3, max_size=width * height * 3))
    image = decode(encode_rgb(width, height, rgb))
    assert (image.width, image.height, image.rgb) == (width, height, rgb)


def test_pack_rgb_from_32_bit_little_endian() -> None:
    """0x00RRGGBB pixels stored low byte first (B, G, R, X) become R, G, B."""
    pixels = bytes([0x03, 0x02, 0x01, 0xEE, 0x30, 0x20, 0x10, 0xEE])
    fmt = PixelFormat(bytes_per_pixel=4, row_align=4, offsets=(2, 1, 0))
    assert pack_rgb(pixels, 2, 1, fmt) == bytes([1, 2, 3, 0x10, 0x20, 0x30])


def test_pack_rgb_from_32_bit_big_endian() -> None:
    """The same pixels stored high byte first (X, R, G, B)."""
    pixels = bytes([0xEE, 1, 2, 3, 0xEE, 4, 5, 6])
    fmt = PixelFormat(bytes_per_pixel=4, row_align=4, offsets=(1, 2, 3))
    assert pack_rgb(pixels, 1, 2, fmt) == bytes([1, 2, 3, 4, 5, 6])


def test_pack_rgb_drops_row_padding() -> None:
    """24-bit rows padded to 4 bytes lose the padding; the pixels stay in order."""
    fmt = PixelFormat(bytes_per_pixel=3, row_align=4, offsets=(0, 1, 2))
    assert fmt.stride(1) == 4
    pixels = bytes([1, 2, 3, 0xFF, 4, 5, 6, 0xFF])
    assert pack_rgb(pixels, 1, 2, fmt) == bytes([1, 2, 3, 4, 5, 6])


def test_pack_rgb_rejects_short_buffers() -> None:
    """Too few bytes for the rows is a clear error, not a garbled image."""
    fmt = PixelFormat(bytes_per_pixel=4, row_align=4, offsets=(2, 1, 0))
    with pytest.raises(ValueError, match="too few"):
        pack_rgb(bytes(7), 2, 1, fmt)
