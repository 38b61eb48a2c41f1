"""Benchmark: the AT-SPI backend on real GTK 4 apps (gnome-calculator, gnome-text-editor), each
in a private Xvfb desktop of its own.

* ``get_app_state`` warm (after one observation), timed as the daemon sees it: one MCP
  ``tools/call`` over stdio to ``python -m deskhand_d.programs.atspi``, tree text and PNG
  screenshot included. On gnome-calculator it is divided by a **reference full dump** of the
  same window with Debian's libatspi through python3-gi (``bench/atspi_reference.py``, warm
  walks) in the same run. Target: <= 0.5.
* click with its reply (the action delivered, the app's answer settled, the window observed
  again and its screenshot taken), p50 and p95: by index (the element's AT-SPI action) and by
  coordinates (XTest at the element's centre). On Calculator the key ``6`` (the replies are
  checked: how many showed the display from before the click); on Text Editor the ``View``
  menu button (each click opens or closes its popover). Target: p50 <= 150 ms.
* ``press_key`` of a digit on Calculator, which goes through XTest and so through the
  input-target guard.
* where a click's time goes: the same clicks made in-process on the backend, each split into
  delivering the action, waiting for the app's events (tree settling), reading the tree, and
  the screenshot (its pixel settling, capture and PNG), medians.
* the input-target guard itself (``deskhand_d/programs/atspi/x11guard.py``): one key batch
  (Shift pressed and released on the focused Calculator) timed in-process with and without
  the guard's server grab and owner check, in the same run; the difference is what every
  guarded batch adds.
* typing at the speed of a machine (:func:`measure_typing`, its own private desktop): 1,000
  characters of words, accented Latin, Greek, Cyrillic, CJK, Hangul, symbols and emoji
  outside the BMP (59 characters the keymap lacks, three times the spare keycodes Xvfb has)
  and line breaks, typed into Mousepad's (GTK 3) and GNOME Text Editor's (GTK 4) text view
  through the backend's X11 layer as keys for an editable text go
  (``X11.type_text(..., into_field=True)`` under the guard of the app's process), timed
  until the app has read every key, then read back through the ``get_app_state`` tool and
  compared exactly. p50 and p95 over ``TYPE_RUNS`` runs (target: p50 <= 2 s), and the
  guard's share: the time spent in its checks (the focus window and its owner, under the
  server grab) against the whole typing time. Then the same text once through the
  ``type_text`` tool, paced as the backend paces it today.

Run it alone as ``.venv/bin/python bench/atspi.py`` (JSON on stdout; ``bench/atspi.py typing``
for the typing case alone). The private desktops draw
GTK 4 with cairo, as every desktop Deskhand starts does (there is no GPU under Xvfb); with
``GSK_RENDERER=gl`` in the environment the apps draw with OpenGL in software (llvmpipe), GTK's
default elsewhere, and the record says which renderer ran. ``bench/run.py``
imports :func:`measure_atspi` and skips it where there is no Xvfb or gnome-calculator (and the
Text Editor part where gnome-text-editor is missing).
"""

from __future__ import annotations

import json
import random
import re
import shutil
import statistics
import subprocess
import sys
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import trio

ROOT = Path(__file__).resolve().parent.parent
for extra in (ROOT, ROOT / "tests"):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from dhtest.mcpstdio import McpChild  # noqa: E402

from deskhand_d import ax  # noqa: E402
from deskhand_d.programs import xsession  # noqa: E402

RUNS = 30
CLICKS = 40
SPLIT_CLICKS = 15
GUARD_BATCHES = 300
TARGET = 0.5
TARGET_CLICK_MS = 150.0
APP = "gnome-calculator"
EDITOR = "gnome-text-editor"
TYPE_CHARS = 1000
TYPE_RUNS = 7
TARGET_TYPE_S = 2.0
TYPE_APPS = {"Mousepad": "mousepad", "Text Editor": EDITOR}
# Characters a US keymap lacks: accented Latin, Greek, Cyrillic, CJK, Hangul, symbols, and
# emoji outside the Basic Multilingual Plane.
FOREIGN = "éèàçñüößøåæœ€£¥αβγδεζηθλμπσωΩΔЖЯжяшщыюБГД中文字日本語한국어😀🎉🚀👍🌍→≠∞½"


def available() -> str:
    """Empty when the benchmark can run here, else what is missing."""
    missing = xsession.missing_binaries()
    for name in (APP, "/usr/bin/python3"):
        if shutil.which(name) is None:
            missing.append(name)
    return ", ".join(missing)


def _p(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(q * len(ordered)))]


def _summary(name: str, ms: list[float]) -> dict[str, float]:
    return {
        f"{name}_p50_ms": round(statistics.median(ms), 2),
        f"{name}_p95_ms": round(_p(ms, 0.95), 2),
    }


def _timed(
    n: int, call: Callable[[int], Any], after: Callable[[Any], None] | None = None
) -> list[float]:
    """Milliseconds of ``n`` calls, each checked (and given to ``after``, untimed)."""
    ms: list[float] = []
    for i in range(n):
        start = time.perf_counter()
        done = call(i)
        ms.append((time.perf_counter() - start) * 1000)
        assert not done.is_error, done.text
        if after is not None:
            after(done)
    return ms


def measure_atspi() -> dict[str, Any]:
    # The private desktop picks cairo unless GSK_RENDERER says otherwise (xsession.py); the
    # apps inherit it, so the record says which renderer ran.
    results: dict[str, Any] = {}
    with xsession.private_desktop(apps=(APP,)) as desk:
        results["gsk_renderer"] = desk.env.get("GSK_RENDERER", "default")
        results.update(_measure_calculator(desk))
    if shutil.which(EDITOR) is None:
        results["text_editor"] = {"error": f"skipped: needs {EDITOR}"}
    else:
        with xsession.private_desktop(apps=(EDITOR,)) as desk:
            results["text_editor"] = _measure_editor(desk)
    results["typing"] = measure_typing()
    return results


def _server(desk: xsession.Desktop) -> McpChild:
    return McpChild([sys.executable, "-m", "deskhand_d.programs.atspi"], desk.env, cwd=ROOT)


def _first_state(child: McpChild, app: str, ready: str) -> str:
    """The first observation: waits for the app and walks GTK 4's lazily created tree."""
    deadline = time.monotonic() + 30
    while True:
        first = child.call("get_app_state", app=app)
        if not first.is_error and ready in first.text:
            return first.text
        assert time.monotonic() < deadline, first.text
        time.sleep(0.3)


def _texts(content: list[dict[str, Any]]) -> str:
    """Every text block of a tool result (the tree need not be the first: a note may come
    before it)."""
    return "\n".join(str(c.get("text", "")) for c in content if c.get("type") == "text")


def _find(text: str, label: str) -> int | None:
    tree = ax.parse(text)
    return next((e.index for e in tree.elements if "button" in e.role and e.label == label), None)


def _index(text: str, label: str) -> int:
    found = _find(text, label)
    if found is None:
        raise LookupError(f"no button {label!r} in the tree")
    return found


def _display(text: str) -> str:
    """Calculator's display, as the reply's tree shows it."""
    line = next(ln for ln in text.splitlines() if "text entry area" in ln)
    found = re.search(r"Value: ([0-9]*)", line)
    return found.group(1) if found else ""


def _clicks_on_six(child: McpChild, n: int, **where: Any) -> tuple[list[float], int]:
    """``n`` clicks on Calculator's 6 key; their times, and how many replies showed a display
    that had not grown by one 6 (a reply read before the app answered). The display is
    cleared every 10 clicks (past 28 digits Calculator rounds what it shows)."""
    stale = 0
    ms: list[float] = []
    for i in range(n):
        if i % 10 == 0:
            child.call("press_key", app="Calculator", key="Escape")
            shown = _display(child.call("get_app_state", app="Calculator").text)
        start = time.perf_counter()
        done = child.call("click", app="Calculator", **where)
        ms.append((time.perf_counter() - start) * 1000)
        assert not done.is_error, done.text
        now = _display(done.text)
        stale += now != shown + "6"
        shown = _display(child.call("get_app_state", app="Calculator").text)
    return ms, stale


def _measure_calculator(desk: xsession.Desktop) -> dict[str, Any]:
    child = _server(desk)
    try:
        _first_state(child, "Calculator", " 6")
        state_ms = _timed(RUNS, lambda _: child.call("get_app_state", app="Calculator"))
        last = child.call("get_app_state", app="Calculator")
        assert last.images, last.text
        nodes = len(ax.parse(last.text).elements)
        reference = _reference(desk)
        button = str(_index(last.text, "6"))
        x, y = _centre(desk.env, "Calculator", "6")
        click_ms, click_stale = _clicks_on_six(child, CLICKS, element_index=button)
        xy_ms, xy_stale = _clicks_on_six(child, CLICKS, x=x, y=y)
        key_ms = _timed(CLICKS, lambda _: child.call("press_key", app="Calculator", key="6"))
    finally:
        child.close()
    split = _split(desk.env, "Calculator", [{"element": "6"}], [{"x": x, "y": y}])
    guard = _guard_cost(desk)
    state = statistics.median(state_ms)
    dump = statistics.median(reference["walk_ms"])
    return {
        "get_app_state_ms": round(state, 2),
        "get_app_state_p95_ms": round(_p(state_ms, 0.95), 2),
        "elements": nodes,
        "reference_dump_ms": round(dump, 2),
        "reference_nodes": reference["nodes"],
        "ratio": round(state / dump, 3),
        "target": TARGET,
        "target_click_ms": TARGET_CLICK_MS,
        **_summary("click", click_ms),
        "click_stale_replies": click_stale,
        **_summary("click_xy", xy_ms),
        "click_xy_stale_replies": xy_stale,
        **_summary("press_key", key_ms),
        "click_split": split[0],
        "click_xy_split": split[1],
        **guard,
        "guard_share_of_press_key": round(guard["guard_added_ms"] / statistics.median(key_ms), 4),
    }


def _measure_editor(desk: xsession.Desktop) -> dict[str, Any]:
    child = _server(desk)
    try:
        _first_state(child, "Text Editor", "text entry area")
        state_ms = _timed(RUNS, lambda _: child.call("get_app_state", app="Text Editor"))
        last = child.call("get_app_state", app="Text Editor")
        nodes = len(ax.parse(last.text).elements)
        view = str(_index(last.text, "View"))
        x, y = _centre(desk.env, "Text Editor", "View")
        click_ms = _timed(
            CLICKS,
            lambda _: child.call("click", app="Text Editor", element_index=view),
        )
        if CLICKS % 2:
            child.call("click", app="Text Editor", element_index=view)  # close the popover
        xy_ms = _timed(CLICKS, lambda _: child.call("click", app="Text Editor", x=x, y=y))
    finally:
        child.close()
    split = _split(desk.env, "Text Editor", [{"element": "View"}], [{"x": x, "y": y}])
    return {
        "get_app_state_ms": round(statistics.median(state_ms), 2),
        "get_app_state_p95_ms": round(_p(state_ms, 0.95), 2),
        "elements": nodes,
        **_summary("click", click_ms),
        **_summary("click_xy", xy_ms),
        "click_split": split[0],
        "click_xy_split": split[1],
    }


def _reference(desk: xsession.Desktop) -> dict[str, Any]:
    ref = subprocess.run(
        ["/usr/bin/python3", str(ROOT / "bench" / "atspi_reference.py"), APP, str(RUNS)],
        env={**desk.env, "PYTHONPATH": ""},
        capture_output=True,
        text=True,
        timeout=300,
    )
    if ref.returncode != 0:
        raise RuntimeError(f"the reference dump failed: {ref.stderr.strip()[-2000:]}")
    result: dict[str, Any] = json.loads(ref.stdout.strip().splitlines()[-1])
    return result


# --- in-process: element positions, and where a click's time goes ---------------------------


def _in_process(env: Mapping[str, str], work: Callable[[Any], Any]) -> Any:
    """``await work(backend)`` on a backend of this process, attached to its own nursery."""
    from deskhand_d.programs.atspi.engine import Backend

    async def main() -> Any:
        backend = Backend(env)
        async with trio.open_nursery() as nursery:
            backend.attach(nursery)
            try:
                return await work(backend)
            finally:
                await backend.aclose()
                nursery.cancel_scope.cancel()

    return trio.run(main)


def _centre(env: Mapping[str, str], app: str, label: str) -> tuple[float, float]:
    """Screenshot pixels of the centre of the button labelled ``label``."""
    from deskhand_d.programs.atspi import apps

    async def work(backend: Any) -> tuple[float, float]:
        done = await backend.call("get_app_state", {"app": app})
        assert not done.is_error
        index = _index(_texts(done.content), label)
        session = next(iter(backend.sessions.values()))
        node = session.rendering.nodes[index]
        x, y, w, h = await apps.extents(backend.bus, node.ref, apps.WINDOW_COORDS)
        return x + w / 2, y + h / 2

    result: tuple[float, float] = _in_process(env, work)
    return result


def _split(
    env: Mapping[str, str], app: str, *plans: list[dict[str, Any]]
) -> list[dict[str, float]]:
    """For each plan (clicks made in turn, repeated), the medians of a click's phases:
    delivering it, waiting until the tree is read (the settling), reading the tree (from the
    first surface read to the last), and what follows (the screenshot and its settling)."""
    from deskhand_d.programs.atspi.engine import Backend

    async def work(backend: Backend) -> list[dict[str, float]]:
        marks: dict[str, float] = {}
        act, observe = backend._act, backend._observe

        async def timed(name: str, fn: Any, *args: Any, **kwargs: Any) -> Any:
            marks.setdefault(f"{name} from", trio.current_time())
            try:
                return await fn(*args, **kwargs)
            finally:
                marks.setdefault(name, trio.current_time())

        backend._act = lambda *a: timed("delivered", act, *a)
        backend._observe = lambda *a, **k: timed("observed", observe, *a, **k)
        done = await backend.call("get_app_state", {"app": app})
        assert not done.is_error
        text = _texts(done.content)
        out = []
        for plan in plans:
            phases: dict[str, list[float]] = {}
            for i in range(SPLIT_CLICKS):
                step = dict(plan[i % len(plan)])
                if "element" in step:
                    label = step.pop("element")
                    if _find(text, label) is None:
                        # The last click opened the button's popover, and the reply shows that
                        # window: close it (as a person would) and read the window again.
                        await backend.call("press_key", {"app": app, "key": "Escape"})
                        again = await backend.call("get_app_state", {"app": app})
                        text = _texts(again.content)
                    step = {"element_index": str(_index(text, label))}
                marks.clear()
                start = trio.current_time()
                done = await backend.call("click", {"app": app, **step})
                end = trio.current_time()
                assert not done.is_error, done.content
                text = _texts(done.content)
                read = marks["observed from"]
                edges = [start, marks["delivered"], read, marks["observed"], end]
                names = ["deliver", "settle_tree", "observe", "screenshot"]
                for name, a, b in zip(names, edges, edges[1:], strict=False):
                    phases.setdefault(name, []).append((b - a) * 1000)
                phases.setdefault("total", []).append((end - start) * 1000)
            out.append({k: round(statistics.median(v), 1) for k, v in phases.items()})
        return out

    result: list[dict[str, float]] = _in_process(env, work)
    return result


def _guard_cost(desk: xsession.Desktop) -> dict[str, float]:
    """One key batch with and without the input-target guard, alternating, in-process."""
    from deskhand_d.programs.atspi.x11 import X11
    from deskhand_d.programs.atspi.x11guard import Guard

    pid = desk.apps[APP].pid
    guard = Guard(pid=pid)
    plain: list[float] = []
    guarded: list[float] = []
    with X11.open(desk.display) as x:
        x.activate_pid(pid, focus=True)
        for _ in range(GUARD_BATCHES):
            for sample, g in ((plain, None), (guarded, guard)):
                start = time.perf_counter()
                x.press_key("shift", guard=g)
                sample.append((time.perf_counter() - start) * 1000)
    base, checked = statistics.median(plain), statistics.median(guarded)
    return {
        "key_batch_ms": round(base, 3),
        "key_batch_guarded_ms": round(checked, 3),
        "guard_added_ms": round(checked - base, 3),
    }


# --- typing at the speed of a machine --------------------------------------------------------


def typing_text(length: int = TYPE_CHARS, seed: int = 22) -> str:
    """``length`` characters: English words, two foreign characters after each, a line break
    every ten words (no line starts with a space, so no editor re-indents it)."""
    rng = random.Random(seed)
    words = ["the", "quick", "brown", "fox", "jumps", "over", "a", "lazy", "dog", "while"]
    words += ["typing", "at", "machine", "speed", "42+8=50!", "x*y/z", "a@b.c", "#1", "100%"]
    out: list[str] = []
    i = 0
    while sum(map(len, out)) < length:
        pair = FOREIGN[i % len(FOREIGN)] + rng.choice(FOREIGN)
        out.append(f"{rng.choice(words)} {pair}" + ("\n" if i % 10 == 9 else " "))
        i += 1
    text = "".join(out)[:length]
    return text[:-1] + "." if text[-1] in " \n" else text


def typing_available() -> dict[str, str]:
    """The typing case's apps that are installed, by the name the backend knows them by."""
    return {name: binary for name, binary in TYPE_APPS.items() if shutil.which(binary)}


def measure_typing() -> dict[str, Any]:
    apps = typing_available()
    if not apps:
        return {"error": f"skipped: needs one of {', '.join(TYPE_APPS.values())}"}
    text = typing_text()
    results: dict[str, Any] = {
        "chars": len(text),
        "foreign_distinct": len(set(text) & set(FOREIGN)),
        "target_s": TARGET_TYPE_S,
    }
    with xsession.private_desktop() as desk:
        desk.env["XDG_DATA_HOME"] = str(desk.root / "data")  # the editors' drafts stay here
        child = _server(desk)
        try:
            for name in apps:
                results[name] = _typing_runs(desk, child, name, text)
        finally:
            child.close()
    return results


class _TimedTargets:
    """Stands in for the X11 object's :class:`~deskhand_d.programs.atspi.x11guard.Targets`,
    adding up the time of the guard's checks: which window keys would reach, and whose it is."""

    def __init__(self, targets: Any) -> None:
        self._targets = targets
        self.seconds = 0.0
        self.checks = 0

    def __getattr__(self, name: str) -> Any:
        return getattr(self._targets, name)

    def key_window(self) -> int:
        start = time.perf_counter()
        try:
            return int(self._targets.key_window())
        finally:
            self.seconds += time.perf_counter() - start

    def check(self, *args: Any) -> Any:
        start = time.perf_counter()
        try:
            return self._targets.check(*args)
        finally:
            self.seconds += time.perf_counter() - start
            self.checks += 1


def _text_area(child: McpChild, app: str) -> ax.tree.Element:
    _first_state(child, app, "text entry area")
    tree = ax.parse(child.call("get_app_state", app=app).text)
    return next(e for e in tree.elements if e.role.startswith("text entry area"))


def _emptied(child: McpChild, app: str) -> int:
    """Click into the app's text view and empty it; the app's pid."""
    area = _text_area(child, app)
    for tool, args in (
        ("click", {"element_index": str(area.index)}),
        ("press_key", {"key": "ctrl+a"}),
        ("press_key", {"key": "Delete"}),
    ):
        done = child.call(tool, app=app, **args)
        assert not done.is_error, done.text
    tree = ax.parse(child.call("get_app_state", app=app).text)
    assert tree.pid is not None
    return tree.pid


def _typing_runs(desk: xsession.Desktop, child: McpChild, app: str, text: str) -> dict[str, Any]:
    from deskhand_d.programs.atspi.x11 import X11
    from deskhand_d.programs.atspi.x11guard import Guard

    typed_s: list[float] = []
    read_ms: list[float] = []
    guard_s: list[float] = []
    checks = exact = 0
    for _ in range(TYPE_RUNS):
        pid = _emptied(child, app)
        with X11.open(desk.display) as x:
            timed = _TimedTargets(x._targets)
            x._targets = timed
            start = time.perf_counter()
            x.type_text(text, guard=Guard(pid=pid), into_field=True)
            typed_s.append(time.perf_counter() - start)
        guard_s.append(timed.seconds)
        checks = timed.checks
        start = time.perf_counter()
        area = _text_area(child, app)
        read_ms.append((time.perf_counter() - start) * 1000)
        exact += area.attributes.get("Value", "") == text
    tool = _typing_tool(child, app, text)
    return {
        "typed_p50_s": round(statistics.median(typed_s), 3),
        "typed_p95_s": round(_p(typed_s, 0.95), 3),
        "typed_s": [round(v, 3) for v in typed_s],
        "exact_runs": exact,
        "runs": TYPE_RUNS,
        "read_back_p50_ms": round(statistics.median(read_ms), 1),
        "guard_checks": checks,
        "guard_p50_ms": round(statistics.median(guard_s) * 1000, 2),
        "guard_share": round(
            statistics.median(g / t for g, t in zip(guard_s, typed_s, strict=True)), 4
        ),
        **tool,
    }


def _typing_tool(child: McpChild, app: str, text: str) -> dict[str, Any]:
    """The same text once through the ``type_text`` tool (its reply included), as the backend
    paces it today."""
    _emptied(child, app)
    start = time.perf_counter()
    done = child.call("type_text", 60, app=app, text=text)
    seconds = time.perf_counter() - start
    assert not done.is_error, done.text
    value = _text_area(child, app).attributes.get("Value", "")
    return {"tool_s": round(seconds, 2), "tool_exact": value == text}


if __name__ == "__main__":
    missing = available()
    if missing:
        sys.exit(f"bench/atspi.py needs {missing} (run .ci/setup-desktop.sh)")
    if sys.argv[1:] == ["typing"]:
        print(json.dumps(measure_typing()))
    else:
        print(json.dumps(measure_atspi()))
