"""``deskhandctl mcp`` states one delivery per tool result too, and it is the daemon's value.

A real daemon on the simulated desktop, ``python -m deskhandctl mcp`` as a child process, and
a plain stdio MCP host (``dhtest.mcpstdio``) that declines every question. A refusal's text has
exactly one ``Delivery:`` sentence, matching the delivery the result states; a delivery the
daemon did not state is ``unknown``, never ``refused`` by default.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from typing import Any

import pytest
from deskhandctl.facade import tools as mcptools
from dhtest.clidaemon import CliDaemon, sim_desk
from dhtest.mcpsaid import said_code, said_delivery, said_state_id
from dhtest.mcpstdio import McpChild, ToolResult

__all__ = ["sim_desk"]

pytestmark = pytest.mark.slow


@pytest.fixture
def facade(sim_desk: Any) -> Iterator[Any]:
    """``facade(desk)``: the MCP server of ``deskhandctl`` for that daemon, ended afterwards."""
    started: list[McpChild] = []

    def start(desk: CliDaemon) -> McpChild:
        argv = [sys.executable, "-m", "deskhandctl", "--socket", str(desk.daemon.socket), "mcp"]
        started.append(McpChild(argv, desk.env, accept_elicitations=False))
        return started[-1]

    yield start
    for child in started:
        child.close()


def delivery_sentences(result: ToolResult) -> list[str]:
    return [line for line in result.text.splitlines() if line.startswith("Delivery: ")]


def test_a_consent_refusal_says_refused_once(sim_desk: Any, facade: Any) -> None:
    """The host declines the consent form: refused in the structured result and in exactly one
    sentence of the text."""
    desk: CliDaemon = sim_desk(grants=())
    host = facade(desk)
    result = host.call("get_app_state", app="Calculator")
    assert result.is_error
    assert said_code(result.raw) == "consent_denied"
    assert said_delivery(result.raw) == "refused"
    assert delivery_sentences(result) == ["Delivery: refused. Nothing was sent to the app."]
    assert desk.received("get_app_state") == 0


def test_a_failed_observation_says_dispatched_once(sim_desk: Any, facade: Any) -> None:
    """Finder has no window: the backend answered, and the text says so once."""
    desk: CliDaemon = sim_desk(
        grants=("Calculator", "Finder"), DESKHAND_ALLOWED_APPS="Calculator,Finder"
    )
    result = facade(desk).call("get_app_state", app="Finder")
    assert result.is_error and said_code(result.raw) == "no_window"
    assert said_delivery(result.raw) == "dispatched"
    assert delivery_sentences(result) == [
        "Delivery: dispatched. The request reached the app's backend, which answered as said above."
    ]


def test_an_action_and_a_stale_state_id(sim_desk: Any, facade: Any) -> None:
    """A click is dispatched (its result says so); the same stateId again is refused, once."""
    desk: CliDaemon = sim_desk()
    host = facade(desk)
    state = said_state_id(host.call("get_app_state", app="Calculator").raw)
    clicked = host.call("click", app="Calculator", state_id=state, element_index=9)
    assert not clicked.is_error and said_delivery(clicked.raw) == "dispatched"
    assert clicked.text.startswith("click on Calculator: done (delivery: dispatched).")
    again = host.call("click", app="Calculator", state_id=state, element_index=9)
    assert again.is_error and said_code(again.raw) == "state_consumed"
    assert said_delivery(again.raw) == "refused"
    assert delivery_sentences(again) == ["Delivery: refused. Nothing was sent to the app."]
    assert desk.received("click") == 1


def test_a_delivery_nobody_stated_is_unknown() -> None:
    """An error without data.delivery (or with a value not in the four) is unknown; only the
    server's own refusals before sending say refused."""
    for data in ({}, {"delivery": "sort of"}):
        shaped = mcptools.shape_error("click", "internal", "broken", data, app="Calculator")
        assert said_delivery(shaped) == "unknown"
        text = shaped["content"][0]["text"]
        assert "Delivery: unknown." in text and "Call get_app_state" in text
    own = mcptools.shape_error("click", "invalid_arguments", "bad", delivery="refused")
    assert said_delivery(own) == "refused"
    assert own["content"][0]["text"].count("Delivery: ") == 1
