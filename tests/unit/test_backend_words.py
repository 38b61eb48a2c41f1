"""The words a refusal is given in: the backend's texts read into codes, the next step in each
client's vocabulary, and the screenshot's size behind the coordinate check. Pure functions; the
daemon and the real CLI are exercised in tests/cli/test_cli_words.py.
"""

from __future__ import annotations

from typing import Any

import pytest

from deskhand_d import errors as E
from deskhand_d.native.imagesize import image_size
from deskhand_d.native.interpret import explain
from deskhand_d.native.states import StateBook, StateRecord, Use
from deskhand_d.nextsteps import PROTOCOL, Words, for_client
from deskhand_d.programs.atspi.png import encode_rgb
from deskhand_d.programs.core import texts as sky
from deskhand_d.programs.sim import jpeg

CLI, PI = Words("cli"), Words("pi")
# Never in a message: the backend's own tool and error names.
INTERNAL = ("tool_search", "invalidParameter", "Computer Use server error")

# (tool, arguments, the backend's text, the code it becomes)
REFUSALS: list[tuple[str, dict[str, Any], str, str]] = [
    ("click", {"x": 900, "y": 40}, sky.INVALID_PARAMETER, "coordinates_outside_window"),
    (
        "drag",
        {"from_x": 1, "from_y": 2, "to_x": 3, "to_y": 4},
        sky.INVALID_PARAMETER,
        "coordinates_outside_window",
    ),
    ("press_key", {"key": "hyper+q"}, sky.INVALID_PARAMETER, "key_unknown"),
    ("set_value", {"element_index": "4", "value": "ten"}, sky.INVALID_PARAMETER, "value_invalid"),
    (
        "scroll",
        {"element_index": "4", "direction": "up"},
        sky.INVALID_PARAMETER,
        "invalid_argument",
    ),
    ("click", {"element_index": "7"}, sky.STALE_ELEMENT, "element_gone"),
    ("click", {"element_index": "x"}, sky.invalid_element_id("x"), "element_gone"),
    (
        "click",
        {"element_index": "7"},
        sky.server_error(-10005, "the element is not on screen"),
        "element_not_on_screen",
    ),
    ("set_value", {"element_index": "3", "value": "1"}, sky.NOT_SETTABLE, "element_not_settable"),
    (
        "perform_secondary_action",
        {"element_index": "3", "action": "Fly"},
        sky.bad_secondary_action("Fly", "3"),
        "secondary_action_unknown",
    ),
    ("select_text", {"element_index": "2", "text": "zz"}, sky.TEXT_NOT_FOUND, "text_not_found"),
    (
        "select_text",
        {"element_index": "2", "text": "zz"},
        sky.NO_TEXT_SELECTION,
        "text_not_selectable",
    ),
    ("type_text", {"text": "a\x01"}, sky.no_key_code("\x01"), "character_not_typable"),
    ("scroll", {"element_index": "1"}, sky.invalid_scroll_direction("in"), "invalid_argument"),
    ("scroll", {"element_index": "1"}, sky.MISSING_SCROLL_AMOUNT, "invalid_argument"),
    ("click", {}, sky.missing_argument("app"), "invalid_argument"),
    ("press_key", {"key": "1"}, sky.not_active("Calculator"), "state_invalidated"),
    ("get_app_state", {"app": "Nope"}, sky.app_not_found("Nope"), "app_not_found"),
    ("get_app_state", {}, sky.forbidden_app("com.googlecode.iterm2"), "app_forbidden"),
    ("get_app_state", {}, sky.org_policy_blocked("com.example.mail"), "app_forbidden"),
    (
        "get_app_state",
        {},
        "Computer Use server error -10018: Ambiguous app identifier 'com.x'. Multiple apps share "
        "this bundle identifier: /A.app, /B.app. Use an app name or full app path instead.",
        "app_ambiguous",
    ),
    ("press_key", {"key": "1"}, sky.running_app_not_found("com.x"), "app_not_running"),
    ("get_app_state", {}, sky.NO_WINDOWS, "no_window"),
    ("click", {"x": 1, "y": 1}, sky.CG_WINDOW_NOT_FOUND, "no_window"),
    (
        "press_key",
        {"key": "a"},
        sky.server_error(-10005, "X11 input and screenshots are unavailable: no display"),
        "input_unavailable",
    ),
    (
        "type_text",
        {"text": "a"},
        sky.server_error(-10005, "Wayland input is unavailable: no remote-desktop interface"),
        "input_unavailable",
    ),
]

# Texts that are not about the call's arguments or target: passed on as they are.
NOT_READ = [
    sky.TIMEOUT_REACHED,
    sky.PERMISSIONS_PENDING,
    sky.PERMISSIONS_MISSING,
    sky.SCREEN_LOCKED,
    sky.VERSION_MISMATCH,
    sky.TURN_ENDED,
    "0 standard window Calculator",
]


@pytest.mark.parametrize(("tool", "args", "text", "code"), REFUSALS)
@pytest.mark.parametrize("words", [CLI, PI, PROTOCOL], ids=["cli", "pi", "protocol"])
def test_each_backend_refusal_gets_its_code_and_our_words(
    tool: str, args: dict[str, Any], text: str, code: str, words: Words
) -> None:
    error = explain(tool, args, "Calculator", text, words)
    assert error is not None and error.code == code
    # What the backend answered it answered: never "refused" (nothing-sent) for these.
    assert error.delivery == "dispatched"
    assert error.data["backend_text"] == text
    # It says what became of the call: nothing happened, or (typing) look at what did.
    # (Input that cannot be sent at all may fail part-way: only the backend's note says.)
    assert "nothing was" in error.message.lower() or code in (
        "character_not_typable",
        "input_unavailable",
    )
    for name in INTERNAL:
        assert name not in error.message, (name, error.message)
    # An op name only for an agent on the protocol, which sends ops; a person at the CLI and
    # pi's model are told their own command or tool.
    if words is not PROTOCOL:
        assert "`get_app_state`" not in error.message
    if "observe" in error.message.lower() and words is CLI:
        assert "`deskhandctl observe Calculator`" in error.message
    if "observe" in error.message.lower() and words is PI:
        assert "cua_get_app_state" in error.message and "deskhandctl observe" not in error.message


def test_the_refusal_table_covers_every_argument_text_of_the_simulator() -> None:
    """Every sentence in the simulator's text module that answers a bad argument or target is
    in REFUSALS: a new one there fails here until it gets its code."""
    covered = {detail for _, _, detail, _ in REFUSALS}
    arguments = [
        sky.INVALID_PARAMETER,
        sky.STALE_ELEMENT,
        sky.NOT_SETTABLE,
        sky.TEXT_NOT_FOUND,
        sky.NO_TEXT_SELECTION,
        sky.MISSING_SCROLL_AMOUNT,
        sky.NO_WINDOWS,
        sky.CG_WINDOW_NOT_FOUND,
    ]
    assert set(arguments) <= covered


@pytest.mark.parametrize("text", NOT_READ)
def test_other_backend_texts_are_left_alone(text: str) -> None:
    assert explain("click", {"element_index": "1"}, "Calculator", text, CLI) is None


def test_a_refused_point_names_the_screenshot_size_when_known() -> None:
    error = explain(
        "click", {"x": 900, "y": 40}, "Calc", sky.INVALID_PARAMETER, CLI, bounds=(230, 410)
    )
    assert error is not None
    assert "(900, 40)" in error.message and "230x410 pixels" in error.message
    assert (error.data["width"], error.data["height"], error.data["x"]) == (230, 410, 900)
    unknown = explain("click", {"x": 9, "y": 4}, "Calc", sky.INVALID_PARAMETER, CLI)
    assert unknown is not None and "width" not in unknown.data and "pixels)" not in unknown.message


def test_vocabularies_name_their_own_steps() -> None:
    assert CLI.observe("Text Editor") == "`deskhandctl observe 'Text Editor'`"
    assert Words("cli", "agent 1").set_mode("jev") == "`deskhandctl --session 'agent 1' mode jev`"
    assert PI.set_mode("jev") == "/cua-mode jev" and PI.run() == "jev_cua_run"
    assert PROTOCOL.observe("x") == "`get_app_state`" and "turn_begin" in PROTOCOL.new_turn()
    assert "deskhandctl turn begin" in CLI.new_turn() and "next message" in PI.new_turn()
    # The CLI's default session (and a throwaway one) need no --session; any other does.
    assert for_client("cli", session="cli-1000", uid=1000) == Words("cli")
    assert for_client("cli", session="", uid=1000) == Words("cli")
    assert for_client("cli", session="work", uid=1000) == Words("cli", "work")
    assert for_client("pi", session="anything") == PI
    assert for_client("agent") == for_client("test") == PROTOCOL
    # An MCP host's model has tools, not ops, and no turn to begin: the person begins one for
    # the host's session from a terminal.
    mcp = for_client("mcp", session="claude-code-41-1")
    assert mcp == Words("mcp", "claude-code-41-1")
    assert "turn_begin" not in mcp.new_turn()
    assert "`deskhandctl --session claude-code-41-1 turn begin`" in mcp.new_turn()
    assert mcp.set_mode("jev") == "the `mode_set` tool with mode jev"
    cannot = mcp.cannot_ask("Calculator", always=True)
    assert "nobody was asked" in cannot and "`deskhandctl questions`" in cannot
    assert "turn_begin" not in cannot and "can_answer_questions" not in cannot


# ----- the screenshot's size -------------------------------------------------------------------


def test_image_size_of_real_encoders() -> None:
    png = encode_rgb(37, 21, bytes(37 * 21 * 3))
    assert image_size(png) == (37, 21)
    y, c = bytes(48 * 32), bytes(24 * 16)
    jpg = jpeg.encode(40, 30, y, c, c, 48, 32)
    assert image_size(jpg) == (40, 30)


def test_image_size_walks_jpeg_segments_and_refuses_the_rest() -> None:
    app0 = b"\xff\xe0\x00\x10JFIF\x00\x01\x01\x00\x00\x01\x00\x01\x00\x00"
    sof2 = b"\xff\xc2\x00\x11\x08\x01\x9a\x00\xe6\x03" + bytes(9)  # progressive, 230x410
    assert image_size(b"\xff\xd8" + app0 + b"\xff\xff" + sof2) == (230, 410)
    dht_first = b"\xff\xc4\x00\x04\x00\x00"  # a Huffman table is not a frame header
    assert image_size(b"\xff\xd8" + dht_first + sof2) == (230, 410)
    for broken in (
        b"",
        b"GIF89a....",
        b"\xff\xd8",
        b"\xff\xd8" + app0,  # no frame header
        b"\xff\xd8\xff\xda\x00\x02",  # scan before any frame
        b"\xff\xd8\x00\x00\x00\x00",  # not a marker
        b"\xff\xd8\xff\xc0\x00\x11\x08\x00\x00\x00\xe6\x03" + bytes(9),  # zero height
        encode_rgb(3, 2, bytes(18))[:20],  # cut inside IHDR
    ):
        assert image_size(broken) is None, broken


# ----- the coordinate check before dispatch ----------------------------------------------------


def _book(size: tuple[int, int] | None) -> tuple[StateBook, str]:
    book = StateBook()
    record = StateRecord(
        state_id="s1",
        app="Calculator",
        turn=1,
        created=0.0,
        indices=frozenset({1}),
        has_screenshot=True,
        backend_generation=1,
        screenshot_size=size,
    )
    return book, book.mint(record)


def _use(*points: tuple[float, float]) -> Use:
    return Use("Calculator", None, coordinates=True, points=points)


def test_points_inside_the_screenshot_pass() -> None:
    book, sid = _book((230, 410))
    assert book.consume(sid, _use((0, 0), (229.9, 409.5)), turn=1, now=1.0, generation=1)


@pytest.mark.parametrize(
    ("points", "which", "x"),
    [
        (((230, 5),), "the point", 230),
        (((5, -1),), "the point", 5),
        (((1, 1), (5000, 5)), "the drag's end", 5000),
        (((float("nan"), 5), (1, 1)), "the drag's start", None),
    ],
)
def test_a_point_outside_is_refused_with_the_bounds_and_burns_the_state(
    points: tuple[tuple[float, float], ...], which: str, x: float | None
) -> None:
    book, sid = _book((230, 410))
    with pytest.raises(E.CoordinatesOutsideWindow) as caught:
        book.consume(sid, _use(*points), turn=1, now=1.0, generation=1)
    error = caught.value
    assert error.delivery == "refused" and error.message.startswith(which)
    assert "230x410 pixels" in error.message and "x must be from 0 to 229" in error.message
    assert (error.data["width"], error.data["height"]) == (230, 410)
    if x is not None:
        assert error.data["x"] == x
    with pytest.raises(E.StateConsumed):  # like every refused attempt, it used the state up
        book.consume(sid, _use((1, 1)), turn=1, now=1.0, generation=1)


def test_without_a_known_size_the_backend_decides() -> None:
    book, sid = _book(None)
    assert book.consume(sid, _use((99999, 99999)), turn=1, now=1.0, generation=1)
