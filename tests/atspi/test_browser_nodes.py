"""Browser nodes show their real actions and their text as read (issue 22, section 5).

Firefox ESR and Chromium on one private desktop (the session's accessibility switched on by
the server's first call), each showing one small local page. Neither may show
``Secondary Actions: ;;`` (Firefox's bridge answers every field of ``GetActions`` with the key
binding; Chromium answers empty names), nor U+FFFC, the character a hypertext holds where an
embedded child sits: a paragraph with links reads as it does on screen. A drop-down says
what it has chosen. A button pressed by index does what it says, through its real action.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from mcpclient import Server, serving
from screenread import observe_until, ok

pytestmark = pytest.mark.slow

PAGE = """<!doctype html><html><head><title>Deskhand test page</title></head><body>
<h1>Hello browser</h1>
<p>Read the <a href="#x">first link</a> and then <a href="#y">second link</a> please.</p>
<button onclick="document.getElementById('out').textContent='was pressed'">Press me</button>
<p id="out">not pressed</p>
<p><label>Colour <select><option>Red</option><option selected>Green</option></select></label></p>
</body></html>
"""
PARAGRAPH = "text Read the first link and then second link please."


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("firefox-esr", "chromium")) as desk:
        desk.env["XDG_DATA_HOME"] = str(desk.root / "data")
        yield desk


@pytest.fixture(scope="module")
def server(desktop: Desktop) -> Iterator[Server]:
    with serving(desktop.env, desktop.root) as s:
        ok(s.call("list_apps", 30))  # the accessibility switch goes on before the browsers start
        page = desktop.root / "page.html"
        page.write_text(PAGE)
        firefox = desktop.root / "firefox-profile"
        firefox.mkdir()
        desktop.spawn(
            ["firefox-esr", "--no-remote", "--profile", str(firefox), page.as_uri()], "firefox"
        )
        desktop.spawn(
            [
                "chromium",
                "--force-renderer-accessibility",
                "--no-first-run",
                "--no-sandbox",  # the suite may run as root, where Chromium needs it
                f"--user-data-dir={desktop.root / 'chromium-profile'}",
                page.as_uri(),
            ],
            "chromium",
        )
        yield s


def index(text: str, pattern: str) -> str:
    found = re.search(rf"^\t*(\d+) {pattern}", text, re.MULTILINE)
    assert found, f"no element matching {pattern!r} in\n{text}"
    return found.group(1)


@pytest.mark.parametrize("app", ["Firefox ESR", "Chromium Web Browser"])
def test_browser_nodes_show_real_actions_and_read_text(server: Server, app: str) -> None:
    """Real action names, no object-replacement characters, the paragraph as it reads; the
    page's button pressed by index changes the page."""
    state = observe_until(server, app, re.escape(PARAGRAPH))
    text = state.text
    assert ";;" not in text, text
    assert "\ufffc" not in text
    assert re.search(r"^\t*\d+ link first link", text, re.M)
    assert not re.search(r"Secondary Actions: (?:, )*(?:,|$)", text, re.M)  # no empty names
    # the drop-down says what it has chosen (Chromium: only its closed list's selection does)
    assert re.search(r"pop up button (?:\(\w+\) )?Colour, Value: Green", text), text
    pressed = ok(server.call("click", 30, app=app, element_index=index(text, r"button Press me")))
    after = pressed.text
    if "was pressed" not in after:  # the page may repaint its text a moment later
        after = observe_until(server, app, "text was pressed").text
    assert "text was pressed" in after and "text not pressed" not in after
