"""One conformance suite for every backend Deskhand can run: the simulator and the AT-SPI server.

Each backend is a real child process speaking MCP over stdio, driven by the same tests through
:mod:`mcpstdio`: the tool surface, the accessibility text (a full tree, numbered from 0 depth
first, renumbered after every action), a real task (6 + 7 = on Calculator shows 13), and the
exact Sky error texts for stale and invalid indexes, non-settable elements, unknown secondary
actions, bad scroll directions, unknown apps, missing arguments and actions before an
observation, and the grammar rules both backends keep: flags and roles from Sky's vocabulary
(plus the role words the Linux backend adds), values of checkable elements as 1 or 0, and the
``Window:`` line naming the first root (the surface the person deals with first; further
windows and the menu bar are later roots at depth 0). The AT-SPI backend runs against the real gnome-calculator (GTK4) in a private
desktop (Xvfb, its own session and accessibility buses) that the suite starts and tears down.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest
from dhtest.desktop import Desktop, desktop_or_skip
from dhtest.mcpstdio import McpChild, ToolResult

from deskhand_d import ax, surface
from deskhand_d.ax import Element
from deskhand_d.backends import doctor
from deskhand_d.programs.atspi import roles as atspi_roles
from deskhand_d.programs.core import texts

ROOT = Path(__file__).resolve().parents[2]
KEYS = ("6", "+", "7", "=")


def _sim_key(element: Element, key: str) -> bool:
    """The simulator's Calculator is macOS's: digits by description, operators by name."""
    names = {"+": "Add", "=": "Equals"}
    if key in names:
        return element.label == names[key]
    return element.attributes.get("Description") == key


def _gtk_key(element: Element, key: str) -> bool:
    """gnome-calculator labels its keypad with the symbols themselves (minus is U+2212)."""
    return element.label.split(",")[0].strip() in {key, key.replace("-", "\u2212")}


@dataclass
class Backend:
    name: str
    start: Callable[[], McpChild]
    is_key: Callable[[Element, str], bool]
    fresh_app: Callable[[], None]  # the app as if just started (a clean display)


@pytest.fixture(scope="module", params=["sim", "atspi"])
def backend(request: pytest.FixtureRequest) -> Iterator[Backend]:
    if request.param == "sim":
        env = {k: v for k, v in os.environ.items() if not k.startswith("DESKHAND_SIM")}
        env["DESKHAND_SIM_SCENARIO"] = json.dumps({"preapproved": ["*"]})
        argv = [sys.executable, "-m", "deskhand_d.programs.sim"]
        yield Backend("sim", lambda: McpChild(argv, env, cwd=ROOT), _sim_key, lambda: None)
        return
    with desktop_or_skip("gnome-calculator") as desk:
        yield _atspi_backend(desk)


def _atspi_backend(desk: Desktop) -> Backend:
    argv = [sys.executable, "-m", "deskhand_d.programs.atspi"]

    def fresh() -> None:
        desk.stop_app("gnome-calculator")
        desk.launch("gnome-calculator")

    return Backend("atspi", lambda: McpChild(argv, desk.env, cwd=ROOT), _gtk_key, fresh)


@pytest.fixture
def child(backend: Backend) -> Iterator[McpChild]:
    backend.fresh_app()
    c = backend.start()
    try:
        yield c
    finally:
        c.close()


def observe(c: McpChild, backend: Backend, app: str = "Calculator") -> tuple[ToolResult, ax.Tree]:
    """get_app_state once the keypad is drawn (a freshly started app draws it a moment later)."""
    for _ in range(50):
        result = c.call("get_app_state", app=app)
        assert not result.is_error, result.text
        tree = ax.parse(result.text)
        if any(backend.is_key(e, KEYS[0]) for e in tree.elements):
            return result, tree
    raise AssertionError(f"{backend.name}: no keypad in\n{result.text}")


def key_index(tree: ax.Tree, backend: Backend, key: str) -> int:
    found = [e.index for e in tree.elements if backend.is_key(e, key)]
    assert found, f"{backend.name}: no {key!r} button"
    return found[0]


def assert_numbered(tree: ax.Tree) -> None:
    """A full tree: indices 0..n-1 in text order (depth first)."""
    assert [e.index for e in tree.elements] == list(range(len(tree.elements)))


def shows(tree: ax.Tree, value: str) -> bool:
    for element in tree.elements:
        if element.role.startswith("text"):
            text = element.attributes.get("Value") or element.label
            if "".join(ch for ch in text if ch.isalnum()) == value:
                return True
    return False


def test_tool_surface_matches_sky(child: McpChild) -> None:
    tools = child.tools()
    assert [t["name"] for t in tools] == list(surface.TOOL_ORDER)
    assert doctor.schema_differences(tools) == []
    assert child.server_info["name"]


def test_list_apps_names_calculator(child: McpChild) -> None:
    result = child.call("list_apps")
    assert not result.is_error and "Calculator" in result.text


def test_observation_is_a_full_tree_with_a_screenshot(child: McpChild, backend: Backend) -> None:
    result, tree = observe(child, backend)
    assert_numbered(tree)
    assert tree.app and tree.elements[0].depth == 0
    assert len(result.images) == 1
    mime, data = result.images[0]
    magic = {"image/png": b"\x89PNG\r\n\x1a\n", "image/jpeg": b"\xff\xd8\xff"}
    assert mime in magic and data.startswith(magic[mime]) and len(data) > 1000


def test_six_plus_seven_by_index_shows_13(child: McpChild, backend: Backend) -> None:
    """Every click is by index from the newest observation; each is numbered afresh."""
    _, tree = observe(child, backend)
    for key in KEYS:
        done = child.call(
            "click", app="Calculator", element_index=str(key_index(tree, backend, key))
        )
        assert not done.is_error, done.text
        if done.text.lstrip().startswith(("Computer Use state", "<app_state>", "App=")):
            assert_numbered(ax.parse(done.text))
        _, tree = observe(child, backend)
        assert_numbered(tree)
    for _ in range(25):  # the app may draw the result a moment after the click is delivered
        if shows(tree, "13"):
            break
        time.sleep(0.2)
        _, tree = observe(child, backend)
    assert shows(tree, "13"), tree.text


def test_indexes_out_of_range_or_malformed(child: McpChild, backend: Backend) -> None:
    _, tree = observe(child, backend)
    stale = child.call("click", app="Calculator", element_index=str(len(tree.elements) + 500))
    assert stale.is_error and stale.text == texts.STALE_ELEMENT
    for bad in ("abc", "-1"):
        result = child.call("click", app="Calculator", element_index=bad)
        assert result.is_error and result.text == texts.invalid_element_id(bad)


def test_set_value_on_a_button_is_not_settable(child: McpChild, backend: Backend) -> None:
    _, tree = observe(child, backend)
    index = str(key_index(tree, backend, "6"))
    result = child.call("set_value", app="Calculator", element_index=index, value="x")
    assert result.is_error and result.text == texts.NOT_SETTABLE


def test_unknown_secondary_action(child: McpChild, backend: Backend) -> None:
    _, tree = observe(child, backend)
    index = str(key_index(tree, backend, "6"))
    result = child.call(
        "perform_secondary_action", app="Calculator", element_index=index, action="Bogus"
    )
    assert result.is_error and result.text == texts.bad_secondary_action("Bogus", index)


def test_scroll_direction_is_checked(child: McpChild, backend: Backend) -> None:
    observe(child, backend)
    result = child.call(
        "scroll", app="Calculator", element_index="0", direction="sideways", pages=1
    )
    assert result.is_error and result.text == texts.invalid_scroll_direction("sideways")


def test_unknown_app_missing_argument_and_action_before_observing(child: McpChild) -> None:
    result = child.call("get_app_state", app="NoSuchApp")
    assert result.is_error and result.text == texts.app_not_found("NoSuchApp")
    missing = child.call("click", element_index="1")
    assert missing.is_error and missing.text == texts.missing_argument("app")
    early = child.call("click", app="Calculator", element_index="1")
    assert early.is_error and early.text == texts.not_active("Calculator")


#: Sky's flags (sky-protocol.md, 6.1).
SKY_FLAGS = frozenset(
    {"disabled", "settable", "string", "float", "integer", "selected", "selectable"}
    | {"expanded", "collapsed"}
)
#: Role words seen in Sky captures (sky-protocol.md, 6.1), the empty role among them.
SKY_ROLES = frozenset(
    {
        "",
        "standard window",
        "split group",
        "container",
        "scroll area",
        "text",
        "button",
        "toolbar",
        "close button",
        "zoom button",
        "minimize button",
        "full screen button",
        "menu bar",
        "grid",
        "list",
        "image",
        "radio button",
        "text field",
        "search field",
        "text entry area",
        "link",
        "heading",
        "content list",
        "HTML content",
        "row",
        "outline",
        "cell",
        "collection",
        "section",
        "slider",
        "scroll bar",
        "value indicator",
        "increment arrow button",
        "splitter",
        "pop up button",
        "disclosure triangle",
        "switch",
        "unknown",
        "Event",
    }
)
_CHECKABLE = ("checkbox", "radio button", "switch")


def test_flags_roles_and_ticks_keep_to_the_vocabulary(child: McpChild, backend: Backend) -> None:
    """Every flag is one of Sky's; every role is Sky's or one the Linux backend prints; a
    check box, radio button or switch says 1 or 0."""
    _, tree = observe(child, backend)
    allowed = SKY_ROLES | atspi_roles.ALL_WORDS
    for element in tree.elements:
        assert set(element.states) <= SKY_FLAGS, element.raw
        assert element.role in allowed, element.raw
        if element.role in _CHECKABLE and "Value" in element.attributes:
            assert element.attributes["Value"] in ("0", "1"), element.raw


def test_window_line_names_the_first_root(child: McpChild, backend: Backend) -> None:
    """The Window: title is the first root's; every other element at depth 0 starts another
    root (a further window, a dialog, the menu bar) and the numbering runs on through it."""
    _, tree = observe(child, backend)
    first = tree.elements[0]
    assert first.depth == 0 and tree.window
    assert first.label.split(",")[0].strip() == tree.window
    roots = [e.index for e in tree.elements if e.depth == 0]
    assert roots[0] == 0
    for at in roots[1:]:
        assert tree.elements[at - 1].index == at - 1  # contiguous across roots
