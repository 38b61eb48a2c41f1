"""The one mapping from the client protocol's action requests to backend tool calls."""

from __future__ import annotations

import typing

import msgspec
import pytest

from deskhand_d import errors as E
from deskhand_d import surface
from deskhand_d.backends.mcpclient import toolcalls
from deskhand_d.protocol import requests as rq

SAMPLES: list[rq.Action] = [
    rq.Click(id=1, app="A", state_id="s", element_index=4, click_count=2),
    rq.Click(id=1, app="A", state_id="s", x=10.5, y=20, mouse_button="right"),
    rq.Drag(id=1, app="A", state_id="s", from_x=1, from_y=2, to_x=3, to_y=4),
    rq.PerformSecondaryAction(id=1, app="A", state_id="s", element_index=2, action="Raise"),
    rq.PressKey(id=1, app="A", state_id="s", key="ctrl+s"),
    rq.Scroll(id=1, app="A", state_id="s", element_index=7, direction="down", pages=0.5),
    rq.SelectText(id=1, app="A", state_id="s", element_index=3, text="b", prefix="a"),
    rq.SetValue(id=1, app="A", state_id="s", element_index=9, value="x"),
    rq.TypeText(id=1, app="A", state_id="s", text="hello"),
]


def test_every_action_kind_is_sampled() -> None:
    assert {type(s) for s in SAMPLES} == set(typing.get_args(rq.Action))


@pytest.mark.parametrize("req", SAMPLES, ids=lambda r: type(r).__name__)
def test_each_action_calls_a_sky_tool_with_only_its_schema_arguments(req: rq.Action) -> None:
    call = toolcalls.for_request(req)
    schema = surface.input_schema(call.tool)
    sent = set(call.args)
    assert sent <= set(schema["properties"]) - {"app"}
    assert set(schema.get("required", [])) - {"app"} <= sent
    # what the request set reaches the backend unchanged; the stateId never does
    fields = msgspec.structs.asdict(req)
    for name, value in call.args.items():
        assert fields[name] == value
    assert "state_id" not in call.args and "handoff" not in call.args


def test_what_the_state_rules_read() -> None:
    by_index, by_point, drag = (toolcalls.for_request(SAMPLES[i]) for i in (0, 1, 2))
    assert (by_index.element_index, by_index.points) == (4, ())
    assert (by_point.element_index, by_point.points) == (None, ((10.5, 20.0),))
    assert drag.points == ((1.0, 2.0), (3.0, 4.0))
    assert toolcalls.for_request(SAMPLES[4]).element_index is None  # press_key names nothing


def test_unset_options_are_left_to_the_backend() -> None:
    call = toolcalls.for_request(
        rq.Scroll(id=1, app="A", state_id="s", element_index=1, direction="up")
    )
    assert call.args == {"element_index": 1, "direction": "up"}


@pytest.mark.parametrize(
    ("index", "x", "y"), [(None, None, None), (1, 2.0, 3.0), (None, 1.0, None), (1, None, 3.0)]
)
def test_a_click_needs_exactly_one_target(
    index: int | None, x: float | None, y: float | None
) -> None:
    with pytest.raises(E.BadRequest):
        toolcalls.for_request(rq.Click(id=1, app="A", state_id="s", element_index=index, x=x, y=y))
