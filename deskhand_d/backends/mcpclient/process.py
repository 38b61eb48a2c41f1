"""One live backend process: its session, the call in flight, and who reads its output.

Theory of operation. Reading the backend's stdout is a *role*, not a task. While a call waits
for its answer, the calling task reads the pipe itself (:meth:`Process.next_event`); handing
each reply over from a reader task would cost a full extra pass through trio's scheduler on
every call. When no call is reading (between calls, or while the person decides an approval)
:meth:`Process.watch_idle` reads instead, so pings and further approval requests are answered
at once and a crash is noticed. ``read_lock`` makes the role exclusive; claiming it cancels the
watcher's wait for readability, which trio unregisters synchronously.

Routing: responses go to the call in flight (by id), ``ping`` is answered ``{}``,
``elicitation/create`` goes through the call's approval state and, if the person must decide,
to the calling task; any other server request gets -32601. Anything that is not JSON-RPC, an
oversized line or EOF marks the process dead and wakes the call with :class:`Died`, with one
exception: until the reply to ``initialize``, lines that are not JSON-RPC messages at all are
skipped within bounds (:mod:`deskhand_d.backends.mcpclient.prelude`).
"""

from __future__ import annotations

import collections
from dataclasses import dataclass, field
from typing import Any, Final

import structlog
import trio

from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient.fastlock import FastLock
from deskhand_d.backends.mcpclient.info import ApprovalCallback, LaunchSpec, ServerInfo
from deskhand_d.backends.mcpclient.prelude import Prelude
from deskhand_d.backends.mcpclient.session import (
    METHOD_NOT_FOUND,
    ErrorResponse,
    Invalid,
    McpSession,
    Notification,
    Response,
    ServerRequest,
    Stray,
)
from deskhand_d.backends.mcpclient.transport import Eof, ProcessTransport

log = structlog.get_logger("deskhand.backend")

IDLE_ARM_DELAY_S: Final = 0.02


@dataclass(frozen=True, slots=True)
class Died:
    cause: str  # crash | pipe_error | protocol_error
    detail: str


CallEvent = Response | ErrorResponse | ServerRequest | Died


class Mailbox:
    """Events routed to one call. Whoever reads the backend puts; the call pops."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: collections.deque[CallEvent] = collections.deque()

    def put(self, item: CallEvent) -> None:
        self._items.append(item)

    def pop(self) -> CallEvent | None:
        return self._items.popleft() if self._items else None

    def __bool__(self) -> bool:
        return bool(self._items)


@dataclass(slots=True)
class PendingCall:
    rid: int
    mailbox: Mailbox = field(default_factory=Mailbox)
    approvals: ap.CallApprovals = field(default_factory=ap.CallApprovals)
    decide_scope: trio.CancelScope | None = None
    result_during_approval: bool = False


class Process:
    """One live backend process and the session on its pipes.

    Reading the backend's output is a role, not a task. While a call waits for its answer the
    calling task reads the pipe itself (handing a message over from a reader task would cost a
    full extra pass of the scheduler on every call). When no call is reading (between calls,
    or while the person decides an approval) an idle watcher reads instead, so pings and
    further approval requests are answered at once and a crash is noticed. ``read_lock``
    makes the role exclusive; claiming it cancels the watcher's wait, which trio unregisters
    synchronously.
    """

    def __init__(self, transport: ProcessTransport, spec: LaunchSpec | None = None) -> None:
        self.transport = transport
        self.spec = spec  # how it was started (Sky: its turn is ended the same way)
        self.session = McpSession()
        self.prelude = Prelude()
        self.info: ServerInfo | None = None
        self.current: PendingCall | None = None  # the call in flight, if any
        self.dead: Died | None = None
        self.scope = trio.CancelScope()
        self.read_lock = FastLock()
        self.idle_ok = trio.Event()  # set while no call wants to be the reader
        self.idle_ok.set()
        self.idle_scope: trio.CancelScope | None = None

    def claim_reader(self) -> None:
        if self.idle_ok.is_set():
            self.idle_ok = trio.Event()
        if self.idle_scope is not None:
            self.idle_scope.cancel()

    def release_reader(self) -> None:
        self.idle_ok.set()

    async def send(self, data: bytes) -> None:
        await self.transport.send(data)

    async def send_or_fail(self, data: bytes) -> None:
        try:
            await self.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.mark_dead(Died("pipe_error", "writing to the backend failed"))

    async def watch_idle(self) -> None:
        """Read the backend whenever no call is the reader (see the class docstring)."""
        while self.dead is None:
            await self.idle_ok.wait()
            # A short grace before arming: back-to-back calls then never wake us, and
            # claiming the role costs them nothing (no cancellation, no fd re-registration).
            await trio.sleep(IDLE_ARM_DELAY_S)
            if self.dead is not None:
                return  # stopping: the pipes are being closed, there is nothing to watch
            with trio.CancelScope() as scope:
                self.idle_scope = scope
                # A call may hold the role now; checking here, with no checkpoint before the
                # wait registers, leaves no gap for it to start reading meanwhile.
                if self.idle_ok.is_set():
                    try:
                        await trio.lowlevel.wait_readable(self.transport.stdout_fd)
                    except trio.ClosedResourceError:
                        return  # closed by a stop while we waited
                    async with self.read_lock.hold():
                        if self.idle_ok.is_set():
                            await self.read_once()
            self.idle_scope = None

    async def next_event(self, call: PendingCall) -> CallEvent:
        """The call's next event, reading the backend in this task until one is routed."""
        while True:
            event = call.mailbox.pop()
            if event is not None:
                return event
            if self.dead is not None:
                return self.dead
            lock = self.read_lock
            if not lock.try_acquire():  # the idle watcher is mid-read: let it finish routing
                await lock.acquire()
                lock.release()
                continue
            try:
                await self.read_once()
            finally:
                lock.release()

    async def read_once(self) -> None:
        """Read one chunk and route every complete line in it."""
        item = await self.transport.read_chunk()  # cancellable: consumes nothing if cancelled
        if isinstance(item, Eof):
            cause = "protocol_error" if "longer than" in item.reason else "crash"
            self.mark_dead(Died(cause, item.reason))
            return
        for line in item:
            event = self.session.receive(line)
            if self.prelude.open:
                if isinstance(event, Invalid) and event.noise:
                    self._skip(line)
                    if self.dead is not None:
                        return
                    continue
                if isinstance(event, Response | ErrorResponse) and event.method == "initialize":
                    self.prelude.open = False
            if isinstance(event, ServerRequest):
                with trio.CancelScope(shield=True):  # never abandon a reply half written
                    await self.on_server_request(event)
            else:
                self.route(event)
            if self.dead is not None:
                return

    def _skip(self, line: bytes) -> None:
        """A line before the handshake's reply that is not JSON-RPC (see the module notes)."""
        failure = self.prelude.skip(line)
        if failure:
            self.mark_dead(Died("protocol_error", failure))
            return
        # The text may hold anything, like stderr: debug only.
        log.info("backend.stdout_skipped", bytes=len(line), skipped=self.prelude.count)
        log.debug("backend.stdout_line", line=line[:2000].decode("utf-8", "replace"))

    def route(self, event: Response | ErrorResponse | Notification | Stray | Invalid) -> None:
        if isinstance(event, Invalid):
            log.warning("backend.protocol_error", reason=event.reason)
            self.mark_dead(Died("protocol_error", event.reason))
        elif isinstance(event, Response | ErrorResponse):
            call = self.current
            if call is not None and call.rid == event.id:
                if call.approvals.asking:
                    call.result_during_approval = True
                    if call.decide_scope is not None:
                        call.decide_scope.cancel()
                call.mailbox.put(event)
            else:
                log.debug("backend.response_ignored", id=event.id)
        elif isinstance(event, Notification):
            log.debug("backend.notification", method=event.method)
        else:
            log.debug("backend.stray_response", has_error=event.error is not None)

    async def on_server_request(self, req: ServerRequest) -> None:
        if req.method == "ping":
            await self.answer(req, {})
        elif req.method == "elicitation/create":
            call = self.current
            if call is None:
                log.info("backend.approval", reason=ap.Reason.HANDLER_UNAVAILABLE, call=False)
                await self.answer(req, ap.reply_for("cancel"))
                return
            verdict = call.approvals.prefilter(ap.classify(req.params))
            if verdict is not None:
                log.info("backend.approval", answer=verdict, reason=call.approvals.reasons[-1])
                await self.answer(req, ap.reply_for(verdict))
                return
            call.mailbox.put(req)  # the calling task asks the person
        else:
            log.info("backend.unknown_request", method=req.method[:100])
            try:
                await self.send(
                    self.session.error(req.id, METHOD_NOT_FOUND, f"Method not found: {req.method}")
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self.mark_dead(Died("pipe_error", "writing to the backend failed"))

    async def answer(self, req: ServerRequest, result: dict[str, Any]) -> None:
        try:
            await self.send(self.session.result(req.id, result))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self.mark_dead(Died("pipe_error", "writing to the backend failed"))

    def mark_dead(self, died: Died) -> None:
        if self.dead is None:
            self.dead = died
            log.warning("backend.died", cause=died.cause, detail=died.detail)
        if self.current is not None:
            self.current.mailbox.put(died)

    async def decide(
        self,
        call: PendingCall,
        req: ServerRequest,
        on_approval: ApprovalCallback | None,
    ) -> ap.Answer:
        """Ask the person (the deadline is paused: we are not waiting for the backend)."""
        request = ap.classify(req.params)
        assert isinstance(request, ap.Confirmation)
        if call.result_during_approval:
            # The backend already answered the call (in the same read as this request).
            answer = call.approvals.settle("cancel", ap.Reason.INCOMPLETE_REQUEST)
        elif on_approval is None:
            answer = call.approvals.settle("cancel", ap.Reason.HANDLER_UNAVAILABLE)
        else:
            call.decide_scope = trio.CancelScope()
            self.release_reader()  # the idle watcher answers pings meanwhile
            try:
                with call.decide_scope:
                    decision = await on_approval(request)
            except trio.Cancelled:
                # The caller gave up while the person was deciding: never accept for them.
                call.approvals.settle("cancel", ap.Reason.CALLER_CANCELLED)
                with trio.CancelScope(shield=True):
                    await self.answer(req, ap.reply_for("cancel"))
                raise
            except ap.NoAnswer as exc:  # nobody could answer, or nobody did in time
                answer = call.approvals.settle("cancel", exc.reason)
            except Exception:
                log.exception("backend.approval_handler_failed")
                answer = call.approvals.settle("cancel", ap.Reason.HANDLER_ERROR)
            else:
                if call.decide_scope.cancelled_caught:
                    # The backend answered the call before the person did.
                    answer = call.approvals.settle("cancel", ap.Reason.INCOMPLETE_REQUEST)
                elif decision == "accept":
                    answer = call.approvals.settle("accept", ap.Reason.USER_ACCEPTED)
                else:
                    answer = call.approvals.settle("decline", ap.Reason.USER_DECLINED)
            finally:
                call.decide_scope = None
                self.claim_reader()
        log.info("backend.approval", answer=answer, reason=call.approvals.reasons[-1])
        return answer
