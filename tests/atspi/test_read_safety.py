"""Reading an app never harms it: every app the suite drives, observed 20 times, still runs.

Observing FeatherPad and SpeedCrunch used to kill them (Qt's bridge died on a property call
that only some toolkits answer), so this runs every app of the suite's toolkits on one private
desktop: GTK 4 (Calculator, Text Editor, Widget Factory, Clocks), GTK 3 (Galculator, Mousepad,
Geany, Character Map, GTK 3 Widget Factory), Qt 5 (FeatherPad, SpeedCrunch), LibreOffice Writer,
Firefox ESR and Chromium. Each is started by the backend and observed 20 times, with the
ones before it still running, and every one must be alive at the end, the very process its
first observation named.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from mcpclient import Server, serving

pytestmark = pytest.mark.slow

ROUNDS = 20
APPS = {
    "Calculator": "gnome-calculator",
    "Text Editor": "gnome-text-editor",
    "Widget Factory": "gtk4-widget-factory",
    "Clocks": "gnome-clocks",
    "Galculator": "galculator",
    "Mousepad": "mousepad",
    "Geany": "geany",
    "Character Map": "gucharmap",
    "gtk3-widget-factory": "gtk3-widget-factory",
    "FeatherPad": "featherpad",
    "SpeedCrunch": "speedcrunch",
    "LibreOffice Writer": "soffice",
    "Test Firefox": "firefox-esr",
    "Test Chromium": "chromium",
}


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    with desktop_or_skip(require=tuple(APPS.values())) as desk:
        yield desk


@pytest.fixture(scope="module")
def server(desktop: Desktop) -> Iterator[Server]:
    data = desktop.root / "data" / "applications"
    data.mkdir(parents=True)
    profiles = desktop.root / "profiles"
    (profiles / "firefox").mkdir(parents=True)
    (data / "dh-firefox.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Test Firefox\n"
        f"Exec=/usr/lib/firefox-esr/firefox-esr --no-remote --profile {profiles}/firefox "
        "about:blank\n"
    )
    (data / "dh-chromium.desktop").write_text(
        "[Desktop Entry]\nType=Application\nName=Test Chromium\n"
        "Exec=/usr/bin/chromium --no-sandbox --no-first-run --disable-gpu "
        f"--user-data-dir={profiles}/chromium about:blank\n"
    )
    env = {**desktop.env, "XDG_DATA_HOME": str(desktop.root / "data")}
    with serving(env, desktop.root) as s:
        yield s


def _pid(text: str) -> int:
    found = re.search(r"\(bundleID [^,]+, pid (\d+)\)|\(pid (\d+)\)", text)
    assert found, text[:300]
    return int(found.group(1) or found.group(2))


def _alive(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] not in ("Z", "X")
    except FileNotFoundError:
        return False


FIRST: dict[str, int] = {}  # app -> the process its first observation named


@pytest.mark.parametrize("app", list(APPS))
def test_reading_an_app_twenty_times_leaves_it_running(server: Server, app: str) -> None:
    result = server.call("get_app_state", 120, app=app)
    assert not result.is_error, f"{app}: {result.text[:500]}"
    pid = FIRST[app] = _pid(result.text)
    for round_ in range(ROUNDS):
        result = server.call("get_app_state", 120, app=app)
        assert not result.is_error, f"{app}, round {round_}: {result.text[:500]}"
        assert _pid(result.text) == pid, f"{app} is another process in round {round_}"
    assert _alive(pid)


def test_every_app_read_is_still_running(server: Server) -> None:
    """After all of them were read (each with the others running), none has died."""
    assert set(FIRST) == set(APPS)
    dead = [app for app, pid in FIRST.items() if not _alive(pid)]
    assert dead == [], f"killed by being read: {dead}"
