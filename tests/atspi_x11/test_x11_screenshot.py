"""Screenshots through X11: the pixels in the PNG are the pixels on the screen."""

from __future__ import annotations

import time

import pytest
from atspi_x11.pngdecode import decode
from x11peer import SCREEN, PeerWindow

from deskhand_d.programs.atspi.x11 import X11

BACKGROUND = 0x203040
RED, GREEN, BLUE, ODD = 0xFF0000, 0x00FF00, 0x0000FF, 0x123456


def rgb(colour: int) -> tuple[int, int, int]:
    return colour >> 16, (colour >> 8) & 0xFF, colour & 0xFF


@pytest.fixture
def pattern(peer: PeerWindow) -> PeerWindow:
    """The peer window painted with known rectangles (window coordinates)."""
    peer.fill(0, 0, 400, 300, BACKGROUND)
    peer.fill(10, 10, 50, 30, RED)
    peer.fill(100, 50, 20, 80, GREEN)
    peer.fill(200, 200, 100, 50, BLUE)
    peer.fill(399, 299, 1, 1, ODD)
    return peer


def test_window_capture_shows_the_drawn_rectangles(x11: X11, pattern: PeerWindow) -> None:
    """Each rectangle appears at its place with its exact colour and sharp edges."""
    image = decode(x11.screenshot_png(pattern.x, pattern.y, 400, 300))
    assert (image.width, image.height) == (400, 300)
    expected = {
        (0, 0): BACKGROUND,
        (10, 10): RED,
        (59, 39): RED,
        (9, 10): BACKGROUND,
        (60, 39): BACKGROUND,
        (59, 40): BACKGROUND,
        (110, 90): GREEN,
        (119, 129): GREEN,
        (120, 129): BACKGROUND,
        (250, 225): BLUE,
        (299, 249): BLUE,
        (398, 299): BACKGROUND,
        (399, 299): ODD,
    }
    for (x, y), colour in expected.items():
        assert image.pixel(x, y) == rgb(colour), (x, y)


def test_whole_image_matches_pixel_for_pixel(x11: X11, pattern: PeerWindow) -> None:
    """Every pixel of the capture equals the pattern as painted."""
    image = decode(x11.screenshot_png(pattern.x, pattern.y, 400, 300))
    rects = [
        (10, 10, 50, 30, RED),
        (100, 50, 20, 80, GREEN),
        (200, 200, 100, 50, BLUE),
        (399, 299, 1, 1, ODD),
    ]
    expected = bytearray(bytes(rgb(BACKGROUND)) * (400 * 300))
    for rx, ry, rw, rh, colour in rects:
        for y in range(ry, ry + rh):
            expected[(y * 400 + rx) * 3 : (y * 400 + rx + rw) * 3] = bytes(rgb(colour)) * rw
    assert image.rgb == bytes(expected)


def test_sub_rectangle_uses_root_coordinates(x11: X11, pattern: PeerWindow) -> None:
    """A capture starting inside the window is offset by the window's root position."""
    image = decode(x11.screenshot_png(pattern.x + 5, pattern.y + 5, 20, 10))
    assert (image.width, image.height) == (20, 10)
    assert image.pixel(0, 0) == rgb(BACKGROUND)
    assert image.pixel(5, 5) == rgb(RED)
    assert image.pixel(19, 9) == rgb(RED)


def test_full_screen(x11: X11, pattern: PeerWindow) -> None:
    """The whole screen comes back at its real size, the window where it was put."""
    image = decode(x11.screenshot_png(0, 0, *SCREEN))
    assert (image.width, image.height) == SCREEN
    assert image.pixel(pattern.x + 10, pattern.y + 10) == rgb(RED)
    assert image.pixel(pattern.x - 1, pattern.y) == (0, 0, 0)


@pytest.mark.parametrize(
    ("rect", "size"),
    [
        ((-10, -20, 50, 50), (40, 30)),
        ((1270, 890, 100, 100), (10, 10)),
        ((-5, -5, 2000, 2000), SCREEN),
    ],
)
def test_rectangles_are_clipped_to_the_screen(
    x11: X11, rect: tuple[int, int, int, int], size: tuple[int, int]
) -> None:
    """Parts of the rectangle off screen are cut away rather than failing the call."""
    image = decode(x11.screenshot_png(*rect))
    assert (image.width, image.height) == size


@pytest.mark.parametrize(
    ("rect", "message"),
    [
        ((0, 0, 0, 10), "positive"),
        ((0, 0, 10, -1), "positive"),
        ((1280, 0, 10, 10), "outside"),
        ((-50, -50, 50, 50), "outside"),
    ],
)
def test_empty_or_off_screen_rectangles_are_errors(
    x11: X11, rect: tuple[int, int, int, int], message: str
) -> None:
    """Nothing to capture is a ValueError, not an empty PNG."""
    with pytest.raises(ValueError, match=message):
        x11.screenshot_png(*rect)


def test_full_screen_capture_is_fast(x11: X11, pattern: PeerWindow) -> None:
    """A full 1280x900 screenshot takes well under half a second (typically ~50 ms)."""
    x11.screenshot_png(0, 0, *SCREEN)
    start = time.perf_counter()
    for _ in range(3):
        x11.screenshot_png(0, 0, *SCREEN)
    assert (time.perf_counter() - start) / 3 < 0.5
