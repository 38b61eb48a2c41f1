"""Firefox ESR and Chromium filling a page of our own, through the Linux backend.

On one private desktop with no window manager: the accessibility switch is off when the
backend starts (as on a desktop where no screen reader ever ran), so Firefox answers only once
the backend has turned it on; Chromium started by the person without its accessibility switch
is refused with what helps, and started by the backend it gets the switch. On each browser the
form is filled by element index (a text field, a textarea, a check box, a radio button, a
``<select>``) and sent with its button; the page writes what it received into itself, which is
read back from the reply's tree and from its screenshot with tesseract. Keys go to the field
that was clicked (Firefox used to drop its focus), every reply states the effect read back, a
``set_value`` the page ignores says so, and browser nodes carry no runs of U+FFFC.
"""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import ToolResult
from mcpclient import Server, serving
from screenread import index, ok, seen, where_part

pytestmark = pytest.mark.slow

EFFECT = "deskhand/effect"
DELIVERY = "deskhand/delivery"
PAGE = """<!doctype html><html><head><title>Deskhand form</title></head><body>
<h1>Contact</h1>
<form onsubmit="return false">
<p><label>Full name <input id="name" type="text"></label></p>
<p><label>Notes <textarea id="notes"></textarea></label></p>
<p><label><input id="agree" type="checkbox"> I agree</label></p>
<p><label><input type="radio" name="size" value="Small"> Small</label>
<label><input type="radio" name="size" value="Large"> Large</label></p>
<p><label>Colour <select id="colour"><option>Red</option><option>Green</option>
<option>Blue</option></select></label></p>
<p><button id="go" onclick="send()">Send</button></p>
<p id="out">Result: none</p>
</form>
<script>
function send() {
  const size = document.querySelector('input[name=size]:checked');
  document.getElementById('out').textContent = 'Result: ' + [
    document.getElementById('name').value,
    document.getElementById('notes').value,
    document.getElementById('agree').checked ? 'agreed' : 'not agreed',
    size ? size.value : 'no size',
    document.getElementById('colour').value,
  ].join(' / ');
}
</script></body></html>
"""
BROWSERS = {
    "Test Firefox": "firefox-esr",
    "Test Chromium": "chromium",
}


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=("firefox-esr", "chromium", "tesseract")) as desk:
        yield desk


@pytest.fixture(scope="module")
def page(desktop: Desktop) -> Path:
    path = desktop.root / "page" / "form.html"
    path.parent.mkdir()
    path.write_text(PAGE)
    return path


def _entries(desktop: Desktop, page: Path) -> Path:
    """Desktop entries for the two browsers with profiles of their own (Chromium runs
    without its sandbox here, which needs user namespaces a CI container may not give)."""
    data = desktop.root / "data"
    (data / "applications").mkdir(parents=True, exist_ok=True)
    profiles = desktop.root / "profiles"
    (profiles / "firefox").mkdir(parents=True, exist_ok=True)
    (data / "applications" / "dh-firefox.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Test Firefox\n"
        f"Exec=/usr/lib/firefox-esr/firefox-esr --no-remote --profile {profiles}/firefox "
        f"file://{page}\n"
    )
    (data / "applications" / "dh-chromium.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Test Chromium\n"
        f"Exec=/usr/bin/chromium --no-sandbox --no-first-run --disable-gpu "
        f"--user-data-dir={profiles}/chromium file://{page}\n"
    )
    return data


@pytest.fixture(scope="module")
def server(desktop: Desktop, page: Path) -> Iterator[Server]:
    env = {**desktop.env, "XDG_DATA_HOME": str(_entries(desktop, page))}
    assert _switch(desktop) == "false"  # as on a desktop where no screen reader ever ran
    with serving(env, desktop.root) as s:
        yield s
    assert _switch(desktop) == "false"  # put back as it was found


def _switch(desktop: Desktop) -> str:
    out = subprocess.run(
        [
            "dbus-send", "--session", "--dest=org.a11y.Bus", "--print-reply",
            "/org/a11y/bus", "org.freedesktop.DBus.Properties.Get",
            "string:org.a11y.Status", "string:IsEnabled",
        ],
        env=desktop.env, capture_output=True, text=True, check=True, timeout=10,
    ).stdout  # fmt: skip
    return out.split()[-1]


def loaded(server: Server, app: str) -> ToolResult:
    """Observe ``app`` until the page is in its tree (a browser loads it after its window)."""
    deadline = time.monotonic() + 60
    while True:
        result = server.call("get_app_state", 90, app=app)
        if not result.is_error and "heading Contact" in result.text and "Send" in result.text:
            return result
        assert time.monotonic() < deadline, result.text[-3000:]
        time.sleep(0.5)


def effect(result: ToolResult) -> dict[str, str]:
    found: dict[str, str] | None = (result.raw.get("_meta") or {}).get(EFFECT)
    assert found is not None, result.raw.get("_meta")
    return found


def line(text: str, pattern: str) -> str:
    import re

    found = re.search(rf"^\t*\d+ {pattern}.*$", text, re.MULTILINE)
    assert found, f"no element matching {pattern!r} in\n{text}"
    return found.group(0).strip()


def test_chromium_started_without_its_switch_is_refused_with_what_helps(
    desktop: Desktop, server: Server, page: Path
) -> None:
    """Started by the person as usual, Chromium fills its windows for nobody: the reply says
    so and what to do (quit it; started by Deskhand it gets the switch), not an empty tree."""
    proc = desktop.spawn(
        [
            "chromium", "--no-sandbox", "--no-first-run", "--disable-gpu",
            f"--user-data-dir={desktop.root / 'profiles' / 'plain'}", f"file://{page}",
        ],
        "plain-chromium",
    )  # fmt: skip
    try:
        deadline = time.monotonic() + 60
        while True:
            listed = ok(server.call("list_apps", 30)).text
            if "Test Chromium" in listed.split("[running]")[0]:
                break
            assert time.monotonic() < deadline, listed
            time.sleep(0.5)
        result = server.call("get_app_state", 90, app="Test Chromium")
        note = (result.raw.get("_meta") or {}).get(DELIVERY)
        assert result.is_error and note is not None, result.text[:2000]
        assert (note["reason"], note["hint"], note["state"]) == (
            "not_accessible",
            "restart_chromium",
            "refused",
        )
        assert "--force-renderer-accessibility" in result.text
    finally:
        proc.terminate()
        proc.wait(30)
        time.sleep(1.0)  # its helpers leave the bus with it


@pytest.mark.parametrize("app", list(BROWSERS))
def test_fill_the_form_and_read_it_back(server: Server, app: str) -> None:
    state = loaded(server, app)
    # the Firefox window was empty for us until the switch was on; now the page is there
    assert "\ufffc" not in state.text, "object replacement characters in the tree"

    clicked = ok(
        server.call("click", 30, app=app, element_index=index(state.text, r"text field.*Full name"))
    )
    typed = ok(server.call("type_text", 30, app=app, text="Ada Lovelace"))
    assert effect(typed) == {"effect": "changed", "what": "text"}
    assert "Value: Ada Lovelace" in line(typed.text, r"text field.*Full name")

    ok(server.call("click", 30, app=app, element_index=index(typed.text, r"text field.*Notes")))
    typed = ok(server.call("type_text", 30, app=app, text="Engine notes"))
    assert effect(typed)["effect"] == "changed"
    assert "Engine notes" in line(typed.text, r"text field.*Notes")
    # the first field kept its text: keys went only where the focus was
    assert "Value: Ada Lovelace" in line(typed.text, r"text field.*Full name")

    agreed = ok(
        server.call("click", 30, app=app, element_index=index(typed.text, r"check ?box I agree"))
    )
    assert "Value: 1" in line(agreed.text, r"check ?box I agree")
    large = ok(
        server.call("click", 30, app=app, element_index=index(agreed.text, r"radio button Large"))
    )
    assert "Value: 1" in line(large.text, r"radio button Large")
    assert "Value: 0" in line(large.text, r"radio button Small")

    opened = ok(
        server.call(
            "click",
            30,
            app=app,
            element_index=index(large.text, r"(pop up button|combo box).*Colour"),
        )
    )
    chosen = ok(
        server.call("click", 30, app=app, element_index=index(opened.text, r"menu item.*Blue"))
    )
    assert "Blue" in chosen.text

    sent = ok(server.call("click", 30, app=app, element_index=index(chosen.text, r"button Send")))
    result = "Result: Ada Lovelace / Engine notes / agreed / Large / Blue"
    assert result in sent.text, sent.text[-2500:]
    words = seen(sent)
    assert "lovelace" in words and "agreed" in words and "blue" in words, words
    del clicked


def test_firefox_set_value_on_a_page_field_says_it_did_not_take(server: Server) -> None:
    """Firefox answers SetTextContents on a page's field with true and leaves it as it was:
    the reply says the value is unchanged (delivered, no effect), never a plain success."""
    state = loaded(server, "Test Firefox")
    field = index(state.text, r"text field.*Notes")
    before = line(state.text, r"text field.*Notes")
    result = server.call(
        "set_value", 30, app="Test Firefox", element_index=field, value="Set directly"
    )
    note = (result.raw.get("_meta") or {}).get(DELIVERY)
    if note is None:  # a Firefox that honours it: then the field must show it
        assert effect(result) == {"effect": "changed", "what": "value"}
        assert "Set directly" in line(result.text, r"text field.*Notes")
        return
    assert result.is_error and note == {
        "state": "dispatched",
        "reason": "no_effect",
        "what": "value",
    }
    assert "unchanged" in result.text
    after = ok(server.call("get_app_state", 90, app="Test Firefox")).text
    assert line(after, r"text field.*Notes") == before


def test_firefox_typing_into_the_address_bar_clicked_by_coordinates(server: Server) -> None:
    """A click by coordinates on the address bar (read off the screenshot), then keys: they
    land in the address bar, not in the page."""
    state = loaded(server, "Test Firefox")
    x, y = where_part(state, "file:")  # the page address the bar shows
    ok(server.call("click", 30, app="Test Firefox", x=x, y=y))
    typed = ok(server.call("type_text", 30, app="Test Firefox", text="deskhand"))
    assert "deskhand" in line(
        typed.text, r"(pop up button|combo box|text field|entry).*(address|Search)"
    )
    # the reply says what it read back; where the focus report named the bar's container
    # rather than its text, it says it could not tell, never that nothing changed
    assert effect(typed)["effect"] in ("changed", "unreadable")
    ok(server.call("press_key", 30, app="Test Firefox", key="Escape"))
