"""An action's reply shows the app's answer to it: in its tree and on its screenshot's pixels.

The reply to a click comes back only once the app has reacted (its AT-SPI events have come and
gone quiet) and a frame drawn after that reaction is on screen. gnome-calculator (GTK 4) is the
hard case: GTK presses a button by its ``click`` action 250 ms after the call returns, and draws
the new display a frame after updating its tree. galculator is GTK 3 and acts at once. Each
reply's screenshot is read back with OCR (tesseract), so "shows the new state" is checked on
the pixels; the numbers typed have two digits or more so that no button label can match them.
"""

from __future__ import annotations

import base64
import re
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from dhtest.desktop import require_binaries
from mcpclient import Server

pytestmark = pytest.mark.slow

APPS = {
    # app name -> pattern of the display in its tree
    "Calculator": r"text entry area \(settable, string\) Value: ([^,\n]*)",
    "galculator": r"^\t*\d+ text ([0-9.]+)$",
}


DIGITS = "456789"


def _button(text: str, label: str) -> str:
    m = re.search(rf"^\t*(\d+) (?:toggle )?button {re.escape(label)}(?:,|$)", text, re.M)
    assert m is not None, f"no button {label!r} in:\n{text}"
    return m.group(1)


def _display(app: str, text: str) -> str:
    m = re.search(APPS[app], text, re.M)
    assert m is not None, f"no display in:\n{text}"
    return m.group(1).strip()


def _ready(server: Server, app: str) -> str:
    """The app's state once its keypad is there (a fresh app draws it a moment later)."""
    deadline = time.monotonic() + 30
    while True:
        text, _, err = server.tool("get_app_state", app=app)
        if not err and re.search(r"button 9(?:,|$)", text, re.M):
            return text
        assert time.monotonic() < deadline, text
        time.sleep(0.3)


def _read(images: list[dict[str, Any]], where: Path) -> str:
    """The text tesseract reads on the one PNG of a reply, without spaces."""
    assert len(images) == 1 and images[0]["mimeType"] == "image/png"
    where.write_bytes(base64.b64decode(images[0]["data"]))
    seen = subprocess.run(  # sparse text: galculator's large display is missed otherwise
        ["tesseract", str(where), "-", "--psm", "11"], capture_output=True, text=True, check=True
    ).stdout
    return re.sub(r"\s+", "", seen)


def _start(server: Server, app: str) -> tuple[str, str]:
    """The app, its display cleared where it has a button for that: its state and display."""
    text = _ready(server, app)
    for key in ("C", "AC"):  # galculator clears with either; Calculator shows neither
        if re.search(rf"button {key}(?:,|$)", text, re.M):
            text, _, err = server.tool("click", app=app, element_index=_button(text, key))
            assert not err, text
    return text, _display(app, text)


@pytest.mark.parametrize("app", ["Calculator", "galculator"])
def test_a_click_reply_shows_what_the_click_did(server: Server, app: str, tmp_path: Path) -> None:
    """Six clicks by index on 4 to 9: each reply's tree shows the display grown by that
    digit, and its screenshot reads the same (from the second click on, when the display
    holds a number no button shows). With the old fixed wait (100 ms, then a screenshot
    that waited for still pixels) gnome-calculator's replies were one click behind."""
    require_binaries("tesseract")
    text, shown = _start(server, app)
    prefix = "" if shown == "0" else shown
    for n, key in enumerate(DIGITS, start=1):
        text, images, err = server.tool("click", app=app, element_index=_button(text, key))
        assert not err, text
        expected = prefix + DIGITS[:n]
        assert _display(app, text) == expected, f"the reply's tree is stale:\n{text}"
        if n >= 2:
            seen = _read(images, tmp_path / f"{app}-{n}.png")
            assert expected in seen, f"the screenshot after {key} reads {seen!r}"


@pytest.mark.parametrize("app", ["Calculator", "galculator"])
def test_an_observation_right_after_a_key_shows_it(
    server: Server, app: str, tmp_path: Path
) -> None:
    """press_key answers without a screenshot; a get_app_state sent the moment it returns
    must show the key's effect on its pixels too (the demo's final screenshot is taken so)."""
    require_binaries("tesseract")
    text, shown = _start(server, app)
    prefix = "" if shown == "0" else shown
    for key in ("7", "8"):
        done, _, err = server.tool("press_key", app=app, key=key)
        assert not err, done
    text, images, err = server.tool("get_app_state", app=app)
    assert not err, text
    assert _display(app, text) == prefix + "78"
    seen = _read(images, tmp_path / f"{app}-keys.png")
    assert prefix + "78" in seen, f"the screenshot reads {seen!r}"
