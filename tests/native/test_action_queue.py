"""The action queue in memory: one worker runs every job, one at a time, in arrival order."""

from __future__ import annotations

from typing import Any

import pytest
import trio
import trio.testing

from deskhand_d.errors import DeskhandError, OutcomeUnknown
from deskhand_d.native.queue import ActionQueue


async def test_jobs_run_one_at_a_time_in_arrival_order(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """Five callers queue at once: the one worker runs their jobs in the order they came,
    never two at once, and each caller gets its own job's value."""
    queue = ActionQueue()
    log: list[str] = []
    runners: set[trio.lowlevel.Task] = set()
    results: dict[int, Any] = {}

    def job_for(n: int) -> Any:
        async def job() -> int:
            runners.add(trio.lowlevel.current_task())
            log.append(f"start {n}")
            await trio.sleep(1)
            log.append(f"end {n}")
            return n * 10

        return job

    async def caller(n: int) -> None:
        results[n] = await queue.run(job_for(n), owner="o", session_id=f"s{n}", label="click")

    async with trio.open_nursery() as nursery:
        await nursery.start(queue.serve)
        for n in range(5):
            nursery.start_soon(caller, n)
            await trio.testing.wait_all_tasks_blocked()  # n is queued before n + 1 comes
        while len(results) < 5:
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert log == [f"{what} {n}" for n in range(5) for what in ("start", "end")]
    assert results == {n: n * 10 for n in range(5)}
    assert len(runners) == 1  # the worker, whoever asked
    assert queue.completed == 5 and queue.depth == 0 and queue.current is None


async def test_stop_cancels_the_running_job_and_skips_the_queued_one(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """The emergency stop: the job in flight ends outcome-unknown, the queued one is refused
    without ever running."""
    queue = ActionQueue()
    started = trio.Event()
    ran: list[str] = []
    errors: dict[str, DeskhandError] = {}

    async def first() -> None:
        ran.append("first")
        started.set()
        await trio.sleep_forever()

    async def second() -> None:
        ran.append("second")

    async def caller(name: str, fn: Any) -> None:
        with pytest.raises(DeskhandError) as info:
            await queue.run(fn, owner="o", session_id="s", label=name)
        errors[name] = info.value

    async with trio.open_nursery() as nursery:
        await nursery.start(queue.serve)
        nursery.start_soon(caller, "first", first)
        await started.wait()
        nursery.start_soon(caller, "second", second)
        await trio.testing.wait_all_tasks_blocked()
        assert queue.depth == 1
        assert queue.stop_all("the person") == 2
        while len(errors) < 2:
            await trio.sleep(1)
        nursery.cancel_scope.cancel()
    assert ran == ["first"]
    assert isinstance(errors["first"], OutcomeUnknown) and errors["first"].delivery == "unknown"
    assert "the person" in errors["first"].message
    assert errors["second"].code == "cancelled" and errors["second"].delivery == "refused"


async def test_a_cancelled_queued_job_gives_its_room_back_at_once(
    autojump_clock: trio.testing.MockClock,
) -> None:
    """A caller that gives up while its job waits frees the queue's room then, not when the
    worker reaches the job; the job never runs, and the next caller fits."""
    queue = ActionQueue(max_depth=1)
    release = trio.Event()
    ran: list[str] = []

    async def hold() -> None:
        ran.append("hold")
        await release.wait()

    async def never() -> None:
        ran.append("never")

    waiting = trio.CancelScope()

    async def give_up_later() -> None:
        with waiting:
            await queue.run(never, owner="o", session_id="b", label="x")

    async with trio.open_nursery() as nursery:
        await nursery.start(queue.serve)
        nursery.start_soon(lambda: queue.run(hold, owner="o", session_id="a", label="hold"))
        await trio.testing.wait_all_tasks_blocked()
        nursery.start_soon(give_up_later)
        await trio.testing.wait_all_tasks_blocked()
        assert queue.depth == 1
        with pytest.raises(DeskhandError) as full:
            queue.check_room()
        assert full.value.code == "queue_full"
        waiting.cancel()  # the caller gives up
        await trio.testing.wait_all_tasks_blocked()
        assert queue.depth == 0  # at once, while "hold" still runs
        queue.check_room()  # room again
        release.set()
        await trio.testing.wait_all_tasks_blocked()
        nursery.cancel_scope.cancel()
    assert ran == ["hold"]
