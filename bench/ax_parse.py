"""Benchmark: parse a 10,000-element accessibility tree and rank its candidates.

The tree is assembled from the element lines of the real captures in ``fixtures/ax`` (Calendar,
Calculator, Music, NetEase, Safari in zh-Hans): a window root, then copy after copy of each
capture's elements one level below it, renumbered depth first from 0, continuation lines of
multi-line values kept as they are. Copies would repeat every line many times over, which no
real window does, so each labelled element of a copy gets a copy marker at the end of its first
line; bare lines (``container``, ``image``) repeat as they do in real trees.

Timed: :func:`deskhand_d.ax.parse` followed by
:func:`~deskhand_d.ax.select_candidates` (goal "Switch to the previous month"), against
``text.splitlines()`` on the same text as the floor. The two are timed in alternating blocks of
``BLOCK`` runs (so drift hits both, while each runs warm, as it would back to back), with the
garbage collector off; the numbers are medians over all timed runs, after a warm-up block of
each. Target: ratio <= 10.

Run it alone as ``.venv/bin/python bench/ax_parse.py`` (JSON on stdout); ``bench/run.py`` can
import :func:`measure_ax_parse`.
"""

from __future__ import annotations

import gc
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from deskhand_d import ax  # noqa: E402

CAPTURES = (
    "calendar-wangdada-1.txt",
    "calculator-wangdada-1.txt",
    "music-v750-tooldump-1.txt",
    "netease-wangdada-1.txt",
    "safari-zh-isse-zhengzixuan-1.txt",
)
ELEMENTS = 10_000
GOAL = "Switch to the previous month"
BLOCK = 5
BLOCKS = 8
TARGET = 10


def _shapes() -> list[tuple[int, str, list[str], bool]]:
    """Per element: depth, first line minus indentation and index, continuation lines, labelled."""
    shapes: list[tuple[int, str, list[str], bool]] = []
    for name in CAPTURES:
        tree = ax.parse((ROOT / "fixtures" / "ax" / name).read_text(encoding="utf-8"))
        for element in tree.elements:
            first, *more = element.raw.split("\n")
            rest = first.lstrip(" \t").partition(" ")[2]
            shapes.append((element.depth, rest, more, bool(element.label)))
    return shapes


def _element_shaped(line: str) -> bool:
    return line.lstrip(" \t").partition(" ")[0].isdigit()


def build_tree(elements: int = ELEMENTS, *, predecessor_safe: bool = False) -> str:
    """A full tree in Sky's current layout with exactly ``elements`` elements.

    ``predecessor_safe``: without the elements whose value lines look like element lines (the
    TypeScript predecessor reads them as elements and refuses the tree for duplicate indices).
    """
    shapes = _shapes()
    if predecessor_safe:
        shapes = [s for s in shapes if not any(map(_element_shaped, s[2]))]
    out = [
        "Computer Use state (CUA App Version: 1001103)",
        "<app_state>",
        "App=/System/Applications/Bench.app/ (bundleID com.example.bench, pid 4242)",
        'Window: "Bench", App: Bench.',
        "0 standard window Bench, Secondary Actions: Raise",
    ]
    index = 1
    copy = 0
    while index < elements:
        copy += 1
        for depth, rest, more, labelled in shapes:
            if index >= elements:
                break
            mark = f" #{copy}" if labelled and copy > 1 else ""
            out.append("\t" * (depth + 1) + f"{index} {rest}{mark}")
            out.extend(more)
            index += 1
    out += ["", "The focused UI element is 0 standard window Bench", "</app_state>"]
    return "\n".join(out)


def _time_ms(fn: Any) -> float:
    start = time.perf_counter_ns()
    fn()
    return (time.perf_counter_ns() - start) / 1e6


def measure_ax_parse() -> dict[str, Any]:
    """Time parse + select_candidates against splitlines; returns the JSON-ready numbers."""
    text = build_tree()
    tree = ax.parse(text)
    assert len(tree.elements) == ELEMENTS, len(tree.elements)

    def work() -> None:
        ax.select_candidates(ax.parse(text), GOAL)

    def floor() -> None:
        text.splitlines()

    parse_ms: list[float] = []
    split_ms: list[float] = []
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for block in range(BLOCKS + 1):  # block 0 is the warm-up
            work_times = [_time_ms(work) for _ in range(BLOCK)]
            floor_times = [_time_ms(floor) for _ in range(BLOCK)]
            if block:
                parse_ms += work_times
                split_ms += floor_times
    finally:
        if enabled:
            gc.enable()
    parse_median = statistics.median(parse_ms)
    split_median = statistics.median(split_ms)
    return {
        "elements": len(tree.elements),
        "parse_select_ms": round(parse_median, 3),
        "splitlines_ms": round(split_median, 3),
        "ratio": round(parse_median / split_median, 2),
        "target": TARGET,
    }


if __name__ == "__main__":
    print(json.dumps(measure_ax_parse()))
