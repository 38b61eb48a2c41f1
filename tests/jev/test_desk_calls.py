"""A Jev step's backend call is the one a native action request of the same kind makes: both
are built by :mod:`deskhand_d.backends.mcpclient.toolcalls` (Jev's desk has no builder of its own)."""

from __future__ import annotations

import pytest

from deskhand_d import errors as E
from deskhand_d.backends.mcpclient.toolcalls import for_request
from deskhand_d.jev.desk import tool_for
from deskhand_d.jev.types import Prepared
from deskhand_d.protocol import Action, Click, PressKey, Scroll, SetValue, TypeText

_AT = {"id": 1, "app": "TextEdit", "state_id": "s"}


@pytest.mark.parametrize(
    ("prepared", "request_"),
    [
        (Prepared(kind="click_element", index=3), Click(**_AT, element_index=3)),
        (
            Prepared(kind="set_value", index=3, text="7"),
            SetValue(**_AT, element_index=3, value="7"),
        ),
        (Prepared(kind="type_text", text="hi"), TypeText(**_AT, text="hi")),
        (Prepared(kind="press_key", key="Return"), PressKey(**_AT, key="Return")),
        (
            Prepared(kind="scroll", index=3, direction="down"),
            Scroll(**_AT, element_index=3, direction="down", pages=1),
        ),
    ],
)
def test_a_step_calls_what_the_native_request_calls(prepared: Prepared, request_: Action) -> None:
    assert tool_for(prepared) == for_request(request_)


def test_coordinates_never_reach_the_backend_from_a_run() -> None:
    with pytest.raises(E.HandoffRequired) as caught:
        tool_for(Prepared(kind="click_at", at=(1.0, 2.0)))
    assert caught.value.delivery == "refused"
