"""What the AT-SPI tests read off a reply: element indices in its tree, the words of its
screenshot as tesseract reads them (with where each word is, for clicks by coordinates), and
observing an app until its tree shows something.

Shared by the real-app test modules; a test module, never imported by Deskhand.
"""

from __future__ import annotations

import re
import subprocess
import time

from dhtest.mcpstdio import ToolResult
from mcpclient import Server


def ok(result: ToolResult) -> ToolResult:
    assert not result.is_error, result.text
    return result


def observe(server: Server, app: str) -> ToolResult:
    return ok(server.call("get_app_state", 90, app=app))


def index(text: str, pattern: str) -> str:
    """The index of the first element line matching ``pattern`` (after the index)."""
    found = re.search(rf"^\t*(\d+) {pattern}", text, re.MULTILINE)
    assert found, f"no element matching {pattern!r} in\n{text}"
    return found.group(1)


def words(result: ToolResult) -> list[tuple[str, float, float]]:
    """The screenshot read by tesseract: (word, centre x, centre y) in screenshot pixels."""
    assert result.images, f"no screenshot: {result.text[:300]}"
    _, png = result.images[-1]
    tsv = subprocess.run(
        ["tesseract", "stdin", "stdout", "--psm", "11", "tsv"],  # 11: sparse text, as UIs are
        input=png,
        capture_output=True,
        check=True,
        timeout=60,
    ).stdout.decode()
    out = []
    for line in tsv.splitlines()[1:]:
        cells = line.split("\t")
        if len(cells) == 12 and cells[11].strip():
            left, top, width, height = (int(c) for c in cells[6:10])
            out.append((cells[11].strip(), left + width / 2, top + height / 2))
    return out


def seen(result: ToolResult) -> str:
    """The screenshot's words, lower case (tesseract's case is not reliable)."""
    return " ".join(w for w, _, _ in words(result)).lower()


def where(result: ToolResult, word: str) -> tuple[float, float]:
    for text, x, y in words(result):
        if text.strip("_.,").lower() == word.lower():
            return x, y
    raise AssertionError(f"{word!r} not on the screenshot: {seen(result)}")


def where_part(result: ToolResult, fragment: str) -> tuple[float, float]:
    """Where the first word holding ``fragment`` is on the screenshot."""
    for text, x, y in words(result):
        if fragment.lower() in text.lower():
            return x, y
    raise AssertionError(f"nothing holding {fragment!r} on the screenshot: {seen(result)}")


def observe_until(server: Server, app: str, pattern: str, tries: int = 120) -> ToolResult:
    """Observe ``app`` until a line of its tree matches ``pattern`` (a regular expression;
    the app may still be starting), at most ``tries`` times half a second apart."""
    result = None
    for _ in range(tries):
        result = server.call("get_app_state", 90, app=app)
        if not result.is_error and re.search(pattern, result.text, re.MULTILINE):
            return result
        time.sleep(0.5)
    assert result is not None
    raise AssertionError(f"{pattern!r} never appeared:\n{result.text[:3000]}")
