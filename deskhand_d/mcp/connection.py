"""The daemon's one connection to its computer-use backend (MCP over stdio).

Theory of operation.

* **Lazy life.** Nothing runs until the first call or handshake. Then the backend is spawned,
  ``initialize`` (protocol 2025-06-18, ``elicitation`` declared) and ``notifications/initialized``
  are exchanged and ``tools/list`` is cached for the life of that process. Each phase has its
  own deadline and a timeout names the phase.
* **One dispatcher task** per process reads lines and routes them: responses to the waiting
  call, ``elicitation/create`` to the call in flight, ``ping`` answered with ``{}``, any other
  server request refused with -32601 (never silence).
* **Calls.** One at a time (a lock). Arguments are fitted to the advertised schema before
  anything is sent. The call's deadline runs only while we wait for the backend; it is paused
  while the person decides an approval, and the caller's cancellation stays live throughout.
* **Approvals** go to the ``on_approval`` callback supplied with the call. The person's accept
  is the only way to send ``accept``; everything else sends ``decline`` (the person declined)
  or ``cancel`` (nobody could answer, the handler failed, the request was unsupported,
  concurrent or incomplete, or the caller gave up). See :mod:`deskhand_d.mcp.approvals`.
* **Unknown outcomes.** If a call is in flight when the deadline passes, the process dies, a
  pipe breaks or garbage arrives, the call ends in :class:`OutcomeUnknown` and the process is
  shut down. Nothing is retried or replayed; the next request starts a fresh process.
"""

from __future__ import annotations

import collections
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any, Final, Literal

import msgspec
import structlog
import trio

from deskhand_d import __version__
from deskhand_d.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    BadRequest,
    OutcomeUnknown,
)
from deskhand_d.mcp import approvals as ap
from deskhand_d.mcp.arguments import ArgumentsRefused, negotiate
from deskhand_d.mcp.fastlock import FastLock
from deskhand_d.mcp.results import Kind, ToolOutput, classify
from deskhand_d.mcp.session import (
    METHOD_NOT_FOUND,
    ErrorResponse,
    Invalid,
    McpSession,
    Notification,
    Response,
    ServerRequest,
    Stray,
)
from deskhand_d.mcp.transport import Eof, ProcessTransport, open_process

log = structlog.get_logger("deskhand.backend")

PROTOCOL_VERSION: Final = "2025-06-18"
IDLE_ARM_DELAY_S: Final = 0.02
CLIENT_INFO: Final = {"name": "deskhand", "version": __version__}

ApprovalCallback = Callable[[ap.Confirmation], Awaitable[Literal["accept", "decline"]]]


@dataclass(frozen=True, slots=True)
class LaunchSpec:
    """How to start a backend process."""

    kind: str  # sky | sim | command | atspi
    argv: tuple[str, ...]
    env: dict[str, str]
    cwd: str | None = None
    notice: str = ""  # shown once when the backend starts (e.g. why auto picked sim)


@dataclass(frozen=True, slots=True)
class ServerInfo:
    protocol_version: str
    name: str
    version: str
    capabilities: dict[str, Any]
    tools: tuple[dict[str, Any], ...]
    pid: int

    def tool(self, name: str) -> dict[str, Any] | None:
        for t in self.tools:
            if t.get("name") == name:
                return t
        return None


class CallResult(msgspec.Struct, frozen=True, kw_only=True):
    """A finished ``tools/call``: what came back and how its approvals were decided.

    A msgspec Struct rather than a frozen dataclass: built on every call, and much cheaper.
    """

    output: ToolOutput
    approval_reason: str | None
    approvals_asked: int
    usable: bool  # False if the result came while an approval was still pending
    elapsed_s: float


@dataclass(frozen=True, slots=True)
class _Died:
    cause: str  # crash | pipe_error | protocol_error
    detail: str


_CallEvent = Response | ErrorResponse | ServerRequest | _Died


class _Mailbox:
    """Events routed to one call. Whoever reads the backend puts; the call pops."""

    __slots__ = ("_items",)

    def __init__(self) -> None:
        self._items: collections.deque[_CallEvent] = collections.deque()

    def put(self, item: _CallEvent) -> None:
        self._items.append(item)

    def pop(self) -> _CallEvent | None:
        return self._items.popleft() if self._items else None

    def __bool__(self) -> bool:
        return bool(self._items)


@dataclass(slots=True)
class _Call:
    rid: int
    mailbox: _Mailbox = field(default_factory=_Mailbox)
    approvals: ap.CallApprovals = field(default_factory=ap.CallApprovals)
    decide_scope: trio.CancelScope | None = None
    result_during_approval: bool = False


class _Process:
    """One live backend process and the session on its pipes.

    Reading the backend's output is a role, not a task. While a call waits for its answer the
    calling task reads the pipe itself (handing a message over from a reader task would cost a
    full extra pass of the scheduler on every call). When no call is reading (between calls,
    or while the person decides an approval) an idle watcher reads instead, so pings and
    further approval requests are answered at once and a crash is noticed. ``read_lock``
    makes the role exclusive; claiming it cancels the watcher's wait, which trio unregisters
    synchronously.
    """

    def __init__(self, transport: ProcessTransport) -> None:
        self.transport = transport
        self.session = McpSession()
        self.info: ServerInfo | None = None
        self.current: _Call | None = None  # the call in flight, if any
        self.dead: _Died | None = None
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


class BackendConnection:
    """Owns at most one backend process at a time. Create with :func:`open_backend`."""

    def __init__(
        self,
        nursery: trio.Nursery,
        launch: LaunchSpec | Callable[[], LaunchSpec],
        *,
        call_timeout_s: float = 30.0,
        start_timeout_s: float = 15.0,
    ) -> None:
        self._nursery = nursery
        self._launch = launch
        self.launch: LaunchSpec | None = launch if isinstance(launch, LaunchSpec) else None
        self.call_timeout_s = call_timeout_s
        self.start_timeout_s = start_timeout_s
        self._proc: _Process | None = None
        self._start_lock = trio.Lock()
        self._call_lock = FastLock()
        self.processes_started = 0
        # Diagnostics for `doctor`: what the last process said on stderr and how it ended, and
        # the text of the last error result. Kept in memory only, never logged above debug.
        self.last_stderr: list[str] = []
        self.last_returncode: int | None = None
        self.last_error_text = ""

    # ----- life cycle -----------------------------------------------------------------------

    async def handshake(self) -> ServerInfo:
        """Start the backend if needed and return what it said about itself."""
        proc = await self._ensure_started()
        assert proc.info is not None
        return proc.info

    async def _ensure_started(self) -> _Process:
        proc = self._proc
        if proc is not None and proc.dead is None:
            return proc  # the common case: no lock, no extra scheduling round
        async with self._start_lock:
            if self._proc is not None and self._proc.dead is None:
                return self._proc
            if self._proc is not None:
                await self._shutdown(self._proc)
            proc = await self._start()
            self._proc = proc
            return proc

    def resolve_launch(self) -> LaunchSpec:
        """The launch spec, resolving it now if it was given lazily (may raise)."""
        if self.launch is None:
            assert not isinstance(self._launch, LaunchSpec)
            self.launch = self._launch()
        return self.launch

    async def _start(self) -> _Process:
        spec = self.resolve_launch()
        try:
            with trio.fail_after(self.start_timeout_s):
                transport = await open_process(spec.argv, env=spec.env, cwd=spec.cwd)
        except trio.TooSlowError:
            raise BackendTimeout(
                "starting the backend took too long", data={"phase": "start"}
            ) from None
        except OSError as exc:
            raise BackendUnavailable(
                f"cannot start the {spec.kind} backend ({spec.argv[0]}): {exc.strerror or exc}; "
                "run `deskhandctl doctor` for details",
                data={"backend": spec.kind},
            ) from None
        self.processes_started += 1
        proc = _Process(transport)
        if spec.notice:
            log.info("backend.notice", backend=spec.kind, notice=spec.notice)
        log.info("backend.started", backend=spec.kind, pid=transport.pid)
        await self._nursery.start(self._run_process, proc)
        try:
            proc.info = await self._initialize(proc)
        except BaseException:
            await self._shutdown(proc)
            raise
        return proc

    async def _initialize(self, proc: _Process) -> ServerInfo:
        init = await self._request(
            proc,
            "initialize",
            {
                "protocolVersion": PROTOCOL_VERSION,
                "capabilities": {"elicitation": {}},
                "clientInfo": CLIENT_INFO,
            },
            phase="initialize",
        )
        await self._send_or_fail(proc, proc.session.notification("notifications/initialized"))
        listed = await self._request(proc, "tools/list", {}, phase="tools_list")
        tools = listed.get("tools") if isinstance(listed, dict) else None
        server = init.get("serverInfo") if isinstance(init, dict) else None
        server = server if isinstance(server, dict) else {}
        return ServerInfo(
            protocol_version=str(init.get("protocolVersion", "")) if isinstance(init, dict) else "",
            name=str(server.get("name", "")),
            version=str(server.get("version", "")),
            capabilities=init.get("capabilities", {}) if isinstance(init, dict) else {},
            tools=tuple(t for t in tools if isinstance(t, dict)) if isinstance(tools, list) else (),
            pid=proc.transport.pid,
        )

    async def _request(
        self, proc: _Process, method: str, params: dict[str, Any], *, phase: str
    ) -> Any:
        rid, data = proc.session.request(method, params)
        call = _Call(rid)
        proc.current = call
        proc.claim_reader()
        try:
            await self._send_or_fail(proc, data)
            with trio.move_on_after(self.start_timeout_s) as scope:
                while True:
                    event = await self._next_event(proc, call)
                    if isinstance(event, ServerRequest):
                        # Nothing to approve before any tool call: refuse without asking.
                        await self._answer(proc, event, ap.reply_for("cancel"))
                        continue
                    break
            if scope.cancelled_caught:
                raise BackendTimeout(
                    f"the backend did not answer {method} in time", data={"phase": phase}
                )
        finally:
            proc.current = None
            proc.release_reader()
        if isinstance(event, _Died):
            raise BackendUnavailable(
                f"the backend stopped during {method}: {event.detail}; "
                "run `deskhandctl doctor` to check it",
                data={"phase": phase, "cause": event.cause},
            )
        if isinstance(event, ErrorResponse):
            raise BackendUnavailable(
                f"the backend refused {method}: {event.message}",
                data={"phase": phase, "rpc_code": event.code},
            )
        assert isinstance(event, Response)
        return event.result

    async def _send_or_fail(self, proc: _Process, data: bytes) -> None:
        try:
            await proc.send(data)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._mark_dead(proc, _Died("pipe_error", "writing to the backend failed"))

    async def _run_process(
        self, proc: _Process, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        with proc.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(proc.transport.run_stderr_drain)
                task_status.started()
                await self._watch_idle(proc)
                nursery.cancel_scope.cancel()

    async def _watch_idle(self, proc: _Process) -> None:
        """Read the backend whenever no call is the reader (see :class:`_Process`)."""
        while proc.dead is None:
            await proc.idle_ok.wait()
            # A short grace before arming: back-to-back calls then never wake us, and
            # claiming the role costs them nothing (no cancellation, no fd re-registration).
            await trio.sleep(IDLE_ARM_DELAY_S)
            with trio.CancelScope() as scope:
                proc.idle_scope = scope
                # A call may hold the role now; checking here, with no checkpoint before the
                # wait registers, leaves no gap for it to start reading meanwhile.
                if proc.idle_ok.is_set():
                    await trio.lowlevel.wait_readable(proc.transport.stdout_fd)
                    async with proc.read_lock.hold():
                        if proc.idle_ok.is_set():
                            await self._read_once(proc)
            proc.idle_scope = None

    async def _next_event(self, proc: _Process, call: _Call) -> _CallEvent:
        """The call's next event, reading the backend in this task until one is routed."""
        while True:
            event = call.mailbox.pop()
            if event is not None:
                return event
            if proc.dead is not None:
                return proc.dead
            lock = proc.read_lock
            if not lock.try_acquire():  # the idle watcher is mid-read: let it finish routing
                await lock.acquire()
                lock.release()
                continue
            try:
                await self._read_once(proc)
            finally:
                lock.release()

    async def _read_once(self, proc: _Process) -> None:
        """Read one chunk and route every complete line in it."""
        item = await proc.transport.read_chunk()  # cancellable: consumes nothing if cancelled
        if isinstance(item, Eof):
            cause = "protocol_error" if "longer than" in item.reason else "crash"
            self._mark_dead(proc, _Died(cause, item.reason))
            return
        for line in item:
            event = proc.session.receive(line)
            if isinstance(event, ServerRequest):
                with trio.CancelScope(shield=True):  # never abandon a reply half written
                    await self._on_server_request(proc, event)
            else:
                self._route(proc, event)
            if proc.dead is not None:
                return

    def _route(
        self, proc: _Process, event: Response | ErrorResponse | Notification | Stray | Invalid
    ) -> None:
        if isinstance(event, Invalid):
            log.warning("backend.protocol_error", reason=event.reason)
            self._mark_dead(proc, _Died("protocol_error", event.reason))
        elif isinstance(event, Response | ErrorResponse):
            call = proc.current
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

    async def _on_server_request(self, proc: _Process, req: ServerRequest) -> None:
        if req.method == "ping":
            await self._answer(proc, req, {})
        elif req.method == "elicitation/create":
            call = proc.current
            if call is None:
                log.info("backend.approval", reason=ap.Reason.HANDLER_UNAVAILABLE, call=False)
                await self._answer(proc, req, ap.reply_for("cancel"))
                return
            verdict = call.approvals.prefilter(ap.classify(req.params))
            if verdict is not None:
                log.info("backend.approval", answer=verdict, reason=call.approvals.reasons[-1])
                await self._answer(proc, req, ap.reply_for(verdict))
                return
            call.mailbox.put(req)  # the calling task asks the person
        else:
            log.info("backend.unknown_request", method=req.method[:100])
            try:
                await proc.send(
                    proc.session.error(req.id, METHOD_NOT_FOUND, f"Method not found: {req.method}")
                )
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                self._mark_dead(proc, _Died("pipe_error", "writing to the backend failed"))

    async def _answer(self, proc: _Process, req: ServerRequest, result: dict[str, Any]) -> None:
        try:
            await proc.send(proc.session.result(req.id, result))
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            self._mark_dead(proc, _Died("pipe_error", "writing to the backend failed"))

    def _mark_dead(self, proc: _Process, died: _Died) -> None:
        if proc.dead is None:
            proc.dead = died
            log.warning("backend.died", cause=died.cause, detail=died.detail)
        if proc.current is not None:
            proc.current.mailbox.put(died)

    async def _shutdown(self, proc: _Process) -> None:
        if proc.dead is None:
            proc.dead = _Died("closed", "closed by Deskhand")
        await proc.transport.aclose()
        self.last_stderr = list(proc.transport.stderr_tail)
        self.last_returncode = proc.transport.process.returncode
        proc.scope.cancel()
        if self._proc is proc:
            self._proc = None

    async def aclose(self) -> None:
        """Stop the backend process (if any), following the MCP shutdown order."""
        if self._proc is not None:
            await self._shutdown(self._proc)

    @property
    def running_pid(self) -> int | None:
        proc = self._proc
        if proc is None or proc.dead is not None:
            return None
        return proc.transport.pid

    # ----- calls ----------------------------------------------------------------------------

    async def call_tool(
        self,
        name: str,
        arguments: dict[str, Any],
        *,
        on_approval: ApprovalCallback | None = None,
        timeout_s: float | None = None,
    ) -> CallResult:
        """Run one tool call. See the module docstring for the guarantees."""
        if not self._call_lock.try_acquire():  # calls are serial: nearly always free
            await self._call_lock.acquire()
        try:
            proc = await self._ensure_started()
            assert proc.info is not None
            tool = proc.info.tool(name)
            if tool is None:
                raise BadRequest(
                    f"the backend has no tool named {name}; "
                    "run `deskhandctl doctor` to see its tools"
                )
            schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
            try:
                args = negotiate(name, arguments, schema or {})
            except ArgumentsRefused as exc:
                raise BadRequest(str(exc), data={"tool": name}) from None
            return await self._call(proc, name, args, on_approval, timeout_s or self.call_timeout_s)
        finally:
            self._call_lock.release()

    async def _call(
        self,
        proc: _Process,
        name: str,
        args: dict[str, Any],
        on_approval: ApprovalCallback | None,
        budget: float,
    ) -> CallResult:
        rid, data = proc.session.request("tools/call", {"name": name, "arguments": args})
        call = _Call(rid)
        proc.current = call
        proc.claim_reader()
        started = trio.current_time()
        try:
            await self._send_or_fail(proc, data)
            while True:
                waited_from = trio.current_time()
                # A bare CancelScope: move_on_after's context-manager wrapper costs a
                # measurable share of a fast call.
                with trio.CancelScope(deadline=waited_from + budget) as scope:
                    event = await self._next_event(proc, call)
                budget -= trio.current_time() - waited_from
                if scope.cancelled_caught:
                    await self._abandon(proc, rid, "the call's deadline passed")
                    raise OutcomeUnknown(
                        f"{name} did not finish in time; whether it took effect is unknown, "
                        "so observe the app again before doing anything else",
                        data={"cause": "timeout", "phase": "call", "tool": name},
                    )
                if isinstance(event, ServerRequest):
                    answer = await self._decide(proc, call, event, on_approval)
                    await self._answer(proc, event, ap.reply_for(answer))
                    continue
                break
        except trio.Cancelled:
            with trio.CancelScope(shield=True):
                await self._cancel_remote(proc, rid, "the caller cancelled the request")
            raise
        finally:
            proc.current = None
            proc.release_reader()
        elapsed = trio.current_time() - started
        if isinstance(event, _Died):
            await self._shutdown(proc)
            log.warning("backend.call.unknown", tool=name, cause=event.cause)
            raise OutcomeUnknown(
                f"the backend failed while {name} was running ({event.detail}); whether it took "
                "effect is unknown, so observe the app again before doing anything else",
                data={"cause": event.cause, "phase": "call", "tool": name},
            )
        if isinstance(event, ErrorResponse):
            log.info("backend.call.failed", tool=name, rpc_code=event.code)
            raise BackendError(
                f"the backend refused {name}: {event.message}",
                data={"rpc_code": event.code, "tool": name},
            )
        output = classify(event.result)
        if output.is_error or output.kind is not Kind.OK:
            self.last_error_text = output.text[:2000]
        reason = call.approvals.reason
        # No log line for a successful call: the action layer writes the one canonical line
        # per action (and the audit record); a line here cost a tenth of a fast call.
        return CallResult(
            output=output,
            approval_reason=reason.value if reason else None,
            approvals_asked=call.approvals.asked,
            usable=not call.result_during_approval,
            elapsed_s=elapsed,
        )

    async def _decide(
        self,
        proc: _Process,
        call: _Call,
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
            proc.release_reader()  # the idle watcher answers pings meanwhile
            try:
                with call.decide_scope:
                    decision = await on_approval(request)
            except trio.Cancelled:
                # The caller gave up while the person was deciding: never accept for them.
                call.approvals.settle("cancel", ap.Reason.CALLER_CANCELLED)
                with trio.CancelScope(shield=True):
                    await self._answer(proc, req, ap.reply_for("cancel"))
                raise
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
                proc.claim_reader()
        log.info("backend.approval", answer=answer, reason=call.approvals.reasons[-1])
        return answer

    async def _cancel_remote(self, proc: _Process, rid: int, reason: str) -> None:
        proc.session.forget(rid)
        data = proc.session.notification(
            "notifications/cancelled", {"requestId": rid, "reason": reason}
        )
        with trio.move_on_after(1):
            try:
                await proc.send(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    async def _abandon(self, proc: _Process, rid: int, reason: str) -> None:
        with trio.CancelScope(shield=True):
            await self._cancel_remote(proc, rid, reason)
            await self._shutdown(proc)


@asynccontextmanager
async def open_backend(
    launch: LaunchSpec | Callable[[], LaunchSpec],
    *,
    call_timeout_s: float = 30.0,
    start_timeout_s: float = 15.0,
) -> AsyncIterator[BackendConnection]:
    """A backend connection whose process (if started) is stopped when the block exits."""
    async with trio.open_nursery() as nursery:
        conn = BackendConnection(
            nursery, launch, call_timeout_s=call_timeout_s, start_timeout_s=start_timeout_s
        )
        try:
            yield conn
        finally:
            await conn.aclose()
            nursery.cancel_scope.cancel()
