"""What a person reads from ``deskhandctl`` when the desktop side refuses: a stable code, the
cause, and a next step that is true for the case at hand and that they can take.

The real CLI as a subprocess against a real daemon on the simulated desktop. These are the
reproductions of issue 17's "cryptic or wrong words" about the desktop: off-screen coordinates
(``invalidParameter``), the backend's tool names (``tool_search``, ``get_app_state``), and consent
hints that suggested ``grants restore`` for an app that never had a grant and never said how to
be asked again after a deny.
"""

from __future__ import annotations

from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, sim_desk
from terminal import Terminal

from deskhand_d.programs.sim.apps.calculator import Calculator

pytestmark = pytest.mark.slow
W, H = Calculator.width, Calculator.height  # the simulated Calculator's screenshot, in pixels
# Words a person at the CLI must never be told to use: the backend's tools and error names.
FOREIGN = ("tool_search", "get_app_state", "invalidParameter", "Computer Use server error")


def no_foreign_words(*texts: str) -> None:
    for text in texts:
        for word in FOREIGN:
            assert word not in text, (word, text)


# ----- coordinates ------------------------------------------------------------------------------


def test_a_point_off_the_window_is_refused_with_its_bounds_and_nothing_is_sent(
    sim_desk: Any,
) -> None:
    """The issue's ``invalidParameter`` for off-screen coordinates: now refused before dispatch,
    from the screenshot's own size, and a point inside still clicks."""
    d = sim_desk()
    sid = d.observe("Calculator")
    off = d.run("click", "--app", "Calculator", "--state", sid, "--x", "5000", "--y", "50")
    assert off.returncode == 1, off.stderr
    first, second = off.stderr.splitlines()[:2]
    assert first == (
        "deskhandctl: coordinates_outside_window: the point (5000, 50) is outside the window of "
        f"'Calculator': the observation's screenshot is {W}x{H} pixels, so x must be from 0 to "
        f"{W - 1} and y from 0 to {H - 1}, counted from its top-left corner. Nothing was sent. "
        "Observe the app again and pick a point inside its window, or click an element by its "
        "index"
    )
    assert second == "deskhandctl: delivery: refused: nothing was sent to the desktop"
    assert d.received("click") == 0
    # The drag's end is named, with the bounds in data for scripts.
    sid = d.observe("Calculator")
    drag = d.json(
        "drag", "--app", "Calculator", "--state", sid, "--from", "10,10", "--to=-5,20", code=1
    )["error"]
    assert drag["code"] == "coordinates_outside_window"
    assert drag["message"].startswith("the drag's end (-5, 20) is outside")
    data = drag["data"]
    assert (data["x"], data["y"], data["width"], data["height"]) == (-5, 20, W, H)
    assert data["delivery"] == "refused"
    assert d.received("drag") == 0
    # A point inside (the bottom-right pixel) goes through.
    sid = d.observe("Calculator")
    inside = d.run("click", "--app", "Calculator", "--state", sid, f"--x={W - 1}", f"--y={H - 1}")
    assert inside.returncode == 0, inside.stderr
    assert d.received("click") == 1


def test_the_backends_invalid_parameter_for_a_point_gets_the_same_code(sim_desk: Any) -> None:
    """When the backend itself refuses a point (a window partly off the screen, say), the
    reply has the code, the screenshot's size and the next step; never the backend's jargon."""
    d = sim_desk({"preapproved": ["*"], "inject": [{"tool": "click", "error": "invalidParameter"}]})
    sid = d.observe("Calculator")
    done = d.run("click", "--app", "Calculator", "--state", sid, "--x", "20", "--y", "300")
    assert done.returncode == 1
    assert done.stderr.startswith(
        "deskhandctl: coordinates_outside_window: the backend refused the point (20, 300): it "
        f"is not on the screen inside the window of 'Calculator' (the observation's screenshot "
        f"is {W}x{H} pixels), so nothing was clicked."
    )
    assert "`deskhandctl observe Calculator`" in done.stderr
    assert (
        "deskhandctl: delivery: dispatched: the backend received the action and answered"
        in done.stderr
    )
    no_foreign_words(done.stdout, done.stderr)
    # The same text for a click by index is not about a point.
    by_index = d.json(
        "click", "--app", "Calculator", "--state", d.observe("Calculator"), "--index", "17", code=1
    )
    assert by_index["error"]["code"] == "invalid_argument"
    assert by_index["error"]["message"].startswith("the backend refused an argument of the click")


@pytest.mark.parametrize(
    ("argv", "code", "says"),
    [
        (["press", "hyper+nothing"], "key_unknown", "the backend does not know the key"),
        (["set-value", "--index", "17", "5"], "element_not_settable", "does not take a value"),
        (
            ["secondary-action", "--index", "17", "Fly"],
            "secondary_action_unknown",
            "'Fly' is not one of the secondary actions of element 17",
        ),
    ],
)
def test_backend_refusals_of_arguments_get_codes(
    sim_desk: Any, argv: list[str], code: str, says: str
) -> None:
    """The simulator answers these as Sky does (``invalidParameter``, "not settable", "not a
    valid secondary action"); the person reads which argument was wrong, and what to do."""
    d = sim_desk()
    sid = d.observe("Calculator")
    verb, *rest = argv
    done = d.run(verb, "--app", "Calculator", "--state", sid, *rest)
    assert done.returncode == 1, done.stdout
    assert done.stderr.startswith(f"deskhandctl: {code}: "), done.stderr
    assert says in done.stderr
    no_foreign_words(done.stdout, done.stderr)


def test_no_backend_tool_names_reach_the_person(sim_desk: Any) -> None:
    """Sky's "not active ... use `tool_search`" after the app restarted, and its action receipt
    ("Call `get_app_state`"), come out in our words, naming deskhandctl's own command (with the
    session option when the session is not the default one)."""
    d = sim_desk({"preapproved": ["*"], "relaunch": [{"tool": "press_key"}]})
    sid = d.observe("Calculator", session="work")
    done = d.run("--session", "work", "press", "--app", "Calculator", "--state", sid, "1")
    assert done.returncode == 1
    assert done.stderr.startswith("deskhandctl: state_invalidated: the backend no longer has")
    assert "`deskhandctl --session work observe Calculator`" in done.stderr
    no_foreign_words(done.stdout, done.stderr)
    receipts = sim_desk({"preapproved": ["*"], "receipts": True})
    sid = receipts.observe("Calculator")
    pressed = receipts.run("press", "--app", "Calculator", "--state", sid, "1")
    assert pressed.returncode == 0, pressed.stderr
    assert (
        "Action completed; no tree came back with it. Observe 'Calculator' again "
        "(`deskhandctl observe Calculator`) to see what it did." in pressed.stdout
    )
    no_foreign_words(pressed.stdout, pressed.stderr)


# ----- consent ----------------------------------------------------------------------------------


def answer_consent(d: CliDaemon, typed: bytes) -> tuple[int, str]:
    """``observe Calculator`` at a terminal; the consent question answered with ``typed``."""
    terminal = Terminal(*d.argv("observe", "Calculator"), env=d.env)
    try:
        terminal.read_until(b"(default deny) ")
        terminal.type(typed)
        code, _ = terminal.finish()
    finally:
        terminal.close()
    return code, terminal.seen.decode(errors="replace")


def test_consent_refusals_name_the_step_that_is_true(sim_desk: Any) -> None:
    """An app that never had a grant: no ``grants restore``. Without a terminal: how to be
    asked. After a deny: a new turn asks again, and it does (the hint is true)."""
    d = sim_desk(grants=())
    nobody = d.run("observe", "Calculator")
    assert nobody.returncode == 1
    assert nobody.stderr.startswith(
        "deskhandctl: consent_denied: Deskhand may not operate 'Calculator': it needs your "
        "consent, and deskhandctl asks only when its stdin and stderr are both terminals"
    )
    assert "answer 'once' (for this turn) or 'always'" in nobody.stderr
    code, shown = answer_consent(d, b"d\n")
    assert code == 1
    assert "you said no. Nothing was sent, and Deskhand does not ask again in this turn" in shown
    assert "asks again in a new turn (start one with `deskhandctl turn begin`)" in shown
    again = d.run("observe", "Calculator")
    assert "you already said no to it in this turn" in again.stderr
    assert "`deskhandctl turn begin`" in again.stderr
    for text in (nobody.stderr, shown, again.stderr):
        assert "grants restore" not in text  # it never had a grant
    # The hint is true: after `turn begin` the question comes again, and "once" lets it in.
    assert d.run("turn", "begin").returncode == 0
    code, shown = answer_consent(d, b"o\n")
    assert code == 0, shown


def test_only_a_revoked_grant_is_offered_back(sim_desk: Any) -> None:
    d = sim_desk()  # Calculator, TextEdit and Calendar have saved grants
    assert d.run("grants", "revoke", "Calculator").returncode == 0
    refused = d.run("observe", "Calculator")
    assert refused.returncode == 1
    assert (
        "You saved a grant for this exact program earlier and revoked it: "
        "`deskhandctl grants restore Calculator` gives it back." in refused.stderr
    )
    assert d.json("observe", "Calculator", code=1)["error"]["data"]["revoked_grant"] is True
    # The suggested command does what it says.
    assert d.at_terminal("grants", "restore", "Calculator").returncode == 0
    assert d.run("observe", "Calculator").returncode == 0


__all__ = ["sim_desk"]
