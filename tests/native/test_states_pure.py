"""StateId rules, decided without any backend traffic."""

from __future__ import annotations

import pytest

from deskhand_d import errors as E
from deskhand_d.backends.mcpclient.toolcalls import check_click_target
from deskhand_d.native.states import (
    STATE_TTL_S,
    StateBook,
    StateRecord,
    Use,
    new_state_id,
)


def _book(**kw: object) -> tuple[StateBook, str]:
    book = StateBook()
    rec = StateRecord(
        state_id=new_state_id(),
        app="Calculator",
        turn=1,
        created=100.0,
        indices=frozenset({0, 1, 2}),
        has_screenshot=True,
        backend_generation=1,
    )
    for k, v in kw.items():
        setattr(rec, k, v)
    return book, book.mint(rec)


def _use(
    book: StateBook,
    sid: str,
    use: Use | None = None,
    *,
    turn: int = 1,
    now: float = 101.0,
    gen: int = 1,
) -> StateRecord:
    return book.consume(sid, use or Use("Calculator"), turn=turn, now=now, generation=gen)


def test_ids_are_128_bit_random() -> None:
    """stateIds are 32 hex digits and do not repeat."""
    ids = {new_state_id() for _ in range(1000)}
    assert len(ids) == 1000 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)


def test_single_use() -> None:
    """The first use works; any second use is state_consumed."""
    book, sid = _book()
    assert _use(book, sid).app == "Calculator"
    with pytest.raises(E.StateConsumed):
        _use(book, sid)


@pytest.mark.parametrize(
    ("use", "kw", "error"),
    [
        (Use("TextEdit"), {}, E.StateWrongApp),
        (Use("Calculator"), {"turn": 2}, E.StateWrongTurn),
        (Use("Calculator"), {"now": 100.0 + STATE_TTL_S + 0.01}, E.StateExpired),
        (Use("Calculator"), {"gen": 2}, E.StateInvalidated),
        (Use("Calculator", element_index=7), {}, E.ElementNotInState),
    ],
)
def test_refusals_burn_the_state(
    use: Use, kw: dict[str, object], error: type[E.StateError]
) -> None:
    """Each refusal has its own code, and the refused attempt still consumes the state."""
    book, sid = _book()
    with pytest.raises(error):
        _use(book, sid, use, **kw)  # type: ignore[arg-type]
    with pytest.raises(E.StateConsumed):
        _use(book, sid)


def test_unknown_and_invalidated() -> None:
    """An id never minted is unknown; one retired by a newer observation is invalidated."""
    book, sid = _book()
    with pytest.raises(E.StateUnknown):
        _use(book, "0" * 32)
    book.mint(
        StateRecord(
            state_id=new_state_id(),
            app="Calculator",
            turn=1,
            created=100.0,
            indices=frozenset(),
            has_screenshot=False,
            backend_generation=1,
        )
    )
    with pytest.raises(E.StateInvalidated):
        _use(book, sid)


def test_coordinates_need_a_screenshot() -> None:
    """Coordinate actions need an observation that had a screenshot (never action-returned)."""
    book, sid = _book(has_screenshot=False, action_returned=True)
    with pytest.raises(E.CoordinatesNeedScreenshot, match="from an action"):
        _use(book, sid, Use("Calculator", coordinates=True))
    book, sid = _book()
    assert _use(book, sid, Use("Calculator", coordinates=True)).has_screenshot


@pytest.mark.parametrize(
    ("index", "x", "y"), [(None, None, None), (3, 1.0, 2.0), (None, 1.0, None)]
)
def test_click_needs_exactly_one_target(
    index: int | None, x: float | None, y: float | None
) -> None:
    """click takes exactly one of element_index or both x and y."""
    with pytest.raises(E.BadRequest):
        check_click_target(index, x, y)
    check_click_target(3, None, None)
    check_click_target(None, 1.0, 2.0)


def test_launch_commands_never_use_a_shell() -> None:
    """launch_app builds an argv: open -a / -b / a path on macOS."""
    from deskhand_d.native.launch import command_for

    assert command_for("Calculator", "darwin") == ["/usr/bin/open", "-a", "Calculator"]
    assert command_for("com.apple.calculator", "darwin") == [
        "/usr/bin/open",
        "-b",
        "com.apple.calculator",
    ]
    assert command_for("/Applications/My App.app", "darwin") == [
        "/usr/bin/open",
        "/Applications/My App.app",
    ]


def test_predecessor_mode_variable_is_accepted() -> None:
    """JEV_CUA_MODE sets the default mode; DESKHAND_MODE wins when both are set."""
    from deskhand_d import config

    assert config.parse("", source="t", env={"JEV_CUA_MODE": "jev"}).native.default_mode == "jev"
    both = {"JEV_CUA_MODE": "jev", "DESKHAND_MODE": "native"}
    assert config.parse("", source="t", env=both).native.default_mode == "native"
    with pytest.raises(config.ConfigError, match="JEV_CUA_MODE"):
        config.parse("", source="t", env={"JEV_CUA_MODE": "auto"})
