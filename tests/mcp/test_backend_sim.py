"""The backend client against the simulated desktop, a real child process: one test per rule."""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Literal

import pytest
import trio
import trio.testing

from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient.connection import BackendConnection, LaunchSpec, open_backend
from deskhand_d.backends.mcpclient.results import Kind
from deskhand_d.errors import BadRequest, OutcomeUnknown

Answer = Literal["accept", "decline"]


class Sim:
    """A simulator launch spec with a scenario and a traffic record in a temp dir."""

    def __init__(self, tmp: Path, scenario: dict[str, Any] | None = None) -> None:
        self.record = tmp / "record.jsonl"
        env = {"PATH": "/usr/bin:/bin", "DESKHAND_SIM_RECORD": str(self.record)}
        if scenario is not None:
            env["DESKHAND_SIM_SCENARIO"] = json.dumps(scenario)
        self.spec = LaunchSpec(
            kind="sim", argv=(sys.executable, "-m", "deskhand_d.programs.sim"), env=env
        )

    def events(self, kind: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        rows = [json.loads(line) for line in self.record.read_text().splitlines() if line.strip()]
        return [r for r in rows if kind is None or r["event"] == kind]

    def calls(self) -> list[dict[str, Any]]:
        return self.events("call_start")


@pytest.fixture
def sim_factory(tmp_path: Path) -> Iterator[Any]:
    n = [0]

    def make(scenario: dict[str, Any] | None = None) -> Sim:
        n[0] += 1
        d = tmp_path / f"s{n[0]}"
        d.mkdir()
        return Sim(d, scenario)

    yield make


def answer(value: Answer, seen: list[str] | None = None):  # type: ignore[no-untyped-def]
    async def handler(req: ap.Confirmation) -> Answer:
        if seen is not None:
            seen.append(req.message)
        return value

    return handler


async def observe(conn: BackendConnection, app: str = "Calculator", **kw: Any):  # type: ignore[no-untyped-def]
    return await conn.call_tool("get_app_state", {"app": app}, **kw)


async def test_string_uuid_elicitation_accepted_then_observation(sim_factory: Any) -> None:
    """Sky-style string-id approval is answered with the same id; the observation follows."""
    sim = sim_factory()
    seen: list[str] = []
    async with open_backend(sim.spec) as conn:
        res = await observe(conn, on_approval=answer("accept", seen))
        again = await observe(conn, on_approval=answer("decline"))  # approved for the process life
    assert (
        res.output.kind is Kind.OK and 'Window: "Calculator", App: Calculator.' in res.output.text
    )
    assert res.output.images and res.approval_reason == "user_accepted"
    assert again.approval_reason is None and again.output.kind is Kind.OK
    assert seen == ["Allow ChatGPT to use Calculator?"]
    (elicit,) = sim.events("elicitation")
    replies = [m for m in sim.events("message") if m["kind"] == "response"]
    assert isinstance(elicit["id"], str) and elicit["id"] == elicit["id"].upper()
    assert [r["id"] for r in replies] == [elicit["id"]]


async def test_decline_is_the_persons_and_reported(sim_factory: Any) -> None:
    """A decline by the person ends in Sky's denial text and reason user_declined."""
    sim = sim_factory()
    async with open_backend(sim.spec) as conn:
        res = await observe(conn, on_approval=answer("decline"))
    assert res.output.kind is Kind.APPROVAL_DECLINED
    assert res.approval_reason == "user_declined"
    assert "com.apple.calculator" in res.output.text


async def test_no_handler_means_cancel_never_accept(sim_factory: Any) -> None:
    """Without anyone to ask, the approval is cancelled; the app stays unapproved."""
    sim = sim_factory()
    async with open_backend(sim.spec) as conn:
        res = await observe(conn)
    assert res.output.kind is Kind.APPROVAL_CANCELLED
    assert res.approval_reason == "handler_unavailable"
    assert [e["answer"] for e in sim.events("elicitation_answer")] == ["cancel"]


@pytest.mark.parametrize("mode", ["form", "url"])
async def test_unsupported_elicitations_are_cancelled_unasked(sim_factory: Any, mode: str) -> None:
    """A non-empty form or URL-mode request never reaches the person; it is cancelled."""
    sim = sim_factory({"elicitation": mode})
    seen: list[str] = []
    async with open_backend(sim.spec) as conn:
        res = await observe(conn, on_approval=answer("accept", seen))
    assert seen == []
    assert res.approval_reason == "unsupported_request"
    assert res.output.kind is not Kind.OK


async def test_sequential_approvals_each_go_to_the_person(sim_factory: Any) -> None:
    """Two approvals in one call are asked separately; both accepted, the call succeeds."""
    sim = sim_factory({"double_approval": True})
    seen: list[str] = []
    async with open_backend(sim.spec) as conn:
        res = await observe(conn, on_approval=answer("accept", seen))
    assert len(seen) == 2 and res.approvals_asked == 2
    assert res.output.kind is Kind.OK and res.approval_reason == "user_accepted"


async def test_cancel_while_person_decides(sim_factory: Any) -> None:
    """Cancelling the caller mid-decision answers cancel, cancels the call, keeps the process."""
    sim = sim_factory()
    deciding = trio.Event()

    async def undecided(req: ap.Confirmation) -> Answer:
        deciding.set()
        await trio.sleep_forever()
        raise AssertionError("unreachable")

    async with open_backend(sim.spec) as conn:
        async with trio.open_nursery() as nursery:
            nursery.start_soon(lambda: observe(conn, on_approval=undecided))
            await deciding.wait()
            nursery.cancel_scope.cancel()
        later = await conn.call_tool("list_apps", {})
        assert later.output.kind is Kind.OK and conn.processes_started == 1
    assert [e["answer"] for e in sim.events("elicitation_answer")] == ["cancel"]
    methods = [m["method"] for m in sim.events("message")]
    assert "notifications/cancelled" in methods


@pytest.fixture
def autojump_clock() -> trio.testing.MockClock:
    # Jump only when everything has been idle for a while in real time, so the child process's
    # real replies arrive before virtual time moves on.
    return trio.testing.MockClock(autojump_threshold=0.25)


async def test_deadline_pauses_while_person_decides(
    sim_factory: Any, autojump_clock: trio.testing.MockClock
) -> None:
    """Ten seconds of deciding under a one-second deadline still succeeds."""
    sim = sim_factory()

    async def ponder(req: ap.Confirmation) -> Answer:
        await trio.sleep(10)
        return "accept"

    async with open_backend(sim.spec, call_timeout_s=1) as conn:
        await conn.handshake()
        t0 = trio.current_time()
        res = await observe(conn, on_approval=ponder)
        assert trio.current_time() - t0 >= 10
    assert res.output.kind is Kind.OK and res.approval_reason == "user_accepted"


async def test_deadline_runs_while_backend_is_slow(
    sim_factory: Any, autojump_clock: trio.testing.MockClock
) -> None:
    """The control: a backend slower than the deadline gives outcome_unknown (cause timeout)."""
    sim = sim_factory({"preapproved": ["Calculator"], "hang": [{"tool": "get_app_state"}]})
    async with open_backend(sim.spec, call_timeout_s=1) as conn:
        with pytest.raises(OutcomeUnknown) as info:
            await observe(conn)
    assert info.value.data["cause"] == "timeout" and info.value.data["phase"] == "call"


async def test_crash_mid_call_is_unknown_and_never_retried(sim_factory: Any) -> None:
    """A crash during click: outcome_unknown, exactly one click reached the backend, then a
    fresh process serves the next request."""
    sim = sim_factory({"preapproved": ["Calculator"], "crash": {"tool": "click"}})
    async with open_backend(sim.spec) as conn:
        await observe(conn)
        with pytest.raises(OutcomeUnknown) as info:
            await conn.call_tool("click", {"app": "Calculator", "element_index": 9})
        assert info.value.data["cause"] == "crash"
        assert conn.processes_started == 1 and conn.running_pid is None
        apps = await conn.call_tool("list_apps", {})
        assert apps.output.kind is Kind.OK and conn.processes_started == 2
    clicks = [c for c in sim.calls() if c["tool"] == "click"]
    assert len(clicks) == 1 and clicks[0]["arguments"]["element_index"] == "9"


async def test_garbage_line_is_a_protocol_error(sim_factory: Any) -> None:
    """Non-JSON output while a call is in flight makes its outcome unknown."""
    sim = sim_factory({"preapproved": ["Calculator"], "garbage": [{"tool": "get_app_state"}]})
    async with open_backend(sim.spec) as conn:
        with pytest.raises(OutcomeUnknown) as info:
            await observe(conn)
    assert info.value.data["cause"] == "protocol_error"


async def test_stop_notice_is_session_stopped_but_quoted_text_is_not(sim_factory: Any) -> None:
    """The standalone stop notice is session_stopped; the same sentence inside a document is content."""
    sim = sim_factory({"preapproved": ["Calculator"], "stop": {"after_calls": 1}})
    async with open_backend(sim.spec) as conn:
        first = await observe(conn)
        second = await observe(conn)
    assert first.output.kind is Kind.OK and second.output.kind is Kind.SESSION_STOPPED
    quoted = sim_factory({"preapproved": ["TextEdit"], "stop_text_in_document": True})
    async with open_backend(quoted.spec) as conn:
        doc = await observe(conn, app="TextEdit")
    assert "explicitly stopped by the user" in doc.output.text and doc.output.kind is Kind.OK


async def test_partial_update_is_rejected(sim_factory: Any) -> None:
    """A diff update (after the first full tree) is not an observation."""
    sim = sim_factory({"preapproved": ["Calculator"], "partial_update": "diff"})
    async with open_backend(sim.spec) as conn:
        full = await observe(conn)
        await conn.call_tool("press_key", {"app": "Calculator", "key": "7"})
        res = await observe(conn)
    assert full.output.kind is Kind.OK
    assert res.output.kind is Kind.PARTIAL_UPDATE, res.output.text[:300]


async def test_unauthenticated_backend(sim_factory: Any) -> None:
    """The -10000 text is recognised (initialize and tools/list still work)."""
    sim = sim_factory({"unauthenticated": True})
    async with open_backend(sim.spec) as conn:
        info = await conn.handshake()
        res = await observe(conn)
    assert len(info.tools) == 10 and res.output.kind is Kind.NOT_AUTHENTICATED


async def test_arguments_fitted_or_refused_before_sending(sim_factory: Any) -> None:
    """element_index goes as a string; an argument Sky does not allow is refused unsent."""
    sim = sim_factory({"preapproved": ["Calculator"]})
    async with open_backend(sim.spec) as conn:
        await observe(conn)
        with pytest.raises(BadRequest, match="index"):
            await conn.call_tool("click", {"app": "Calculator", "index": 9})
        res = await conn.call_tool("click", {"app": "Calculator", "element_index": 9})
    assert res.output.kind is Kind.OK
    assert [c["arguments"] for c in sim.calls() if c["tool"] == "click"] == [
        {"app": "Calculator", "element_index": "9"}
    ]


async def test_calculator_arithmetic_through_the_client(sim_factory: Any) -> None:
    """12 + 30232 = shows 30,244 (real arithmetic, fresh indices after every action)."""
    sim = sim_factory({"preapproved": ["Calculator"]})
    async with open_backend(sim.spec) as conn:
        await observe(conn)
        for key in ("1", "2", "plus", "3", "0", "2", "3", "2", "Return"):
            res = await conn.call_tool("press_key", {"app": "Calculator", "key": key})
            assert res.output.kind is Kind.OK, res.output.text
        final = await observe(conn)
    assert "30,244" in final.output.text


async def test_concurrent_calls_on_one_connection_take_turns(sim_factory: Any) -> None:
    """Callers outside the daemon's queue (tests, benchmarks) may share a connection: calls
    made at once reach the backend one at a time, and each caller gets its own reply."""
    sim = sim_factory({"preapproved": ["Calculator"], "delay_ms": {"press_key": 20}})
    replies: dict[str, str] = {}
    async with open_backend(sim.spec) as conn:
        await observe(conn)

        async def press(key: str) -> None:
            res = await conn.call_tool("press_key", {"app": "Calculator", "key": key})
            assert res.output.kind is Kind.OK, res.output.text
            replies[key] = res.output.text

        with trio.fail_after(20):
            async with trio.open_nursery() as nursery:
                for key in "1234567":
                    nursery.start_soon(press, key)
        final = (await observe(conn)).output.text
    presses = [c for c in sim.calls() if c["tool"] == "press_key"]
    assert len(presses) == 7 and all(c["in_flight"] == 1 for c in presses)
    # Each reply shows the display just after its own key, so the displays the seven callers
    # saw are the seven prefixes of the final one, each ending in that caller's key.
    shown = {key: display(text) for key, text in replies.items()}
    prefixes = {display(final)[:n] for n in range(1, 8)}
    assert set(shown.values()) == prefixes
    assert all(value.endswith(key) for key, value in shown.items())


def display(tree: str) -> str:
    """The Calculator's display in a tree, digits only."""
    (value,) = re.findall(r"^\t*\d+ text \W?([\d,]+)$", tree, re.M)
    return value.replace(",", "")
