"""Benchmark: Deskhand's AX parse + candidate ranking against the TypeScript predecessor's.

The predecessor (jev-codex-cua 0.1.0) ran, per step of its Jev loop,
``selectCandidates(parseAX(observation), goal, 40)``. Its ``ax.ts`` is read at run time from
``../shared/reference/predecessor-ax/`` (or ``DESKHAND_PREDECESSOR_AX``) and run by Node 22
(``DESKHAND_NODE``, else ``.ci/.node`` from ``.ci/setup-node.sh``, else ``node`` on PATH),
which strips the types itself; nothing of it is copied here. Deskhand's side is
:func:`deskhand_d.ax.select_candidates` of :func:`deskhand_d.ax.parse`, the same goal, limit 40.

Texts, the same bytes on both sides:

* ``capture``: ``fixtures/ax/safari-zh-isse-zhengzixuan-1.txt``, a real Safari window (215
  elements, an app-instructions block in front, zh-Hans roles, multi-line values);
* ``tree``: the 10,000-element tree of ``bench/ax_parse.py``, built without the one capture
  element whose value lines look like element lines (Music's node 85): the predecessor reads
  those as elements and refuses the tree for duplicate indices.

Timing: one Node process stays up and times each run with ``process.hrtime.bigint()``; Python
times each run with ``perf_counter_ns`` (garbage collector off). Blocks of runs alternate between
the two (so drift and other load hit both), after warm-up blocks that let V8 compile the hot
code. Reported: the medians, and ``speedup`` = predecessor median / Deskhand median (target:
>= 1, Deskhand stays ahead; issue 26 retired issue 18's >= 2, which this machine never met).
For context, Deskhand's time when every element is read too (``parse`` + ``elements`` +
``select_candidates``), which the ranking itself does not need.

Run it alone as ``.venv/bin/python bench/ax_predecessor.py`` (JSON on stdout); ``bench/run.py``
imports :func:`measure_ax_predecessor`.
"""

from __future__ import annotations

import gc
import json
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from ax_parse import build_tree  # noqa: E402

from deskhand_d import ax  # noqa: E402

GOAL = "Switch to the previous month"
LIMIT = 40
TARGET = 1.0  # stay ahead of the predecessor (issue 26; was 2.0 in issue 18)
CAPTURE = "safari-zh-isse-zhengzixuan-1.txt"
# text name -> (runs per block, timed blocks, warm-up blocks)
PLAN = {"capture": (200, 10, 5), "tree": (4, 10, 2)}

# The Node side: load the predecessor's module, then answer one JSON line per request:
# {"text": ...} stores a text, {"runs": n} times n runs on it and answers the nanoseconds.
_DRIVER = r"""
import { pathToFileURL } from "node:url";
import readline from "node:readline";
const ax = await import(pathToFileURL(process.argv[1]).href);
let text = "";
const out = (value) => process.stdout.write(JSON.stringify(value) + "\n");
for await (const line of readline.createInterface({ input: process.stdin })) {
  const request = JSON.parse(line);
  if (request.text !== undefined) {
    text = request.text;
    out({ elements: ax.parseAX(text).length });
    continue;
  }
  const times = [];
  for (let i = 0; i < request.runs; i++) {
    const start = process.hrtime.bigint();
    ax.selectCandidates(ax.parseAX(text), request.goal, request.limit);
    times.push(Number(process.hrtime.bigint() - start));
  }
  out({ ns: times });
}
"""


def predecessor_dir() -> Path:
    given = os.environ.get("DESKHAND_PREDECESSOR_AX")
    return Path(given) if given else ROOT.parent / "shared" / "reference" / "predecessor-ax"


def node_binary() -> str | None:
    given = os.environ.get("DESKHAND_NODE")
    if given:
        return given
    local = ROOT / ".ci" / ".node" / "node_modules" / "node" / "bin" / "node"
    return str(local) if local.exists() else shutil.which("node")


def missing() -> str:
    """What is missing to run this benchmark ("" when nothing is)."""
    if not (predecessor_dir() / "ax.ts").is_file():
        return f"the predecessor's ax.ts in {predecessor_dir()}"
    node = node_binary()
    if node is None:
        return "Node 22 (bash .ci/setup-node.sh)"
    version = subprocess.run([node, "--version"], capture_output=True, text=True, timeout=30)
    major = version.stdout.strip().lstrip("v").split(".")[0]
    if not major.isdigit() or int(major) < 22:
        return f"Node 22 or later ({node} is {version.stdout.strip() or 'unusable'})"
    return ""


def texts() -> dict[str, str]:
    capture = (ROOT / "fixtures" / "ax" / CAPTURE).read_text(encoding="utf-8")
    return {"capture": capture, "tree": build_tree(predecessor_safe=True)}


class _Node:
    """The Node process that runs the predecessor."""

    def __init__(self) -> None:
        node = node_binary()
        assert node is not None
        self.proc = subprocess.Popen(
            [
                node,
                "--experimental-strip-types",
                "--no-warnings",
                "--input-type=module",
                "-e",
                _DRIVER,
                str(predecessor_dir() / "ax.ts"),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            encoding="utf-8",
        )

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(request, ensure_ascii=False) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        if not line:
            raise RuntimeError(f"the predecessor's Node process exited ({self.proc.wait()})")
        answer: dict[str, Any] = json.loads(line)
        return answer

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def _deskhand_runs(text: str, runs: int) -> list[int]:
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        ax.select_candidates(ax.parse(text), GOAL, LIMIT)
        times.append(time.perf_counter_ns() - start)
    return times


def _read_all_runs(text: str, runs: int) -> list[int]:
    times = []
    for _ in range(runs):
        start = time.perf_counter_ns()
        tree = ax.parse(text)
        tree.elements  # noqa: B018 (read every element, as a caller that walks them would)
        ax.select_candidates(tree, GOAL, LIMIT)
        times.append(time.perf_counter_ns() - start)
    return times


def _compare(node: _Node, name: str, text: str) -> dict[str, Any]:
    runs, blocks, warmup = PLAN[name]
    theirs: list[int] = []
    ours: list[int] = []
    full: list[int] = []
    elements = node.ask({"text": text})["elements"]
    request = {"runs": runs, "goal": GOAL, "limit": LIMIT}
    gc.collect()
    enabled = gc.isenabled()
    gc.disable()
    try:
        for block in range(warmup + blocks):
            mine = _deskhand_runs(text, runs)
            other: list[int] = node.ask(request)["ns"]
            every = _read_all_runs(text, runs)
            if block >= warmup:
                ours += mine
                theirs += other
                full += every
    finally:
        if enabled:
            gc.enable()
    ours_ms = statistics.median(ours) / 1e6
    theirs_ms = statistics.median(theirs) / 1e6
    full_ms = statistics.median(full) / 1e6
    return {
        "elements": len(ax.parse(text)),
        "predecessor_elements": elements,
        "runs": len(ours),
        "deskhand_ms": round(ours_ms, 4),
        "predecessor_ms": round(theirs_ms, 4),
        "speedup": round(theirs_ms / ours_ms, 2),
        "deskhand_all_elements_ms": round(full_ms, 4),
        "speedup_all_elements": round(theirs_ms / full_ms, 2),
    }


def measure_ax_predecessor() -> dict[str, Any]:
    """Both parsers on both texts; returns the JSON-ready numbers (or why it was skipped)."""
    lacking = missing()
    if lacking:
        return {"error": f"skipped: needs {lacking}"}
    node = _Node()
    try:
        results: dict[str, Any] = {name: _compare(node, name, t) for name, t in texts().items()}
    finally:
        node.close()
    results["goal"] = GOAL
    results["target"] = TARGET
    return results


if __name__ == "__main__":
    print(json.dumps(measure_ax_predecessor(), indent=2))
