"""The one action queue: every backend call from every session, one at a time, FIFO.

Theory of operation. :meth:`ActionQueue.run` enqueues a job and waits for its outcome; a
single worker task (:meth:`serve`, started with ``nursery.start``) runs jobs in order, each
inside its own cancel scope; being the only task that runs jobs, it needs no lock to keep them
one at a time. Cancelling the waiting caller (the client cancelled the request or
disconnected) cancels its job: skipped if still queued (and no longer counted, so it takes
no room), cancelled in flight otherwise (the
backend client then answers pending prompts with ``cancel`` and tells the backend). The
emergency stop cancels every job; a job stopped in flight ends :class:`OutcomeUnknown`, a
queued one :class:`RequestCancelled` (``delivery: refused``, it never ran). The queue is
bounded: a full queue refuses at once (``queue_full``) rather than growing without limit.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

import outcome
import trio

from deskhand_d.errors import OutcomeUnknown, QueueFull, RequestCancelled


@dataclass(eq=False)
class Job:
    fn: Callable[[], Awaitable[Any]]
    owner: str  # who is asking: "session <name> (client <name>, pid N)"
    session_id: str
    label: str
    scope: trio.CancelScope = field(default_factory=trio.CancelScope)
    done: trio.Event = field(default_factory=trio.Event)
    result: outcome.Outcome[Any] | None = None
    stopped_by: str = ""


class ActionQueue:
    def __init__(self, max_depth: int = 64) -> None:
        self.max_depth = max_depth
        self._send, self._receive = trio.open_memory_channel[Job](math.inf)
        self._waiting: collections.OrderedDict[int, Job] = collections.OrderedDict()
        self.current: Job | None = None
        self.completed = 0
        self._job_s = 0.05  # running average of a job's time, for retry_after_ms

    @property
    def depth(self) -> int:
        return len(self._waiting)

    def retry_after_ms(self) -> int:
        """About how long until the queue has room: the jobs ahead times a typical job's time
        (a running average), between 50 ms and 5 s."""
        ahead = len(self._waiting) + (self.current is not None)
        return int(min(5000.0, max(50.0, ahead * self._job_s * 1000)))

    def check_room(self) -> None:
        """Refuse now (``queue_full``, with ``retry_after_ms``) when a job would not fit. A
        gate: callers check it before spending anything, such as a single-use stateId."""
        if len(self._waiting) >= self.max_depth:
            wait = self.retry_after_ms()
            raise QueueFull(
                f"the action queue already holds {self.max_depth} requests; try again in "
                f"{wait} ms (nothing was sent)",
                data={"retry_after_ms": wait},
            )

    async def run(
        self, fn: Callable[[], Awaitable[Any]], *, owner: str, session_id: str, label: str
    ) -> Any:
        self.check_room()
        job = Job(fn=fn, owner=owner, session_id=session_id, label=label)
        self._waiting[id(job)] = job
        self._send.send_nowait(job)
        try:
            await job.done.wait()
        except trio.Cancelled:
            self._withdraw(job)
            raise
        assert job.result is not None
        return job.result.unwrap()

    async def _execute(self, job: Job) -> None:
        """Run one job in its scope; a stop or cancel while running makes it unknown."""
        began = trio.current_time()
        try:
            await self._execute_in_scope(job)
        finally:
            self._job_s += (trio.current_time() - began - self._job_s) / 8

    async def _execute_in_scope(self, job: Job) -> None:
        with job.scope:
            try:
                job.result = outcome.Value(await job.fn())
            except Exception as exc:  # trio.Cancelled must reach job.scope
                job.result = outcome.Error(exc)
        if job.scope.cancelled_caught or job.result is None:
            job.result = outcome.Error(
                OutcomeUnknown(
                    f"{job.label} was cancelled while running "
                    f"({job.stopped_by or 'the request was cancelled'}); whether it took "
                    "effect is unknown, so observe again",
                    data={"cause": "cancelled"},
                )
            )

    def _withdraw(self, job: Job) -> None:
        """Cancel a job: one still queued leaves the count at once (it no longer takes room
        or delays a ``retry_after_ms``; the worker skips it when it comes up), one running is
        cancelled in flight."""
        job.scope.cancel()
        self._waiting.pop(id(job), None)

    def cancel_session(self, session_id: str) -> int:
        """Cancel every queued or running job of a session (its client went away)."""
        n = 0
        for job in [*self._waiting.values(), *([self.current] if self.current else [])]:
            if job.session_id == session_id and not job.scope.cancel_called:
                self._withdraw(job)
                n += 1
        return n

    def stop_all(self, by: str) -> int:
        """Emergency stop: cancel everything queued and in flight."""
        n = 0
        for job in [*self._waiting.values(), *([self.current] if self.current else [])]:
            if not job.scope.cancel_called:
                job.stopped_by = by
                self._withdraw(job)
                n += 1
        return n

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        task_status.started()
        async for job in self._receive:
            self._waiting.pop(id(job), None)
            if job.scope.cancel_called:
                job.result = outcome.Error(
                    RequestCancelled(
                        "cancelled before it ran "
                        f"({job.stopped_by or 'the request was cancelled'}); nothing was sent",
                        delivery="refused",
                    )
                )
                job.done.set()
                continue
            self.current = job
            try:
                await self._execute(job)
            finally:
                self.current = None
                self.completed += 1
                job.done.set()
