"""The desktop rules on values: when there is a desktop session (and a Wayland one), what a
missing display means, what is checked on Wayland,
the refusal message, and the simulated-desktop note that every tree parser must read past."""

from __future__ import annotations

import pytest

from deskhand_d import ax, sessionkind
from deskhand_d.backends import desktop
from deskhand_d.backends.a11ybus import Probe

TREE = (
    "<app_state>\n"
    "App=com.apple.calculator (pid 4242)\n"
    'Window: "Calculator", App: Calculator.\n'
    "0 standard window Calculator\n"
    "\t1 text \u200e0\n"
    "\t2 button Description: 6, ID: Six\n"
    "\t3 button Description: Add, ID: Add\n"
    "</app_state>"
)


@pytest.mark.parametrize(
    ("env", "present"),
    [
        ({}, False),
        ({"PATH": "/bin", "XDG_RUNTIME_DIR": "/run/user/1", "DISPLAY": ""}, False),
        ({"DISPLAY": ":0"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0"}, True),
        ({"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"}, True),
    ],
)
def test_a_desktop_session_is_any_display_or_a_session_bus(
    env: dict[str, str], present: bool
) -> None:
    assert sessionkind.session_present(env) is present


def test_missing_display_is_an_x11_session_without_display() -> None:
    assert desktop.missing_display({"DISPLAY": ":1"}) is None
    plain = desktop.missing_display({})
    assert plain is not None and plain.failed and plain.name == "display"
    assert "DISPLAY is not set" in plain.detail and "DISPLAY=:0" in plain.fix


@pytest.mark.parametrize(
    ("env", "wayland"),
    [
        ({"WAYLAND_DISPLAY": "wayland-0"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0", "DISPLAY": ":0"}, True),  # XWayland beside it
        ({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "wayland"}, True),
        ({"WAYLAND_DISPLAY": "wayland-0", "XDG_SESSION_TYPE": "x11"}, False),
        ({"DISPLAY": ":0"}, False),
        ({"WAYLAND_DISPLAY": ""}, False),
    ],
)
def test_a_wayland_session_is_wayland_display_unless_the_session_says_x11(
    env: dict[str, str], wayland: bool
) -> None:
    assert sessionkind.wayland_session(env) is wayland


def test_on_wayland_the_checks_need_no_x11_and_say_what_is_not_checked() -> None:
    """No session bus: the Wayland session is named, input and screenshots are not checked
    (never X11's display or colour-depth advice), the bus check fails: only that last one is
    what auto refuses for."""
    from deskhand_d.backends import desktopprobe

    env = {"WAYLAND_DISPLAY": "wayland-7", "XDG_SESSION_TYPE": "wayland"}
    found = desktopprobe.run(env, probe=lambda _: Probe(False, "no bus.", "start one."))
    by_name = {c.name: c for c in found}
    assert list(by_name) == ["display", "input", "screenshot", "accessibility_bus"]
    assert by_name["display"].status == "ok" and "wayland-7" in by_name["display"].detail
    assert by_name["input"].status == "not_checked"
    assert by_name["screenshot"].status == "not_checked"
    assert "24-bit" not in " ".join(c.fix for c in found)
    assert [c.name for c in found if c.failed and c.name in desktop.ESSENTIAL] == [
        "accessibility_bus"
    ]


def test_refusal_message_names_the_session_each_failure_and_the_way_out() -> None:
    checks = [
        desktop.Check("display", "ok", "X display :0 answers."),
        desktop.Check("xtest", "failed", "no XTEST.", "use Xorg."),
        desktop.bus_check(Probe(False, "no accessibility bus.", "install at-spi2-core.")),
    ]
    env = {"DISPLAY": ":0", "DBUS_SESSION_BUS_ADDRESS": "unix:path=/b"}
    message = desktop.unreachable_message(checks, env)
    assert message.startswith(
        "there is a desktop session here (DISPLAY=:0 and a session bus), but Deskhand cannot "
        "operate it."
    )
    assert "XTEST (synthesised keys and clicks): no XTEST. Fix: use Xorg." in message
    assert "accessibility bus: no accessibility bus. Fix: install at-spi2-core." in message
    assert "answers" not in message  # passed checks are not problems
    assert 'backend.kind = "sim"' in message and "`deskhandctl doctor`" in message
    assert "\n" not in message
    assert desktop.bus_check(Probe(True, "found.")).status == "ok"


def test_the_simulated_note_is_one_line_that_every_tree_parser_reads_past() -> None:
    """The note goes first, and the daemon's stateId reader and the Jev/demo parser find the
    same elements, identity and window in the marked text as in the original."""
    marked = desktop.mark_simulated(TREE)
    first, _, rest = marked.partition("\n")
    assert first == desktop.SIMULATED_NOTE and rest == TREE
    assert "Simulated desktop" in first and "not this computer's real desktop" in first
    before, after = ax.inspect(TREE), ax.inspect(marked)
    assert after == before and after.complete and after.indices == frozenset({0, 1, 2, 3})
    assert after.identity == "com.apple.calculator" and after.pid == 4242
    plain, noted = ax.parse(TREE), ax.parse(marked)
    assert noted.elements == plain.elements and len(noted.elements) == 4
    assert (noted.app, noted.pid, noted.window) == ("com.apple.calculator", 4242, "Calculator")
    # a list_apps text (no tree) keeps its lines after the note
    apps = "Calculator — com.apple.calculator [running]\nNotes — com.apple.Notes"
    assert desktop.mark_simulated(apps).split("\n")[1:] == apps.split("\n")
