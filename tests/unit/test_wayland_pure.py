"""The pure parts of Wayland input and pictures: frame arithmetic (the opaque window box,
finding a window's pixels on a monitor's frame, gst caps), the portal's Start answer and
restore token file, the Wayland screen's pure helpers (session and input kind, typed keysyms,
points inside a window, the proof of the focused window), how a ``not_sent`` delivery note is
classified, and the read-back verdict where the element is only presumed.

Frames are built here, synthetically: a window stream frame (transparent background, a faint
shadow, an opaque window with semi-transparent rounded corners) and a monitor frame with a
background pattern onto which the window's opaque pixels are pasted, its corners blended.
"""

from __future__ import annotations

import math
import os
import stat
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from deskhand_d import paths
from deskhand_d.backends.mcpclient.results import Kind, classify
from deskhand_d.programs.atspi.frames import Frame, composite_rgb, locate, place, size_from_caps
from deskhand_d.programs.atspi.portal import (
    PortalDeclined,
    read_token,
    shared_monitor,
    token_path,
    write_token,
)
from deskhand_d.programs.atspi.remote import Monitor, SeatUnavailable
from deskhand_d.programs.atspi.verify import Expectation, judge
from deskhand_d.programs.atspi.wlscreen import (
    _inside,
    _proven,
    input_kind,
    type_keysyms,
)
from deskhand_d.programs.atspi.x11guard import Guard, InputStopped, Progress
from deskhand_d.programs.atspi.x11keys import XK_RETURN, XK_TAB
from deskhand_d.sessionkind import wayland_session
from deskhand_d.surface import DELIVERY_META

RGB = tuple[int, int, int]
RGBA = tuple[int, int, int, int]
Pixel = Callable[[int, int], RGB]

# --- synthetic frames -------------------------------------------------------------------------

WIN_W, WIN_H = 60, 40
WIN_AT = (30, 20)
STREAM_W, STREAM_H = 200, 150
SCREEN_W, SCREEN_H = 320, 240
CORNER = 3  # pixels (i, j) from a corner with i + j < CORNER are semi-transparent
CORNER_RGB: RGB = (250, 0, 250)


def patterned(x: int, y: int) -> RGB:
    """Window pixels whose every row differs from every other."""
    return (x * 7 + y * 3) % 256, (x * y) % 256, (x + 2 * y) % 256


def flat(x: int, y: int) -> RGB:
    return 10, 20, 30


def background(x: int, y: int) -> RGB:
    """The monitor's wallpaper: a pattern unlike any window's."""
    return (x * 13 + y * 5 + 17) % 256, (x + y * 11) % 256, 200


def in_corner(x: int, y: int, w: int = WIN_W, h: int = WIN_H) -> bool:
    i = min(x, w - 1 - x)
    j = min(y, h - 1 - y)
    return i + j < CORNER


def _put(buf: bytearray, width: int, x: int, y: int, rgba: RGBA) -> None:
    at = (y * width + x) * 4
    buf[at : at + 4] = bytes(rgba)


def window_alpha(x: int, y: int) -> int:
    return 128 if in_corner(x, y) else 255


def window_colour(pixel: Pixel, x: int, y: int) -> RGB:
    return CORNER_RGB if in_corner(x, y) else pixel(x, y)


def stream_frame(
    pixel: Pixel = patterned,
    *,
    alpha: Callable[[int, int], int] = window_alpha,
    colour: Callable[[Pixel, int, int], RGB] = window_colour,
    size: tuple[int, int] = (WIN_W, WIN_H),
    frame: tuple[int, int] = (STREAM_W, STREAM_H),
    at: tuple[int, int] = WIN_AT,
) -> Frame:
    """A window stream's frame: transparent, a 2-pixel faint shadow, then the window."""
    fw, fh = frame
    w, h = size
    buf = bytearray(fw * fh * 4)
    for y in range(-2, h + 2):
        for x in range(-2, w + 2):
            fx, fy = at[0] + x, at[1] + y
            if not (0 <= fx < fw and 0 <= fy < fh):
                continue
            if 0 <= x < w and 0 <= y < h:
                _put(buf, fw, fx, fy, (*colour(pixel, x, y), alpha(x, y)))
            else:
                _put(buf, fw, fx, fy, (0, 0, 0, 60))
    return Frame(fw, fh, bytes(buf))


def screen_frame(
    window: Frame,
    places: list[tuple[int, int]],
    *,
    wallpaper: Pixel = background,
    size: tuple[int, int] = (SCREEN_W, SCREEN_H),
) -> Frame:
    """A monitor's frame with ``window``'s painted pixels composited at each of ``places``
    (clipped to the monitor): opaque pixels as they are, the rest blended with what is behind."""
    sw, sh = size
    buf = bytearray(sw * sh * 4)
    for y in range(sh):
        for x in range(sw):
            _put(buf, sw, x, y, (*wallpaper(x, y), 255))
    box = window.opaque_box()
    assert box is not None
    bx, by, bw, bh = box
    for px, py in places:
        for y in range(bh):
            for x in range(bw):
                sx, sy = px + x, py + y
                if not (0 <= sx < sw and 0 <= sy < sh):
                    continue
                at = ((by + y) * window.width + bx + x) * 4
                r, g, b, a = window.rgba[at : at + 4]
                if a != 255:
                    under = wallpaper(sx, sy)
                    r, g, b = (
                        (c * a + u * (255 - a)) // 255
                        for c, u in zip((r, g, b), under, strict=True)
                    )
                _put(buf, sw, sx, sy, (r, g, b, 255))
    return Frame(sw, sh, bytes(buf))


def repaint(frame: Frame, x: int, y: int, rgb: RGB) -> Frame:
    buf = bytearray(frame.rgba)
    _put(buf, frame.width, x, y, (*rgb, 255))
    return Frame(frame.width, frame.height, bytes(buf))


def needle_row(window: Frame, box: tuple[int, int, int, int]) -> int:
    """The row :func:`locate` searches for: the one with the most different byte values."""
    pixels = window.rgb(box)
    row = box[2] * 3
    return max(range(box[3]), key=lambda r: len(set(pixels[r * row : (r + 1) * row])))


@pytest.fixture(scope="module")
def window() -> Frame:
    return stream_frame()


# --- Frame ------------------------------------------------------------------------------------


@pytest.mark.parametrize("extra", [-1, 1, -4, 4])
def test_frame_rejects_pixels_of_the_wrong_size(extra: int) -> None:
    """A frame's bytes must be exactly width x height x 4."""
    with pytest.raises(ValueError, match="size"):
        Frame(3, 2, bytes(3 * 2 * 4 + extra))


def test_frame_accepts_the_exact_size() -> None:
    frame = Frame(3, 2, bytes(24))
    assert (frame.width, frame.height, len(frame.rgba)) == (3, 2, 24)


def test_opaque_box_is_the_window_without_shadow_or_corners(window: Frame) -> None:
    """The shadow (alpha 60) is outside; rounded corners (alpha 128) do not shrink the box."""
    assert window.opaque_box() == (*WIN_AT, WIN_W, WIN_H)


def test_opaque_box_is_none_without_opaque_pixels() -> None:
    """A frame where nothing is fully opaque (no window painted, or only a shadow)."""
    assert Frame(4, 3, bytes(48)).opaque_box() is None
    assert Frame(2, 1, bytes([9, 9, 9, 254, 9, 9, 9, 60])).opaque_box() is None


def test_opaque_box_of_a_fully_opaque_frame_is_the_frame() -> None:
    frame = Frame(5, 4, bytes([1, 2, 3, 255]) * 20)
    assert frame.opaque_box() == (0, 0, 5, 4)


def test_opaque_box_of_a_single_pixel() -> None:
    buf = bytearray(6 * 5 * 4)
    _put(buf, 6, 4, 3, (1, 2, 3, 255))
    assert Frame(6, 5, bytes(buf)).opaque_box() == (4, 3, 1, 1)


def test_opaque_box_takes_columns_from_the_middle_row() -> None:
    """Rows above and below may be narrower (rounded) or wider: the middle row decides."""
    buf = bytearray(10 * 5 * 4)
    for x in range(3, 6):
        _put(buf, 10, x, 0, (0, 0, 0, 255))  # a narrow top row
    for x in range(1, 8):
        _put(buf, 10, x, 2, (0, 0, 0, 255))  # the middle row: columns 1..7
    for x in range(10):
        _put(buf, 10, x, 4, (0, 0, 0, 255))  # a wide bottom row
    assert Frame(10, 5, bytes(buf)).opaque_box() == (1, 0, 7, 5)


def test_opaque_spans_follow_each_rows_opaque_pixels(window: Frame) -> None:
    """Relative to the box, end exclusive: rounded corners narrow the first and last rows."""
    spans = window.opaque_spans((*WIN_AT, WIN_W, WIN_H))
    assert len(spans) == WIN_H
    assert spans[0] == (3, WIN_W - 3)
    assert spans[1] == (2, WIN_W - 2)
    assert spans[2] == (1, WIN_W - 1)
    assert spans[WIN_H // 2] == (0, WIN_W)
    assert spans[-1] == (3, WIN_W - 3)


def test_opaque_spans_of_rows_without_opaque_pixels(window: Frame) -> None:
    """Rows of the shadow and the transparent background have none: ``(0, 0)``."""
    spans = window.opaque_spans((0, 0, STREAM_W, STREAM_H))
    assert spans[0] == (0, 0)
    assert spans[WIN_AT[1] - 1] == (0, 0)  # the shadow's row
    assert spans[WIN_AT[1] + 5] == (WIN_AT[0], WIN_AT[0] + WIN_W)
    assert spans[-1] == (0, 0)


def test_rgb_packs_the_box_without_alpha() -> None:
    rgba = bytes(range(3 * 2 * 4))
    frame = Frame(3, 2, rgba)
    assert frame.rgb((0, 0, 3, 2)) == bytes(v for i, v in enumerate(rgba) if i % 4 != 3)
    assert frame.rgb((1, 1, 2, 1)) == bytes([16, 17, 18, 20, 21, 22])
    assert frame.rgb((2, 0, 1, 1)) == bytes([8, 9, 10])


def test_rgb_of_the_window(window: Frame) -> None:
    rgb = window.rgb((*WIN_AT, WIN_W, WIN_H))
    assert len(rgb) == WIN_W * WIN_H * 3
    at = (7 * WIN_W + 11) * 3
    assert tuple(rgb[at : at + 3]) == patterned(11, 7)
    assert tuple(rgb[0:3]) == CORNER_RGB


@pytest.mark.parametrize(
    "box",
    [(-1, 0, 1, 1), (0, -1, 1, 1), (0, 0, 0, 1), (0, 0, 1, 0), (1, 0, 3, 1), (0, 1, 1, 2)],
)
def test_rgb_refuses_a_box_outside_the_frame(box: tuple[int, int, int, int]) -> None:
    with pytest.raises(ValueError, match="not inside the 3x2 frame"):
        Frame(3, 2, bytes(24)).rgb(box)


# --- locate -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "place", [(100, 80), (0, 0), (SCREEN_W - WIN_W, SCREEN_H - WIN_H), (7, 199)]
)
def test_locate_finds_the_window_where_it_is(window: Frame, place: tuple[int, int]) -> None:
    """Anywhere wholly on the monitor, edges included."""
    box = window.opaque_box()
    assert box is not None
    screen = screen_frame(window, [place])
    assert locate(window, box, screen) == place


def test_locate_ignores_corners_that_differ(window: Frame) -> None:
    """Rounded corners are blended with what lies behind: not the window stream's colours."""
    box = window.opaque_box()
    assert box is not None
    screen = screen_frame(window, [(100, 80)])
    # Precondition: the corner pixel really differs between the two frames.
    at = (80 * SCREEN_W + 100) * 4
    assert tuple(screen.rgba[at : at + 3]) != CORNER_RGB
    assert locate(window, box, screen) == (100, 80)
    # Whatever is painted there instead, still found.
    for x, y in [(0, 0), (WIN_W - 1, 0), (0, WIN_H - 1), (WIN_W - 1, WIN_H - 1), (2, 0)]:
        screen = repaint(screen, 100 + x, 80 + y, (1, 2, 3))
    assert locate(window, box, screen) == (100, 80)


@pytest.mark.parametrize(
    "pixel",
    [(3, 0), (WIN_W // 2, WIN_H // 2), (WIN_W - 4, WIN_H - 1), (0, WIN_H // 2), (59, 20)],
)
def test_locate_refuses_a_window_with_one_covered_pixel(
    window: Frame, pixel: tuple[int, int]
) -> None:
    """One opaque pixel different (a notification, a cursor, a menu's edge): not found."""
    box = window.opaque_box()
    assert box is not None
    x, y = pixel
    assert window.rgba[((WIN_AT[1] + y) * STREAM_W + WIN_AT[0] + x) * 4 + 3] == 255
    screen = screen_frame(window, [(100, 80)])
    r, g, b = patterned(x, y)
    covered = repaint(screen, 100 + x, 80 + y, (r ^ 1, g, b))
    assert locate(window, box, covered) is None


def test_locate_refuses_a_cover_on_the_searched_row(window: Frame) -> None:
    box = window.opaque_box()
    assert box is not None
    row = needle_row(window, box)
    screen = screen_frame(window, [(100, 80)])
    covered = repaint(screen, 100 + WIN_W // 2, 80 + row, (0, 0, 0))
    assert locate(window, box, covered) is None


def test_locate_refuses_a_window_shown_twice(window: Frame) -> None:
    """Two identical copies: nothing proves which one is the window."""
    box = window.opaque_box()
    assert box is not None
    assert locate(window, box, screen_frame(window, [(10, 10)])) == (10, 10)
    assert locate(window, box, screen_frame(window, [(200, 150)])) == (200, 150)
    assert locate(window, box, screen_frame(window, [(10, 10), (200, 150)])) is None


def test_locate_refuses_a_window_absent_from_the_screen(window: Frame) -> None:
    box = window.opaque_box()
    assert box is not None
    assert locate(window, box, screen_frame(window, [])) is None


@pytest.mark.parametrize(
    "place", [(SCREEN_W - WIN_W + 1, 50), (-1, 50), (100, SCREEN_H - WIN_H + 1), (100, -5)]
)
def test_locate_refuses_a_window_partly_off_screen(window: Frame, place: tuple[int, int]) -> None:
    box = window.opaque_box()
    assert box is not None
    assert locate(window, box, screen_frame(window, [place])) is None


@pytest.mark.parametrize("size", [(SCREEN_W + 10, 50), (50, SCREEN_H + 10)])
def test_locate_refuses_a_window_bigger_than_the_screen(size: tuple[int, int]) -> None:
    window = stream_frame(
        size=size,
        frame=(400, 300),
        at=(5, 5),
        alpha=lambda x, y: 255,
        colour=lambda pixel, x, y: pixel(x, y),
    )
    box = window.opaque_box()
    assert box == (5, 5, *size)
    screen = screen_frame(stream_frame(), [(0, 0)])
    assert locate(window, box, screen) is None


def test_locate_searches_a_partly_opaque_row(window: Frame) -> None:
    """The most distinctive row lies among rounded corners: only its opaque part is searched,
    and the window is still found."""

    def top_row_loud(pixel: Pixel, x: int, y: int) -> RGB:
        if y == 0 and in_corner(x, y):
            return x * 17 % 256, (x * 29 + 5) % 256, (x * 41 + 9) % 256  # all different
        return CORNER_RGB if in_corner(x, y) else pixel(x, y)

    loud = stream_frame(flat, colour=top_row_loud)
    box = loud.opaque_box()
    assert box == (*WIN_AT, WIN_W, WIN_H)
    assert needle_row(loud, box) == 0
    assert loud.opaque_spans(box)[0] == (CORNER, WIN_W - CORNER)
    screen = screen_frame(loud, [(150, 33)], wallpaper=lambda x, y: (200, 200, 200))
    assert locate(loud, box, screen) == (150, 33)


def test_locate_finds_a_flat_window_on_a_flat_screen() -> None:
    """Every row alike and a single colour: the searched row matches in many places, yet
    only one place holds the whole window."""
    window = stream_frame(flat)
    box = window.opaque_box()
    assert box is not None

    def wallpaper(x: int, y: int) -> RGB:
        return 200, 200, 200

    for at in [(40, 60), (0, 0), (SCREEN_W - WIN_W, SCREEN_H - WIN_H)]:
        screen = screen_frame(window, [at], wallpaper=wallpaper)
        assert locate(window, box, screen) == at
    assert (
        locate(window, box, screen_frame(window, [(0, 0), (200, 100)], wallpaper=wallpaper)) is None
    )


def test_locate_refuses_a_flat_window_inside_a_larger_area_of_its_colour() -> None:
    """The window's colour filling more than the window: it could be anywhere in it."""
    window = stream_frame(flat)
    box = window.opaque_box()
    assert box is not None
    screen = screen_frame(window, [(40, 60)], wallpaper=lambda x, y: flat(x, y))
    assert locate(window, box, screen) is None


def test_locate_finds_a_window_whose_most_distinctive_row_is_translucent() -> None:
    translucent_row = 30

    def alpha(x: int, y: int) -> int:
        return 128 if y == translucent_row else window_alpha(x, y)

    def colour(pixel: Pixel, x: int, y: int) -> RGB:
        if y == translucent_row:
            return (x * 4) % 256, (x * 4 + 1) % 256, (x * 4 + 2) % 256
        return window_colour(pixel, x, y)

    window = stream_frame(alpha=alpha, colour=colour)
    box = window.opaque_box()
    assert box == (*WIN_AT, WIN_W, WIN_H)
    assert needle_row(window, box) == translucent_row
    assert window.opaque_spans(box)[translucent_row] == (0, 0)
    screen = screen_frame(window, [(100, 80)])
    assert locate(window, box, screen) == (100, 80)


# --- size_from_caps ---------------------------------------------------------------------------

_CAPS_LINE = (
    "/GstPipeline:pipeline0/GstFileSink:filesink0.GstPad:sink: caps = video/x-raw, "
    "format=(string)RGBA, width=(int){w}, height=(int){h}, framerate=(fraction)0/1, "
    "pixel-aspect-ratio=(fraction)1/1"
)


def test_size_from_caps_reads_one_caps_line() -> None:
    text = "Setting pipeline to PAUSED ...\n" + _CAPS_LINE.format(w=1280, h=800) + "\n"
    assert size_from_caps(text) == (1280, 800)


def test_size_from_caps_takes_the_last_match() -> None:
    text = "\n".join(
        [
            "Pipeline is PREROLLING ...",
            _CAPS_LINE.format(w=1920, h=1080),
            _CAPS_LINE.format(w=640, h=480),
            "Got EOS from element pipeline0.",
            _CAPS_LINE.format(w=1280, h=800),
            "Execution ended after 0:00:00.0",
        ]
    )
    assert size_from_caps(text) == (1280, 800)


@pytest.mark.parametrize(
    "text",
    [
        "",
        'ERROR: pipeline could not be constructed: no element "pipewiresrc".',
        "caps = video/x-raw, width=(int)[ 1, 2147483647 ], height=(int)[ 1, 2147483647 ]",
    ],
)
def test_size_from_caps_without_a_fixed_size(text: str) -> None:
    assert size_from_caps(text) is None


# --- portal: the Start answer -----------------------------------------------------------------


def _started(devices: int | None = 3, streams: list[Any] | None = None) -> dict[str, Any]:
    results: dict[str, Any] = {}
    if devices is not None:
        results["devices"] = ("u", devices)
    if streams is None:
        streams = [
            (
                37,
                {
                    "position": ("(ii)", (0, 0)),
                    "size": ("(ii)", (1280, 900)),
                    "source_type": ("u", 1),
                },
            )
        ]
    results["streams"] = ("a(ua{sv})", streams)
    return results


def test_shared_monitor_reads_the_stream() -> None:
    assert shared_monitor(_started()) == Monitor(37, (0, 0), (1280, 900))


def test_shared_monitor_keeps_the_monitors_place() -> None:
    streams = [(51, {"position": ("(ii)", (1920, -200)), "size": ("(ii)", (2560, 1440))})]
    assert shared_monitor(_started(streams=streams)) == Monitor(51, (1920, -200), (2560, 1440))


def test_shared_monitor_takes_the_first_stream() -> None:
    streams = [
        (5, {"position": ("(ii)", (0, 0)), "size": ("(ii)", (800, 600))}),
        (6, {"position": ("(ii)", (800, 0)), "size": ("(ii)", (1024, 768))}),
    ]
    assert shared_monitor(_started(streams=streams)).node == 5


def test_shared_monitor_accepts_more_devices_than_asked() -> None:
    """Keyboard and pointer are what matter; a touchscreen too changes nothing."""
    assert shared_monitor(_started(devices=1 | 2 | 4)).node == 37


@pytest.mark.parametrize("devices", [None, 0, 1, 2, 4, 1 | 4, 2 | 4])
def test_shared_monitor_needs_keyboard_and_pointer(devices: int | None) -> None:
    with pytest.raises(PortalDeclined, match="remote interaction"):
        shared_monitor(_started(devices=devices))


def test_portal_declined_is_a_seat_problem() -> None:
    assert issubclass(PortalDeclined, SeatUnavailable)


@pytest.mark.parametrize(
    "results",
    [_started(streams=[]), {"devices": ("u", 3)}],
    ids=["no-streams", "streams-missing"],
)
def test_shared_monitor_needs_a_stream(results: dict[str, Any]) -> None:
    with pytest.raises(SeatUnavailable, match="shared no screen") as caught:
        shared_monitor(results)
    assert not isinstance(caught.value, PortalDeclined)


# --- portal: the restore token ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, "/x/state"),
        ({"XDG_STATE_HOME": "", "HOME": "/home/u"}, "/home/u/.local/state"),
        ({"HOME": "/home/u"}, "/home/u/.local/state"),
    ],
)
def test_token_path(env: dict[str, str], expected: str) -> None:
    assert token_path(env) == Path(expected) / "deskhand" / "portal-restore-token"


@pytest.mark.parametrize(
    "env",
    [{"XDG_STATE_HOME": "/x/state", "HOME": "/home/u"}, {"HOME": "/home/u"}],
)
def test_token_path_is_in_the_daemons_state_folder(env: dict[str, str]) -> None:
    """The same folder :func:`deskhand_d.paths.state_dir` names (on Linux)."""
    if paths.is_macos():
        pytest.skip("the portal exists on Linux only")
    assert token_path(env) == paths.state_dir(env) / "portal-restore-token"


def test_token_path_with_an_empty_home_is_absolute() -> None:
    assert token_path({"HOME": ""}).is_absolute()


@pytest.fixture(params=[0o000, 0o022, 0o077], ids=["umask000", "umask022", "umask077"])
def umask(request: pytest.FixtureRequest) -> Iterator[int]:
    mask: int = request.param
    old = os.umask(mask)
    try:
        yield mask
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_write_token_is_owner_only(tmp_path: Path, umask: int) -> None:
    """Whatever the umask, the folder is made 0700 and the file 0600."""
    path = token_path({"XDG_STATE_HOME": str(tmp_path / "state")})
    write_token(path, "tok-1")
    assert path.read_text(encoding="utf-8") == "tok-1"
    assert _mode(path) == 0o600
    assert _mode(path.parent) == 0o700
    assert [p.name for p in path.parent.iterdir()] == ["portal-restore-token"]


def test_write_token_replaces_the_file_whole(tmp_path: Path) -> None:
    """A new token replaces a longer old one entirely, and an old file's loose mode goes."""
    path = tmp_path / "deskhand" / "portal-restore-token"
    path.parent.mkdir(mode=0o700)
    path.write_text("an-old-and-much-longer-token\n", encoding="utf-8")
    path.chmod(0o644)
    old_inode = path.stat().st_ino
    write_token(path, "new")
    assert path.read_bytes() == b"new"
    assert _mode(path) == 0o600
    assert path.stat().st_ino != old_inode  # renamed into place, not rewritten
    assert not path.with_name(path.name + ".new").exists()


def test_token_round_trips(tmp_path: Path) -> None:
    path = tmp_path / "a" / "b" / "portal-restore-token"
    write_token(path, "3f9c-ünïcode")
    assert read_token(path) == "3f9c-ünïcode"
    write_token(path, "second")
    assert read_token(path) == "second"


def test_read_token_strips_whitespace(tmp_path: Path) -> None:
    path = tmp_path / "portal-restore-token"
    path.write_text("  abc\n", encoding="utf-8")
    assert read_token(path) == "abc"


def test_read_token_of_a_missing_or_unreadable_file_is_empty(tmp_path: Path) -> None:
    assert read_token(tmp_path / "nothing-here") == ""
    assert read_token(tmp_path / "no" / "such" / "folder") == ""
    assert read_token(tmp_path) == ""  # a directory
    garbage = tmp_path / "garbage"
    garbage.write_bytes(b"\xff\xfe\xfa")
    assert read_token(garbage) == ""


# --- wlscreen: session and input kind ---------------------------------------------------------


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({}, False),
        ({"WAYLAND_DISPLAY": ""}, False),
        ({"WAYLAND_DISPLAY": "wayland-0"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "tty"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "x11"}, False),
        ({"DISPLAY": ":0", "XDG_SESSION_TYPE": "wayland"}, False),
    ],
)
def test_wayland_session(env: dict[str, str], expected: bool) -> None:
    assert wayland_session(env) is expected


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        (None, "portal"),
        ("", "portal"),
        ("portal", "portal"),
        ("mutter", "mutter"),
        (" Mutter\n", "mutter"),
        ("PORTAL", "portal"),
        ("x11", "portal"),
        ("ydotool", "portal"),
    ],
)
def test_input_kind(value: str | None, expected: str) -> None:
    env = {} if value is None else {"DESKHAND_WAYLAND_INPUT": value}
    assert input_kind(env) == expected


# --- wlscreen: typed keysyms ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", []),
        ("ab", [0x61, 0x62]),
        ("a\nb", [0x61, 0xFF0D, 0x62]),
        ("a\tb", [0x61, 0xFF09, 0x62]),
        ("\r\n", [0xFF0D]),
        ("x\r\ny", [0x78, 0xFF0D, 0x79]),
        ("\r", [0xFF0D]),
        ("\n\n", [0xFF0D, 0xFF0D]),
        ("\r\r\n", [0xFF0D, 0xFF0D]),
        ("é", [0xE9]),
        ("€", [0x01000000 + 0x20AC]),
    ],
)
def test_type_keysyms(text: str, expected: list[int]) -> None:
    assert type_keysyms(text) == expected


def test_type_keysyms_constants() -> None:
    assert (XK_RETURN, XK_TAB) == (0xFF0D, 0xFF09)


@pytest.mark.parametrize("text", ["\x07", "ok\x00", "\x1b[A", "\x7f", "a\u0085b"])
def test_type_keysyms_refuses_control_characters(text: str) -> None:
    with pytest.raises(ValueError, match="control character"):
        type_keysyms(text)


# --- wlscreen: points inside the window -------------------------------------------------------


def _accepted(size: tuple[int, int], points: list[tuple[float, float]]) -> bool:
    try:
        _inside(size, points)
    except ValueError:
        return False
    return True


@pytest.mark.parametrize(
    "points",
    [[], [(0, 0)], [(59.9, 39.9)], [(30, 20), (0.5, 39)], [(5, 5)]],
)
def test_inside_accepts_points_in_the_window(points: list[tuple[float, float]]) -> None:
    """Window coordinates, checked against the window's size."""
    assert _accepted((60, 40), points)


@pytest.mark.parametrize(
    "point",
    [
        (60, 0),
        (0, 40),
        (-0.1, 5),
        (5, -1),
        (math.nan, 5),
        (5, math.nan),
        (math.inf, 5),
        (5, -math.inf),
    ],
)
def test_inside_refuses_points_outside_or_not_finite(point: tuple[float, float]) -> None:
    with pytest.raises(ValueError, match="not inside the 60x40 window"):
        _inside((60, 40), [(1, 1), point])


# --- wlscreen: proof of the focused window ----------------------------------------------------


def _guard(*sizes: tuple[int, int], others: tuple[tuple[int, int], ...] = ()) -> Guard:
    return Guard(pid=os.getpid(), window_sizes=frozenset(sizes), other_sizes=frozenset(others))


def test_proven_returns_the_box_of_one_of_the_apps_windows(window: Frame) -> None:
    progress = Progress(3, "clicks")
    placed = _proven(window, _guard((800, 600), (WIN_W, WIN_H)), progress, "the click")
    assert placed.box == (*WIN_AT, WIN_W, WIN_H) and placed.origin == WIN_AT


@pytest.mark.parametrize("sizes", [[], [(WIN_W + 1, WIN_H)], [(WIN_H, WIN_W)], [(300, 300)]])
def test_proven_stops_on_a_window_of_another_size(
    window: Frame, sizes: list[tuple[int, int]]
) -> None:
    progress = Progress(5, "characters")
    with pytest.raises(InputStopped) as caught:
        _proven(window, _guard(*sizes), progress, "the typing")
    stopped = caught.value
    assert stopped.reason == "target_changed"
    assert (stopped.done, stopped.total, stopped.unit) == (0, 5, "characters")
    assert f"a {WIN_W}x{WIN_H} window" in str(stopped)
    assert "the typing" in stopped.detail


def test_proven_stops_when_no_window_is_painted() -> None:
    empty = Frame(20, 10, bytes(20 * 10 * 4))
    with pytest.raises(InputStopped) as caught:
        _proven(empty, _guard((20, 10)), Progress(1, "keys"), "the key")
    assert caught.value.reason == "target_changed"
    assert caught.value.done == 0
    assert "no window" in str(caught.value)


@pytest.mark.parametrize(
    "other", [(WIN_W, WIN_H), (WIN_W + 60, WIN_H + 60), (WIN_W - 6, WIN_H - 33)]
)
def test_proven_stops_when_another_apps_window_could_be_it(
    window: Frame, other: tuple[int, int]
) -> None:
    """Another app's window of the same size, or one whose shadow or frame would make it
    look the same, proves nothing."""
    guard = _guard((WIN_W, WIN_H), others=(other,))
    with pytest.raises(InputStopped) as caught:
        _proven(window, guard, Progress(2, "clicks"), "the click")
    assert caught.value.reason == "target_changed"
    assert (caught.value.done, caught.value.total) == (0, 2)
    assert "could be as well" in str(caught.value)


def test_proven_reports_how_far_input_got(window: Frame) -> None:
    """A later batch that stops says how much the earlier ones sent."""
    progress = Progress(64, "characters")
    progress.done = 32
    with pytest.raises(InputStopped) as caught:
        _proven(window, _guard(), progress, "the typing")
    assert (caught.value.done, caught.value.total) == (32, 64)


# --- results: delivery notes of errors --------------------------------------------------------


def _result(note: dict[str, Any], *, is_error: bool = True) -> dict[str, Any]:
    return {
        "content": [{"type": "text", "text": "There is no field at index 7."}],
        "isError": is_error,
        "_meta": {DELIVERY_META: note},
    }


def test_not_sent_refusal_is_a_tool_error_known_to_have_sent_nothing() -> None:
    out = classify(_result({"state": "refused", "reason": "not_sent"}))
    assert out.kind is Kind.TOOL_ERROR
    assert out.is_error
    assert out.text == "There is no field at index 7."
    assert out.shortfall is not None
    assert (out.shortfall.state, out.shortfall.reason) == ("refused", "not_sent")


@pytest.mark.parametrize("state", ["unknown", "partial"])
def test_not_sent_with_another_state_is_ignored(state: str) -> None:
    out = classify(_result({"state": state, "reason": "not_sent"}))
    assert out.kind is Kind.TOOL_ERROR
    assert out.shortfall is None


def test_target_changed_refusal_is_input_stopped() -> None:
    note = {"state": "refused", "reason": "target_changed", "done": 0, "total": 3, "unit": "clicks"}
    out = classify(_result(note))
    assert out.kind is Kind.INPUT_STOPPED
    assert out.shortfall is not None
    assert (out.shortfall.state, out.shortfall.reason) == ("refused", "target_changed")
    assert (out.shortfall.done, out.shortfall.total, out.shortfall.unit) == (0, 3, "clicks")


def test_not_sent_on_a_success_is_not_read() -> None:
    out = classify(_result({"state": "refused", "reason": "not_sent"}, is_error=False))
    assert out.kind is Kind.OK
    assert out.shortfall is None


# --- verify: the verdict where the element is only presumed -----------------------------------

_REF = (":1.42", "/org/a11y/atspi/accessible/17")


@pytest.mark.parametrize(
    ("known", "after", "verdict"),
    [
        (False, "hello", "unreadable"),
        (False, "hello world", "changed"),
        (False, "", "changed"),
        (False, None, "unreadable"),
        (True, "hello", "unchanged"),
        (True, "hello world", "changed"),
    ],
)
def test_judge_text_known_or_presumed(known: bool, after: str | None, verdict: str) -> None:
    expect = Expectation(_REF, "text", "hello", known=known)
    assert judge(expect, after) == verdict


def test_judge_value_asked_for_is_changed_even_when_presumed() -> None:
    expect = Expectation(_REF, "value", "5", wanted="5", known=False)
    assert judge(expect, "5") == "changed"


def test_expectation_is_known_by_default() -> None:
    expect = Expectation(_REF, "text", "abc")
    assert expect.known is True
    assert judge(expect, "abc") == "unchanged"


# --- locate around the points pointer input goes to -------------------------------------------


def _cover(screen: Frame, x0: int, y0: int, w: int, h: int) -> Frame:
    buf = bytearray(screen.rgba)
    for y in range(y0, y0 + h):
        for x in range(x0, x0 + w):
            _put(buf, screen.width, x, y, (255, 0, 255, 255))
    return Frame(screen.width, screen.height, bytes(buf))


def test_locate_around_a_point_ignores_a_cover_elsewhere(window: Frame) -> None:
    """A popover or a blinking caret over one part of the window does not matter for a click
    far from it; over the point it does."""
    box = window.opaque_box()
    assert box is not None
    screen = _cover(screen_frame(window, [(100, 80)]), 100 + 40, 80 + 25, 15, 10)
    assert locate(window, box, screen) is None  # not wholly in view
    assert locate(window, box, screen, [(10.0, 10.0)]) == (100, 80)
    assert locate(window, box, screen, [(47.0, 30.0)]) is None  # under the cover
    assert locate(window, box, screen, [(10.0, 10.0), (47.0, 30.0)]) is None  # a drag's end


def test_locate_around_a_point_refuses_a_cover_within_its_patch(window: Frame) -> None:
    """A cover a few pixels beside the point: what the pointer lands on is not proven."""
    box = window.opaque_box()
    assert box is not None
    screen = repaint(screen_frame(window, [(100, 80)]), 100 + 25, 80 + 20, (255, 0, 255))
    assert locate(window, box, screen, [(30.0, 20.0)]) is None
    assert locate(window, box, screen, [(30.0 + 20, 20.0)]) == (100, 80)


def test_locate_around_a_point_refuses_a_point_on_a_corner(window: Frame) -> None:
    """The point's own pixel is not opaque (a rounded corner): nothing shows it is the
    window's."""
    box = window.opaque_box()
    assert box is not None
    screen = screen_frame(window, [(100, 80)])
    assert locate(window, box, screen, [(0.0, 0.0)]) is None


def test_locate_around_a_point_still_finds_a_window_whose_best_row_is_covered(
    window: Frame,
) -> None:
    box = window.opaque_box()
    assert box is not None
    row = needle_row(window, box)
    screen = _cover(screen_frame(window, [(100, 80)]), 100, 80 + row, WIN_W, 1)
    far = 5.0 if row > WIN_H // 2 else float(WIN_H - 5)
    assert locate(window, box, screen, [(30.0, far)]) == (100, 80)


# --- place: how a toolkit's window rectangle sits in a window stream --------------------------


@pytest.mark.parametrize(
    ("box", "size", "origin"),
    [
        ((61, 55, 360, 489), (360, 489), (61, 55)),  # GTK 4: the rectangle is the window
        ((26, 23, 640, 517), (692, 569), (0, 0)),  # GTK 3: the surface, shadow included
        ((0, 0, 706, 533), (700, 500), None),  # Qt: content inside its own frame
    ],
    ids=["gtk4", "gtk3-shadow", "qt-frame"],
)
def test_place_follows_each_toolkit(
    box: tuple[int, int, int, int], size: tuple[int, int], origin: tuple[int, int] | None
) -> None:
    placed = place(box, size)
    assert placed is not None and placed.origin == origin and placed.size == size


@pytest.mark.parametrize(
    ("box", "size"),
    [
        ((0, 0, 640, 517), (800, 700)),  # much larger than any shadow
        ((70, 10, 640, 517), (800, 600)),  # the opaque window too far in for a shadow
        ((26, 23, 640, 517), (650, 530)),  # the box does not fit inside
        ((0, 0, 706, 533), (500, 300)),  # far smaller than any frame
    ],
)
def test_place_refuses_what_no_toolkit_explains(
    box: tuple[int, int, int, int], size: tuple[int, int]
) -> None:
    assert place(box, size) is None


def test_composite_lays_what_is_not_opaque_over_white() -> None:
    pixels = bytes([10, 20, 30, 255, 0, 0, 0, 0, 0, 0, 0, 128])
    frame = Frame(3, 1, pixels)
    assert composite_rgb(frame, (0, 0, 3, 1)) == bytes([10, 20, 30, 255, 255, 255, 127, 127, 127])
    assert composite_rgb(frame, (0, 0, 1, 1)) == bytes([10, 20, 30])
    with pytest.raises(ValueError):
        composite_rgb(frame, (1, 0, 3, 1))
