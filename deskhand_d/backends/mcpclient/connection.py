"""The daemon's one connection to its computer-use backend (MCP over stdio).

Theory of operation.

* **Lazy life.** Nothing runs until the first call or handshake. Then the backend is spawned,
  ``initialize`` (protocol 2025-06-18, ``elicitation`` declared) and ``notifications/initialized``
  are exchanged and ``tools/list`` is cached for the life of that process. Each phase has its
  own deadline and a timeout names the phase.
* **Reading and routing** are :mod:`.process`'s: the waiting call reads the
  pipe itself, an idle watcher reads otherwise; ``ping`` is answered ``{}``, approval requests
  go to the call in flight, any other server request gets -32601 (never silence).
* **Calls.** One at a time: a flag lock (:mod:`.fastlock`) is held for the whole
  call, because a process has one slot for the call in flight (``Process.current``). In the
  daemon every call comes from the action queue's one worker, so it is never contended there;
  it keeps a connection shared by other callers (tests, benchmarks) correct. Arguments are
  fitted to the advertised schema before anything is sent. The call's deadline runs only while
  we wait for the backend; it is paused while the person decides an approval, and the
  caller's cancellation stays live throughout.
* **Approvals** go to the ``on_approval`` callback supplied with the call. The person's accept
  is the only way to send ``accept``; everything else sends ``decline`` (the person declined)
  or ``cancel`` (nobody could answer, the handler failed, the request was unsupported,
  concurrent or incomplete, or the caller gave up). See :mod:`.approvals`.
* **Unknown outcomes.** If a call is in flight when the deadline passes, the process dies, a
  pipe breaks or garbage arrives, the call ends in :class:`OutcomeUnknown` and the process is
  shut down. Nothing is retried or replayed; the next request starts a fresh process.
* **Closing.** Whoever closes a process (the daemon's stop, the emergency stop, a revocation,
  a failure), it is stopped in the MCP order (:meth:`ProcessTransport.aclose`), and how it
  ended is kept for ``doctor``: its status, its last stderr lines, what it printed before the
  handshake, and the signals Deskhand sent it. A start that timed out says that Deskhand
  stopped it, so a SIGKILL of ours is never read as macOS's. Closing a Sky client that
  finished its handshake also ends its turn (:mod:`deskhand_d.backends.mcpclient.turnend`), in the
  background; the next start waits for that.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from typing import Any, Final

import structlog
import trio

from deskhand_d import __version__
from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient import turnend
from deskhand_d.backends.mcpclient.arguments import ArgumentsRefused, negotiate
from deskhand_d.backends.mcpclient.fastlock import FastLock
from deskhand_d.backends.mcpclient.info import (
    ApprovalCallback,
    CallResult,
    LaunchSpec,
    RecipeAttempt,
    ServerInfo,
)
from deskhand_d.backends.mcpclient.process import Died, PendingCall, Process
from deskhand_d.backends.mcpclient.results import Kind, classify
from deskhand_d.backends.mcpclient.session import ErrorResponse, Response, ServerRequest
from deskhand_d.backends.mcpclient.transport import open_process
from deskhand_d.errors import (
    BackendError,
    BackendTimeout,
    BackendUnavailable,
    BadRequest,
    OutcomeUnknown,
)

__all__ = ["ApprovalCallback", "BackendConnection", "CallResult", "LaunchSpec", "ServerInfo"]

log = structlog.get_logger("deskhand.backend")

PROTOCOL_VERSION: Final = "2025-06-18"
CLIENT_INFO: Final = {"name": "deskhand", "version": __version__}


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
        self._proc: Process | None = None
        self._start_lock = trio.Lock()
        self._call_lock = FastLock()
        self.processes_started = 0
        # Diagnostics for `doctor`: what the last process said on stderr and how it ended, and
        # the text of the last error result. Kept in memory only, never logged above debug.
        self.last_stderr: list[str] = []
        self.last_returncode: int | None = None
        self.last_error_text = ""
        # The signals Deskhand sent the last process ("SIGTERM", "SIGKILL"), the start phase
        # that timed out and how long it waited, and what it printed before its handshake
        # that was not JSON-RPC (skipped).
        self.last_signals: tuple[str, ...] = ()
        self.last_timeout: tuple[str, float] | None = None
        self.last_prelude: list[str] = []
        # How the last start went, recipe by recipe (Sky), which spec runs, and whether macOS
        # counts it as its own responsible process.
        self.attempts: list[RecipeAttempt] = []
        self.started_spec: LaunchSpec | None = None
        self.responsibility = ""
        # Sky turn-ended notifications still running; a new start waits for them.
        self.turn_end_timeout_s = turnend.TIMEOUT_S
        self._turn_ends = 0
        self._turn_ends_done = trio.Event()
        self._turn_ends_done.set()

    # ----- life cycle -----------------------------------------------------------------------

    async def handshake(self) -> ServerInfo:
        """Start the backend if needed and return what it said about itself."""
        proc = await self._ensure_started()
        assert proc.info is not None
        return proc.info

    async def _ensure_started(self) -> Process:
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

    async def resolve_launch(self) -> LaunchSpec:
        """The launch spec, resolving it now if it was given lazily (may raise).

        Resolving may run programs (Sky's ``codex --version`` and ``sandbox --help``, the desktop
        checks of ``auto``) and wait on them, so it runs in a worker thread: the event loop, and
        with it the emergency stop, never waits on a program that hangs.
        """
        if self.launch is None:
            assert not isinstance(self._launch, LaunchSpec)
            resolved = await trio.to_thread.run_sync(self._launch, abandon_on_cancel=True)
            if self.launch is None:  # another task may have resolved it meanwhile: keep one
                self.launch = resolved
        return self.launch

    async def _start(self) -> Process:
        """Start the backend; for a backend with several recipes (Sky), try the next one only
        when the previous one was recognisably refused before its handshake finished."""
        first = await self.resolve_launch()
        chain = (first, *first.fallbacks)
        # A turn-ended still on its way could end the new client's turn instead (bounded).
        await self._turn_ends_done.wait()
        self.attempts = []
        for n, spec in enumerate(chain):
            self.last_returncode, self.last_stderr = None, []
            self.last_signals, self.last_timeout, self.last_prelude = (), None, []
            try:
                proc = await self._start_one(spec)
            except BackendUnavailable as exc:
                why = spec.refusal(self.last_returncode, self.last_stderr) if spec.refusal else ""
                if why and n + 1 < len(chain):
                    self.attempts.append(RecipeAttempt(spec.recipe, "refused", why))
                    log.warning(
                        "backend.recipe_refused",
                        backend=spec.kind,
                        recipe=spec.recipe,
                        reason=why,
                        next=chain[n + 1].recipe,
                    )
                    continue
                self.attempts.append(RecipeAttempt(spec.recipe, "failed", why or exc.message))
                raise
            except BaseException as exc:
                detail = getattr(exc, "message", "") or type(exc).__name__
                self.attempts.append(RecipeAttempt(spec.recipe, "failed", detail))
                raise
            self.attempts.append(RecipeAttempt(spec.recipe, "ok"))
            self.started_spec = spec
            if spec.recipe:
                log.info(
                    "backend.recipe",
                    backend=spec.kind,
                    recipe=spec.recipe,
                    choice=first.recipe_choice,
                    tried=[a.recipe for a in self.attempts],
                )
                if spec.remember is not None:
                    spec.remember(spec.recipe)
            return proc
        raise AssertionError("unreachable: the last recipe either started or raised")

    async def _start_one(self, spec: LaunchSpec) -> Process:
        try:
            with trio.fail_after(self.start_timeout_s):
                transport = await open_process(
                    spec.argv, env=spec.env, cwd=spec.cwd, disclaim=spec.disclaim
                )
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
        proc = Process(transport, spec)
        if spec.notice:
            log.info("backend.notice", backend=spec.kind, notice=spec.notice)
        self.responsibility = transport.responsibility
        if transport.responsibility:
            log.info(
                "backend.started",
                backend=spec.kind,
                pid=transport.pid,
                responsibility=transport.responsibility,
            )
        else:
            log.info("backend.started", backend=spec.kind, pid=transport.pid)
        await self._nursery.start(self._run_process, proc)
        try:
            proc.info = await self._initialize(proc)
        except BackendTimeout as exc:
            await self._shutdown(proc)
            phase = str(exc.data.get("phase", ""))
            self.last_timeout = (phase, self.start_timeout_s)
            raise BackendTimeout(
                f"{exc.message}; Deskhand stopped it ({_how_stopped(self.last_signals)})",
                data=exc.data,
            ) from None
        except BaseException:
            await self._shutdown(proc)
            raise
        return proc

    async def _initialize(self, proc: Process) -> ServerInfo:
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
        await proc.send_or_fail(proc.session.notification("notifications/initialized"))
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
        self, proc: Process, method: str, params: dict[str, Any], *, phase: str
    ) -> Any:
        rid, data = proc.session.request(method, params)
        call = PendingCall(rid)
        proc.current = call
        proc.claim_reader()
        try:
            await proc.send_or_fail(data)
            with trio.move_on_after(self.start_timeout_s) as scope:
                while True:
                    event = await proc.next_event(call)
                    if isinstance(event, ServerRequest):
                        # Nothing to approve before any tool call: refuse without asking.
                        await proc.answer(event, ap.reply_for("cancel"))
                        continue
                    break
            if scope.cancelled_caught:
                raise BackendTimeout(
                    f"the backend did not answer {method} within {self.start_timeout_s:g} s",
                    data={"phase": phase},
                )
        finally:
            proc.current = None
            proc.release_reader()
        if isinstance(event, Died):
            what = "did not speak MCP" if event.cause == "protocol_error" else "stopped"
            detail = event.detail
            if proc.prelude.lines and event.cause != "protocol_error":
                detail += f"; before that it printed {proc.prelude.quote()}"
            raise BackendUnavailable(
                f"the backend {what} during {method}: {detail}; "
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

    async def _run_process(
        self, proc: Process, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED
    ) -> None:
        with proc.scope:
            async with trio.open_nursery() as nursery:
                nursery.start_soon(proc.transport.run_stderr_drain)
                task_status.started()
                await proc.watch_idle()
                nursery.cancel_scope.cancel()

    async def _shutdown(self, proc: Process) -> None:
        if proc.dead is None:
            proc.dead = Died("closed", "closed by Deskhand")
        await proc.transport.aclose()
        self.last_stderr = list(proc.transport.stderr_tail)
        self.last_returncode = proc.transport.process.returncode
        self.last_signals = tuple(proc.transport.signals_sent)
        self.last_prelude = list(proc.prelude.lines)
        proc.scope.cancel()
        if self._proc is proc:
            self._proc = None
        self._end_turn(proc)

    def _end_turn(self, proc: Process) -> None:
        """Sky: end the closed client's turn, in the background (see turnend)."""
        spec = proc.spec
        argv = turnend.argv_for(spec) if spec is not None and proc.info is not None else None
        if spec is None or argv is None:
            return  # not Sky, or a client that never finished its handshake: no turn began
        if self._turn_ends == 0:
            self._turn_ends_done = trio.Event()
        self._turn_ends += 1
        self._nursery.start_soon(self._run_turn_end, spec, argv)

    async def _run_turn_end(self, spec: LaunchSpec, argv: tuple[str, ...]) -> None:
        try:
            await turnend.run(spec, argv, timeout_s=self.turn_end_timeout_s)
        finally:
            self._turn_ends -= 1
            if self._turn_ends == 0:
                self._turn_ends_done.set()

    async def aclose(self) -> None:
        """Stop the backend process (if any), following the MCP shutdown order."""
        if self._proc is not None:
            await self._shutdown(self._proc)

    @property
    def turn_ends_pending(self) -> int:
        """Sky turn-ended notifications still running."""
        return self._turn_ends

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
                    "run `deskhandctl doctor` to see its tools",
                    delivery="refused",
                )
            schema = tool.get("inputSchema") if isinstance(tool.get("inputSchema"), dict) else {}
            try:
                args = negotiate(name, arguments, schema or {})
            except ArgumentsRefused as exc:
                raise BadRequest(str(exc), data={"tool": name}, delivery="refused") from None
            return await self._call(proc, name, args, on_approval, timeout_s or self.call_timeout_s)
        finally:
            self._call_lock.release()

    async def _call(
        self,
        proc: Process,
        name: str,
        args: dict[str, Any],
        on_approval: ApprovalCallback | None,
        budget: float,
    ) -> CallResult:
        rid, data = proc.session.request("tools/call", {"name": name, "arguments": args})
        call = PendingCall(rid)
        proc.current = call
        proc.claim_reader()
        started = trio.current_time()
        try:
            await proc.send_or_fail(data)
            while True:
                waited_from = trio.current_time()
                # A bare CancelScope: move_on_after's context-manager wrapper costs a
                # measurable share of a fast call.
                with trio.CancelScope(deadline=waited_from + budget) as scope:
                    event = await proc.next_event(call)
                budget -= trio.current_time() - waited_from
                if scope.cancelled_caught:
                    await self._abandon(proc, rid, "the call's deadline passed")
                    raise OutcomeUnknown(
                        f"{name} did not finish in time; whether it took effect is unknown, "
                        "so observe the app again before doing anything else",
                        data={"cause": "timeout", "phase": "call", "tool": name},
                    )
                if isinstance(event, ServerRequest):
                    answer = await proc.decide(call, event, on_approval)
                    await proc.answer(event, ap.reply_for(answer))
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
        if isinstance(event, Died):
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

    async def _cancel_remote(self, proc: Process, rid: int, reason: str) -> None:
        proc.session.forget(rid)
        data = proc.session.notification(
            "notifications/cancelled", {"requestId": rid, "reason": reason}
        )
        with trio.move_on_after(1):
            try:
                await proc.send(data)
            except (trio.BrokenResourceError, trio.ClosedResourceError):
                pass

    async def _abandon(self, proc: Process, rid: int, reason: str) -> None:
        with trio.CancelScope(shield=True):
            await self._cancel_remote(proc, rid, reason)
            await self._shutdown(proc)


def _how_stopped(signals: tuple[str, ...]) -> str:
    if not signals:
        return "it ended when its input was closed"
    if signals[-1] == "SIGKILL":
        return "with SIGKILL, after SIGTERM did not end it"
    return f"with {signals[-1]}"


@asynccontextmanager
async def open_backend(
    launch: LaunchSpec | Callable[[], LaunchSpec],
    *,
    call_timeout_s: float = 30.0,
    start_timeout_s: float = 15.0,
) -> AsyncIterator[BackendConnection]:
    """A backend connection whose process (if started) is stopped when the block exits; the
    block ends once Sky's turn-ended notifications (bounded) have run."""
    async with trio.open_nursery() as nursery:
        conn = BackendConnection(
            nursery, launch, call_timeout_s=call_timeout_s, start_timeout_s=start_timeout_s
        )
        try:
            yield conn
        finally:
            await conn.aclose()
            nursery.cancel_scope.cancel()
