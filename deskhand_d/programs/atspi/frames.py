"""Pictures of a compositor's screen-cast stream, and what their pixels prove. Pure but for
:func:`settled`.

What this owns: taking frames of a PipeWire stream (``gst-launch-1.0`` with ``pipewiresrc``,
converted to RGBA): the last one before the stream went quiet (:func:`settled`; a window's
stream carries a frame only when the window is drawn again, so a stream that sends nothing for
a while shows what the window shows now), or with no wait the first one; and the arithmetic on
them: where the window is inside a window stream's frame, and that window's pixels as packed
RGB for a PNG.

A window stream (Mutter's ``RecordWindow``) paints the window's whole buffer, client-side
shadow included, at the frame's top-left, on a transparent background that fills the rest of
the frame. The window itself is opaque, its shadow only partly: the rectangle of fully opaque
pixels is the window as the toolkit sizes it (GTK 4's window extents are exactly that size),
and its top-left corner is where the toolkit's window coordinates start inside the stream.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import trio

Box = tuple[int, int, int, int]

#: How long gst-launch may take to start and agree on a format with the stream (well under a
#: second on an idle machine; a busy one takes longer, and that is no reason to give up).
START_TIMEOUT_S: Final = 5.0
#: How long the first frame may take to arrive once the format is agreed (about 0.05 s). A
#: new stream of a window sometimes sends none until the window is drawn again (1 in about
#: 15, more right after an app started); another new stream does, so callers ask again
#: rather than wait long.
GRAB_TIMEOUT_S: Final = 1.0
GST_LAUNCH: Final = "gst-launch-1.0"
_CAPS: Final = re.compile(r"width=\(int\)(\d+), height=\(int\)(\d+)")
_OPAQUE: Final = 0xFF


class FrameUnavailable(Exception):
    """No frame could be taken; the message says why and what to install."""


@dataclass(frozen=True, slots=True)
class Frame:
    """One RGBA frame, rows packed without padding."""

    width: int
    height: int
    rgba: bytes

    def __post_init__(self) -> None:
        if len(self.rgba) != self.width * self.height * 4:
            raise ValueError("the frame's size does not match its pixels")

    def opaque_box(self) -> Box | None:
        """The rectangle of fully opaque pixels: its first and last rows and, on the row in
        its middle (below rounded corners), its first and last columns. None when nothing in
        the frame is opaque (no window was painted)."""
        stride = self.width * 4
        alpha = self.rgba[3::4]
        first = alpha.find(_OPAQUE.to_bytes(1, "big"))
        if first < 0:
            return None
        last = alpha.rfind(_OPAQUE.to_bytes(1, "big"))
        top, bottom = first // self.width, last // self.width
        middle = (top + bottom) // 2
        row = self.rgba[middle * stride + 3 : (middle + 1) * stride : 4]
        left = row.find(b"\xff")
        right = row.rfind(b"\xff")
        if left < 0:
            return None
        return left, top, right - left + 1, bottom - top + 1

    def opaque_spans(self, box: Box) -> list[tuple[int, int]]:
        """For each row of ``box``: the columns (relative to it, end exclusive) from its
        first to its last fully opaque pixel; ``(0, 0)`` for a row with none."""
        x, y, w, h = box
        stride = self.width * 4
        spans = []
        for r in range(h):
            start = (y + r) * stride + x * 4
            alpha = self.rgba[start + 3 : start + w * 4 : 4]
            lo = alpha.find(b"\xff")
            spans.append((0, 0) if lo < 0 else (lo, alpha.rfind(b"\xff") + 1))
        return spans

    def rgb(self, box: Box) -> bytes:
        """The pixels of ``box`` as packed RGB (alpha dropped), for :func:`.png.encode_rgb`."""
        x, y, w, h = box
        if x < 0 or y < 0 or w <= 0 or h <= 0 or x + w > self.width or y + h > self.height:
            raise ValueError(f"{box} is not inside the {self.width}x{self.height} frame")
        stride = self.width * 4
        out = bytearray(w * h * 3)
        for row in range(h):
            start = (y + row) * stride + x * 4
            line = self.rgba[start : start + w * 4]
            at = row * w * 3
            out[at : at + w * 3 : 3] = line[0::4]
            out[at + 1 : at + w * 3 : 3] = line[1::4]
            out[at + 2 : at + w * 3 : 3] = line[2::4]
        return bytes(out)


#: The most a toolkit's window rectangle and the opaque window in its stream may differ by
#: on a side: a client-side shadow (GTK 3: 23 to 29 pixels) or a client-drawn frame and title
#: bar (Qt: 3 and 30).
MARGIN: Final = 64


@dataclass(frozen=True, slots=True)
class Placed:
    """How a toolkit's window rectangle of ``size`` sits in a window stream's frame whose
    opaque window is ``box``: ``origin`` is where the toolkit's (0, 0) is in the stream, or
    None where the frame does not show it (see :func:`place`)."""

    box: Box
    size: tuple[int, int]
    origin: tuple[int, int] | None


def place(box: Box, size: tuple[int, int]) -> Placed | None:
    """Whether a toolkit window of ``size`` explains the opaque window ``box`` of a window
    stream's frame, and where its (0, 0) is. Pure. Three ways, as toolkits on Wayland report
    their window (the stream paints the window's surface from its top-left corner):

    * the rectangle is the opaque window (GTK 4): its origin is the box's corner;
    * it is the whole surface, shadow included, around the opaque window (GTK 3): its origin
      is the stream's (0, 0), the box inside it, at most :data:`MARGIN` from each side;
    * it is the content inside a frame and title bar the app draws itself (Qt): the box is up
      to :data:`MARGIN` larger on each side, and where the content starts inside it is not
      shown (origin None: keys may go there, the pointer may not).

    None when it explains it in none of these ways."""
    x, y, w, h = box
    width, height = size
    if (w, h) == (width, height):
        return Placed(box, size, (x, y))
    around = x + w <= width and y + h <= height and x <= MARGIN and y <= MARGIN
    if around and width - w <= 2 * MARGIN and height - h <= 2 * MARGIN:
        return Placed(box, size, (0, 0))
    if width <= w <= width + 2 * MARGIN and height <= h <= height + 2 * MARGIN:
        return Placed(box, size, None)
    return None


def composite_rgb(frame: Frame, rect: Box) -> bytes:
    """The pixels of ``rect`` as packed RGB with what is not opaque (a shadow) laid over
    white, as a screenshot shows it. Pure."""
    x, y, w, h = rect
    if x < 0 or y < 0 or x + w > frame.width or y + h > frame.height:
        raise ValueError(f"{rect} is not inside the {frame.width}x{frame.height} frame")
    out = bytearray(w * h * 3)
    stride = frame.width * 4
    for row in range(h):
        start = (y + row) * stride + x * 4
        line = frame.rgba[start : start + w * 4]
        if line[3::4].count(0xFF) == w:  # opaque all along: no blending (most rows)
            at = row * w * 3
            out[at : at + w * 3 : 3] = line[0::4]
            out[at + 1 : at + w * 3 : 3] = line[1::4]
            out[at + 2 : at + w * 3 : 3] = line[2::4]
            continue
        for col in range(w):
            r, g, b, a = line[col * 4 : col * 4 + 4]
            at = (row * w + col) * 3
            out[at] = (r * a + 255 * (255 - a)) // 255
            out[at + 1] = (g * a + 255 * (255 - a)) // 255
            out[at + 2] = (b * a + 255 * (255 - a)) // 255
    return bytes(out)


#: How far around a point (pixels each way) the window must show on the screen as it is, for
#: pointer input there: whatever the pointer lands on is then the app's own pixels.
PATCH: Final = 12
#: The rows searched for, most distinctive first: one of them may be covered.
NEEDLES: Final = 6


def locate(
    window: Frame,
    box: Box,
    screen: Frame,
    points: Sequence[tuple[float, float]] = (),
) -> tuple[int, int] | None:
    """Where the pixels of ``box`` in ``window`` (a window stream's frame) are in ``screen``
    (a monitor's frame); None when they are nowhere or in more than one place (then nothing
    proves which one is the window). Pure; the searching is ``bytes.find``, at C speed.

    Rows are compared from their first to their last fully opaque pixel: the compositor draws
    a window's opaque pixels the same in both frames, and blends the rest (rounded corners)
    with what lies behind. Without ``points`` every row must match: the window is wholly in
    view. With ``points`` (window coordinates) the rectangle of :data:`PATCH` pixels around
    each must match, so that pointer input there lands on the app's own pixels, while a caret
    blinking elsewhere, or the app's own popover over another part of it, does not matter."""
    w, h = box[2], box[3]
    if w > screen.width or h > screen.height:
        return None
    pixels = window.rgb(box)
    spans = window.opaque_spans(box)
    whole = screen.rgb((0, 0, screen.width, screen.height))
    stride, row = screen.width * 3, w * 3
    rows = [r for r in range(h) if spans[r][1] > spans[r][0]]
    if not rows:
        return None

    def variety(r: int) -> int:  # a flat row would match across every flat stretch
        lo, hi = spans[r]
        return len(set(pixels[r * row + lo * 3 : r * row + hi * 3]))

    checked = spans if not points else _patches(spans, points, w, h)
    if checked is None:
        return None
    found: set[tuple[int, int]] = set()
    for middle in sorted(rows, key=variety, reverse=True)[: 1 if not points else NEEDLES]:
        lo, hi = spans[middle]
        needle = pixels[middle * row + lo * 3 : middle * row + hi * 3]
        at = whole.find(needle)
        while at >= 0:
            sy, offset = divmod(at, stride)
            sx, top = offset // 3 - lo, sy - middle
            inside = sx >= 0 and sx + w <= screen.width and top >= 0 and top + h <= screen.height
            if at % 3 == 0 and inside and _same(whole, pixels, checked, sx, top, stride, row):
                found.add((sx, top))
            at = whole.find(needle, at + 1)
        if found:
            break
    return found.pop() if len(found) == 1 else None  # twice on screen: cannot tell which


def _patches(
    spans: list[tuple[int, int]], points: Sequence[tuple[float, float]], w: int, h: int
) -> list[tuple[int, int]] | None:
    """Per row, the columns to compare: the opaque part of the rectangles around ``points``
    (``(0, 0)`` elsewhere); None when a point's own pixel is not opaque (a corner, a shadow:
    nothing shows that the window is there)."""
    out = [(0, 0)] * h
    for px, py in points:
        x, y = int(px), int(py)
        lo_x, hi_x = max(0, x - PATCH), min(w, x + PATCH + 1)
        if not (0 <= y < h and spans[y][0] <= x < spans[y][1]):
            return None
        for r in range(max(0, y - PATCH), min(h, y + PATCH + 1)):
            lo, hi = max(lo_x, spans[r][0]), min(hi_x, spans[r][1])
            if hi > lo:
                was = out[r]
                out[r] = (lo, hi) if was == (0, 0) else (min(lo, was[0]), max(hi, was[1]))
    return out


def _same(
    whole: bytes,
    pixels: bytes,
    spans: list[tuple[int, int]],
    sx: int,
    top: int,
    stride: int,
    row: int,
) -> bool:
    for r, (lo, hi) in enumerate(spans):
        if hi <= lo:
            continue
        start = (top + r) * stride + (sx + lo) * 3
        if whole[start : start + (hi - lo) * 3] != pixels[r * row + lo * 3 : r * row + hi * 3]:
            return False
    return True


def size_from_caps(text: str) -> tuple[int, int] | None:
    """The last ``width`` and ``height`` gst-launch's verbose output names (the caps the
    frame was written with)."""
    found = _CAPS.findall(text)
    if not found:
        return None
    width, height = found[-1]
    return int(width), int(height)


async def settled(
    node: int,
    env: Mapping[str, str],
    *,
    quiet: float,
    limit: float,
    not_before: float = 0.0,
    fd: int | None = None,
) -> Frame:
    """The frame of PipeWire node ``node`` once the stream has sent none for ``quiet``
    seconds, and not before trio time ``not_before``; the latest one after ``limit`` seconds
    of frames that keep coming (an animation). ``fd``: a PipeWire remote from the portal.

    Raises:
        FrameUnavailable: gst-launch is missing, or no frame came in time.
    """
    program = shutil.which(GST_LAUNCH, path=env.get("PATH"))
    if program is None:
        raise FrameUnavailable(
            "gst-launch-1.0 is not installed (Debian and Ubuntu: gstreamer1.0-tools and "
            "gstreamer1.0-pipewire)"
        )
    read, write = os.pipe()
    source = ["pipewiresrc", f"path={node}", *([f"fd={fd}"] if fd is not None else [])]
    argv = [program, "-v", *source, "!", "videoconvert", "!", "video/x-raw,format=RGBA", "!",
            "fdsink", f"fd={write}", "sync=false"]  # fmt: skip
    try:
        proc = await trio.lowlevel.open_process(
            argv,
            env=dict(env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            pass_fds=(write, *((fd,) if fd is not None else ())),
        )
    finally:
        os.close(write)
    frames_in = trio.lowlevel.FdStream(read)
    try:
        assert proc.stdout is not None
        with trio.fail_after(START_TIMEOUT_S):
            width, height = await _sink_size(proc.stdout)
        with trio.fail_after(GRAB_TIMEOUT_S):
            frame = await _read_exact(frames_in, width * height * 4)
        stop = trio.current_time() + limit
        while trio.current_time() < stop:
            wait = min(stop, max(trio.current_time() + quiet, not_before)) - trio.current_time()
            with trio.move_on_after(max(0.0, wait)) as scope:
                frame = await _read_exact(frames_in, width * height * 4)
            if scope.cancelled_caught and trio.current_time() >= not_before:
                break
        return Frame(width, height, frame)
    except trio.TooSlowError:
        raise FrameUnavailable(
            f"the compositor sent no picture of the window in {GRAB_TIMEOUT_S:g} s (is a "
            "window of the app shown and focused?)"
        ) from None
    except (EOFError, ValueError) as exc:
        raise FrameUnavailable(f"the screen cast ended early ({exc})") from None
    finally:
        with trio.CancelScope(shield=True):
            proc.kill()
            await proc.wait()
            await frames_in.aclose()
            if proc.stdout is not None:
                await proc.stdout.aclose()


async def _sink_size(stdout: Any) -> tuple[int, int]:
    """The frame size gst-launch settled on, from its verbose output (the caps its sink got)."""
    seen = b""
    while True:
        chunk = await stdout.receive_some(4096)
        if not chunk:
            raise EOFError("gst-launch stopped before a frame")
        seen += chunk
        lines = seen.decode("utf-8", "replace").splitlines()
        for line in lines[:-1] if not seen.endswith(b"\n") else lines:
            size = size_from_caps(line) if "GstFdSink" in line and "caps =" in line else None
            if size is not None:
                return size


async def _read_exact(stream: Any, size: int) -> bytes:
    parts: list[bytes] = []
    got = 0
    while got < size:
        chunk = await stream.receive_some(min(1 << 20, size - got))
        if not chunk:
            raise EOFError("the screen cast stopped mid-frame")
        parts.append(chunk)
        got += len(chunk)
    return b"".join(parts)
