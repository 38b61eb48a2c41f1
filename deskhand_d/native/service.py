"""Native mode: observations and actions through the one queue, guarded by stateIds.

Theory of operation. Every action on the desktop — a call to the backend (a native op, a step
of a Jev run, doctor's probe) or a launch — goes through one pipeline
(:meth:`NativeService._admit`, then :meth:`NativeService._queued`, which
:meth:`NativeService._dispatch` uses for backend calls). The gates come first, in this order,
all decided before any backend traffic: the emergency lock, the app allowlist, the session's
recovery state, a launch ban, the mode (jev needs a handoff), room in the queue and the
stateId (consumed by any attempt), then Deskhand's consent for the app
(:mod:`deskhand_d.consent.gate`, which may ask the person); which of them apply is the
caller's :class:`Checks`. The call itself runs in the action queue's single worker, once its
audit ``start`` record is on disk (when it cannot be written, nothing runs:
``audit_unavailable``); a backend approval prompt is routed to the requesting client as a
``question`` event (only if it declared it can answer). The reply states honestly what
happened: ``dispatched`` (the backend, or the launcher, answered), ``refused`` (nothing ran)
or ``unknown`` (sent, no answer) — nothing is ever retried — and so does the dispatch's audit
``end`` record. What comes back is the client protocol's reply
(:class:`~deskhand_d.protocol.Observation`, :class:`~deskhand_d.protocol.ActionDone`), built
here once from the backend's result.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, TypeVar

import structlog
import trio

from deskhand_d import ax
from deskhand_d import errors as E
from deskhand_d.backends.mcpclient import approvals as ap
from deskhand_d.backends.mcpclient.connection import BackendConnection, CallResult
from deskhand_d.backends.mcpclient.results import Kind, ToolOutput
from deskhand_d.backends.mcpclient.toolcalls import ToolCall
from deskhand_d.config import Config
from deskhand_d.consent.gate import Admission, ConsentAsker, ConsentGate
from deskhand_d.native import interpret
from deskhand_d.native import launch as launcher
from deskhand_d.native.gates import Gates
from deskhand_d.native.imagesize import image_size
from deskhand_d.native.queue import ActionQueue
from deskhand_d.native.sessions import Session, SessionManager
from deskhand_d.native.states import StateRecord, Use, new_state_id
from deskhand_d.nextsteps import PROTOCOL, Words, action
from deskhand_d.protocol import ActionDone, Observation

if TYPE_CHECKING:
    from deskhand_d.audit import AuditLog
    from deskhand_d.consent.grants import SavedGrant

log = structlog.get_logger("deskhand.native")

Asker = Callable[[ap.Confirmation, str], Awaitable[Literal["accept", "decline"]]]
_T = TypeVar("_T")

LAUNCH = "launch_app"
"""The tool name a launch has in the audit log and in its reply."""


@dataclass(slots=True)
class Handover:
    """Whether a request's backend call has been handed to the backend yet: what its
    cancellation means (before: nothing was sent; after: the outcome is unknown)."""

    sent: bool = False


@dataclass(frozen=True, slots=True)
class Caller:
    """Who is asking: the session, the client, and how to ask its person a question."""

    session: Session
    client: str
    pid: int
    ask: Asker | None  # None: the client cannot answer questions (prompts get cancel)
    consent: ConsentAsker | None = None  # asks the person about an app (None: cannot)
    run_id: str = ""  # the Jev run this call belongs to, for the audit log
    words: Words = PROTOCOL  # how messages name the next step for this client
    handover: Handover | None = None  # marked when a call of this request reaches the backend

    @property
    def owner(self) -> str:
        label = self.session.name or self.session.session_id[:8]
        return f"session {label} ({self.client}, pid {self.pid})"


@dataclass(frozen=True, slots=True)
class Checks:
    """Which gates a call passes besides the lock, recovery and (for an app) allowlist and
    consent: an observation's recovery rule, a launch's ban, an action's mode, stateId and
    queue room."""

    observing: bool = False  # an observation of an app the person changed is allowed
    launching: bool = False  # refused while launches are banned for the app this turn
    mode: bool = False  # in jev mode, only under the handoff named by ``handoff``
    handoff: str | None = None
    state: tuple[str, Use] | None = None  # the stateId to spend, and what it is used for


@dataclass(slots=True)
class Ended:
    """How a dispatch ended, as its reply and its audit ``end`` record state it."""

    delivery: E.Delivery = "refused"  # until the job is known to have run
    code: str = ""
    delivered: E.Count | None = None
    effect: str = ""
    approval_reason: str | None = None


def call_ended(res: CallResult) -> Ended:
    """How a backend call that returned ended: dispatched, unless the backend said how far it
    got (the reply will agree)."""
    ended = Ended("dispatched", approval_reason=res.approval_reason)
    if res.output.is_error or res.output.kind is not Kind.OK:
        ended.code = res.output.kind.value
    short = res.output.shortfall
    if short is not None:
        ended.delivery = short.state
        ended.code = interpret.NOTE_CODES.get(short.reason, ended.code)
        if short.done is not None and short.total is not None:
            ended.delivered = E.Count(short.done, short.total, short.unit)
        if short.reason == "no_effect":
            ended.effect = "unchanged"
    elif res.output.effect is not None:
        ended.effect = res.output.effect[0]
    return ended


@contextmanager
def refused_if_raised() -> Iterator[None]:
    """Mark a gate's refusal as ``delivery: refused``: nothing reached the backend."""
    try:
        yield
    except E.DeskhandError as exc:
        exc.assume("refused")
        raise


class NativeService:
    def __init__(
        self,
        *,
        config: Config,
        env: Mapping[str, str],
        backend: BackendConnection,
        queue: ActionQueue,
        sessions: SessionManager,
        audit: AuditLog | None,
        consent: ConsentGate,
        audit_problem: str = "",
    ) -> None:
        self.config = config
        self.gates = Gates(config, env)
        self.backend = backend
        self.queue = queue
        self.sessions = sessions
        self.audit = audit
        self.audit_problem = audit_problem  # why there is no audit log (then nothing dispatches)
        self.unfinished_at_start = 0  # dispatches an earlier run began and never finished
        self.consent = consent

    async def admit(self, caller: Caller, app: str, *, instance: int | None = None) -> Admission:
        """Deskhand's consent for ``app`` (may ask the person; see consent.gate)."""
        session = caller.session
        await self.consent.retry_unsaved()
        return await self.consent.admit(
            session.consent,
            app,
            ask=caller.consent,
            client=caller.client,
            task_id=id(session),
            instance=instance,
            words=caller.words,
        )

    async def revoke(self, app: str, by: str) -> tuple[list[SavedGrant], int, str]:
        """Revoke saved grants for ``app``: in force in this daemon at once (open questions
        void, every queued and in-flight call cancelled, every stateId retired, the backend
        closed so that no handle from before can be used again), then saved to grants.json.
        Returns the grants, the calls cancelled, and why saving failed (``""`` when saved):
        an unsaved revocation still holds here until a later write succeeds. Never depends
        on the disk to take effect."""
        changed = self.consent.revoke_now(app)
        why = f"access to {app} was revoked by {by}"
        cancelled = self.queue.stop_all(why)
        self.sessions.invalidate_all(why)
        await self.backend.aclose()
        problem = await self.consent.save_revocations()
        log.warning("consent.revoked", app=app, by=by, cancelled=cancelled, unsaved=problem)
        return changed, cancelled, problem

    # ----- ops --------------------------------------------------------------------------------

    async def _admit(
        self, caller: Caller, app: str, checks: Checks
    ) -> tuple[StateRecord | None, Admission | None]:
        """Every gate ``checks`` asks for, in order, before any backend traffic; a refusal
        says that nothing was sent. Returns the spent stateId's record (if one was spent) and
        consent's admission (for an app)."""
        session, gates = caller.session, self.gates
        with refused_if_raised():
            gates.check_unlocked()
            if app:
                gates.check_app(app)
            gates.check_recovery(session, app, observing=checks.observing)
            if checks.launching:
                gates.check_launch(session, app)
            if checks.mode:
                gates.check_mode(session, app, checks.handoff, caller.words)
            used = None
            if checks.state is not None:
                self.queue.check_room()  # before the stateId is spent: a retry can reuse it
                state_id, use = checks.state
                used = session.states.consume(
                    state_id,
                    use,
                    turn=session.turn,
                    now=trio.current_time(),
                    generation=self.backend.processes_started,
                )
            admission = None
            if app:
                instance = used.pid if used is not None else None
                admission = await self.admit(caller, app, instance=instance)
        return used, admission

    async def list_apps(
        self, caller: Caller, *, backend: BackendConnection | None = None
    ) -> ToolOutput:
        """``list_apps``; ``backend``: another connection than the daemon's (doctor's probe of
        a backend kind the daemon does not run), still through the queue and the audit log."""
        await self._admit(caller, "", Checks())
        res = await self._dispatch(caller, "list_apps", {}, app="", backend=backend)
        return res.output

    async def observe_tree(self, caller: Caller, app: str) -> tuple[CallResult, ax.TreeFacts]:
        """Every gate, consent, then ``get_app_state``; no stateId is minted here."""
        session = caller.session
        _, admission = await self._admit(caller, app, Checks(observing=True))
        assert admission is not None  # an app was named
        session.invalidate("a newer observation was requested")
        res = await self._dispatch(caller, "get_app_state", {"app": app}, app=app)
        interpret.observed(session, app, res, caller.words)
        info = ax.inspect(res.output.text)
        try:  # the app restarted under a task grant: the person decides before we use it
            await self.consent.observed(
                session.consent,
                admission,
                info.pid,
                ask=caller.consent,
                client=caller.client,
                task_id=id(session),
                words=caller.words,
            )
        except E.DeskhandError as exc:
            exc.delivery = "dispatched"
            exc.data["withheld"] = True
            raise
        session.recovery.discard(app)
        return res, info

    async def observe(self, caller: Caller, app: str) -> Observation:
        """An observation with a fresh stateId for the next action."""
        res, info = await self.observe_tree(caller, app)
        shot, mime = _screenshot(res.output)
        state_id = self._mint(
            caller.session,
            app,
            info,
            has_screenshot=shot is not None,
            screenshot_size=image_size(shot) if shot is not None else None,
        )
        return Observation(
            app=app,
            state_id=state_id,
            text=res.output.text,
            screenshot=shot,
            screenshot_mime=mime,
            approval_reason=res.approval_reason,
        )

    async def act(
        self, caller: Caller, app: str, state_id: str, call: ToolCall, *, handoff: str | None = None
    ) -> ActionDone:
        """An action under a stateId of ``app`` (and, in jev mode, the planner's handoff)."""
        session = caller.session
        use = Use(app, call.element_index, coordinates=bool(call.points), points=call.points)
        checks = Checks(mode=True, handoff=handoff, state=(state_id, use))
        under_handoff = session.mode == "jev"
        try:
            used, _ = await self._admit(caller, app, checks)
            assert used is not None  # a stateId was spent
            res = await self._act(caller, app, call, bounds=used.screenshot_size)
        except E.DeskhandError as exc:
            if under_handoff:
                if exc.delivery in ("dispatched", "partial", "unknown"):
                    self.spend_handoff(session)
                exc.data["handoff_steps_left"] = self.handoff_steps_left(session)
            raise
        if under_handoff:
            self.spend_handoff(session)
        out = res.output
        new_state = None
        info = ax.inspect(out.text)
        same_process = bool(info.identity) and info.identity == used.identity
        if not out.is_error and out.kind is Kind.OK and info.complete and same_process:
            # Coordinates always need a get_app_state screenshot, so this state has none.
            new_state = self._mint(session, app, info, has_screenshot=False, action_returned=True)
        shot, mime = _screenshot(out)  # shown to the caller, no more
        return ActionDone(
            app=app,
            tool=call.tool,
            delivery="dispatched",
            ok=not out.is_error,
            text=out.text,
            state_id=new_state,
            screenshot=shot,
            screenshot_mime=mime,
            approval_reason=res.approval_reason,
            effect=out.effect[0] if out.effect is not None else None,
            effect_of=out.effect[1] if out.effect is not None else "",
            handoff_steps_left=self.handoff_steps_left(session) if under_handoff else None,
        )

    async def run_step(self, caller: Caller, app: str, call: ToolCall) -> CallResult:
        """One action of a Jev run: the gates without stateId or handoff (the loop re-reads
        the tree before each action, and its actions count against the turn's Jev budget)."""
        await self._admit(caller, app, Checks())
        return await self._act(caller, app, call)

    @staticmethod
    def spend_handoff(session: Session) -> None:
        """A native action under a handoff reached the backend: one step less."""
        if session.handoff is not None:
            session.handoff = session.handoff.spent()

    @staticmethod
    def handoff_steps_left(session: Session) -> int:
        """The native steps the session's handoff still allows (0 once it is closed): every
        reply to an action in jev mode states it, so clients never count steps themselves."""
        return session.handoff.remaining if session.handoff is not None else 0

    async def _act(
        self, caller: Caller, app: str, call: ToolCall, *, bounds: tuple[int, int] | None = None
    ) -> CallResult:
        """Send one action (every gate already passed) and read what its result means
        (:func:`.interpret.acted`). ``bounds``: the observation's screenshot size."""
        tool, args = call.tool, call.args
        res = await self._dispatch(caller, tool, {"app": app, **args}, app=app)
        interpret.acted(caller.session, app, tool, args, res, caller.words, bounds=bounds)
        return res

    def _mint(
        self,
        session: Session,
        app: str,
        info: ax.TreeFacts,
        *,
        has_screenshot: bool,
        action_returned: bool = False,
        screenshot_size: tuple[int, int] | None = None,
    ) -> str:
        return session.states.mint(
            StateRecord(
                state_id=new_state_id(),
                app=app,
                turn=session.turn,
                created=trio.current_time(),
                indices=info.indices,
                has_screenshot=has_screenshot,
                screenshot_size=screenshot_size,
                backend_generation=self.backend.processes_started,
                identity=info.identity,
                pid=info.pid,
                action_returned=action_returned,
            )
        )

    async def launch(self, caller: Caller, app: str) -> ActionDone:
        """``launch_app``: every gate, then the launcher, as an action like any other: in the
        one queue, after its durable audit ``start`` record, its delivery stated."""
        await self._admit(caller, app, Checks(launching=True))
        with refused_if_raised():  # no launcher here (or no backend to say which): nothing ran
            argv = launcher.command(app, (await self.backend.resolve_launch()).kind)
        timeout_s = self.config.native.launch_timeout_s

        async def start() -> str:
            return await launcher.run(app, argv, timeout_s=timeout_s)

        text = await self._queued(
            caller, LAUNCH, {"app": app}, app=app, send=start, ended=lambda _: Ended("dispatched")
        )
        return ActionDone(app=app, tool=LAUNCH, delivery="dispatched", ok=True, text=text)

    async def emergency_stop(self, by: str) -> int:
        """Cancel everything, close the backend, invalidate every state, lock the daemon."""
        self.gates.locked_by = by
        cancelled = self.queue.stop_all(f"emergency stop by {by}")
        self.sessions.invalidate_all("the emergency stop")
        await self.backend.aclose()
        log.warning("native.emergency_stop", by=by, cancelled=cancelled)
        return cancelled

    # ----- the call itself ---------------------------------------------------------------------

    async def _dispatch(
        self,
        caller: Caller,
        tool: str,
        args: dict[str, Any],
        *,
        app: str,
        backend: BackendConnection | None = None,
    ) -> CallResult:
        """One backend call as an action (:meth:`_queued`); ``backend``: another connection
        than the daemon's (doctor's probe)."""
        ask = caller.ask
        approval = None
        if ask is not None:
            asker = ask

            async def approval(req: ap.Confirmation) -> Literal["accept", "decline"]:
                return await asker(req, app)

        connection = backend or self.backend

        async def call() -> CallResult:
            return await connection.call_tool(tool, args, on_approval=approval)

        return await self._queued(caller, tool, args, app=app, send=call, ended=call_ended)

    async def _queued(
        self,
        caller: Caller,
        tool: str,
        args: dict[str, Any],
        *,
        app: str,
        send: Callable[[], Awaitable[_T]],
        ended: Callable[[_T], Ended],
    ) -> _T:
        """Run ``send`` as the action queue's job, once its audit ``start`` record is on disk,
        and write its ``end`` record however it ends; ``ended`` reads a returned value's
        outcome. A failure says what reached the desktop (``delivery``)."""
        started = trio.current_time()
        running = False  # set once the queue hands the call over (to the backend, the launcher)
        dispatch_id = ""

        async def job() -> _T:
            nonlocal running, dispatch_id
            dispatch_id = await self._audit_begin(caller, app, tool, args)  # on disk first
            running = True
            if caller.handover is not None:
                caller.handover.sent = True
            return await send()

        outcome = Ended()
        try:
            res: _T = await self.queue.run(
                job, owner=caller.owner, session_id=caller.session.session_id, label=tool
            )
        except E.DeskhandError as exc:
            # A failure after the call was handed over can have reached the app: never say
            # "refused" for it unless the backend itself said that nothing was sent.
            exc.assume("unknown" if running else "refused")
            outcome = Ended(exc.delivery or "unknown", exc.code, exc.delivered)
            if outcome.delivery in ("unknown", "partial"):
                if tool not in ("get_app_state", "list_apps"):
                    caller.session.launch_banned.add(app)
                caller.session.invalidate("the last call's outcome is unknown")
            else:
                caller.session.invalidate("the last call failed")
            caller.session.handoff = None  # a backend error ends the handoff
            raise
        except BaseException:
            # trio.Cancelled (the client went away, the daemon is stopping) or a bug: once
            # the call was handed over, what it did is unknown.
            outcome = Ended("unknown" if running else "refused", "cancelled")
            raise
        else:
            outcome = ended(res)
            return res
        finally:
            elapsed = trio.current_time() - started
            self._audit(caller, app, tool, args, outcome, elapsed, dispatch_id)

    async def _audit_begin(self, caller: Caller, app: str, tool: str, args: dict[str, Any]) -> str:
        """The durable ``start`` record of a dispatch; :class:`AuditUnavailable` when it cannot
        be written, so that nothing is ever dispatched without one."""
        audit = self.audit
        if audit is None:
            raise E.AuditUnavailable(
                f"there is no audit log ({self.audit_problem or 'it could not be opened'}), so "
                "nothing is dispatched; fix the state directory and restart deskhand-d",
                data={"cause": self.audit_problem},
            )
        fields = self._audit_fields(caller, app, tool, args)
        try:
            return await trio.to_thread.run_sync(functools.partial(audit.begin, **fields))
        except OSError as exc:
            cause = exc.strerror or type(exc).__name__
            raise E.AuditUnavailable(
                f"the audit log {audit.path} cannot be written ({cause}), so {action(tool)} was "
                "not dispatched; free space there (or repair the directory) and try again",
                data={"path": str(audit.path), "cause": cause},
            ) from None

    @staticmethod
    def _audit_fields(caller: Caller, app: str, tool: str, args: dict[str, Any]) -> dict[str, Any]:
        return {
            "session": caller.session.name or caller.session.session_id,
            "client": caller.client,
            "client_pid": caller.pid,
            "tool": tool,
            "app": app,
            "arguments": args,
            "run_id": caller.run_id,
        }

    def _audit(
        self,
        caller: Caller,
        app: str,
        tool: str,
        args: dict[str, Any],
        outcome: Ended,
        elapsed: float,
        dispatch_id: str,
    ) -> None:
        if self.audit is not None:
            self.audit.dispatch(
                **self._audit_fields(caller, app, tool, args),
                delivery=outcome.delivery,
                latency_ms=round(elapsed * 1000, 3),
                code=outcome.code,
                approval_reason=outcome.approval_reason or "",
                delivered=outcome.delivered,
                dispatch=dispatch_id,
                effect=outcome.effect,
            )


def _screenshot(out: ToolOutput) -> tuple[bytes | None, str]:
    """The first image the backend sent, decoded, and its type (``None, ""`` for none)."""
    image = out.images[0] if out.images else None
    shot = image.decode() if image is not None else None
    return shot, image.mime_type if image is not None and shot is not None else ""
