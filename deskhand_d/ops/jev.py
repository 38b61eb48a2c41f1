"""The ``run`` op: a Jev task in the requesting session, with progress events per step.

A run needs the session to be in ``jev`` mode and a Jev key; it holds the session while it runs
(a mode switch or a second run is refused with ``mode_busy``), starts by retiring the session's
state ids and any handoff, and shares the turn's budget with the turn's other runs. When Jev
hands a step back (``needs_planner``), the session gets a handoff whose token the reply carries.
A cancelled run reports ``cancelled`` if nothing was being dispatched, ``outcome_unknown`` if an
action was.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import msgspec
import trio

from deskhand_d import errors as E
from deskhand_d import paths
from deskhand_d.jev.access import missing_key_help
from deskhand_d.jev.desk import ServiceDesk
from deskhand_d.jev.loop import TaskLoop
from deskhand_d.jev.task import Ending, Task, Verify
from deskhand_d.jev.trace import NoTrace, Recorder, TraceFile, redact
from deskhand_d.jev.types import Resources
from deskhand_d.native import allowlist
from deskhand_d.native.handoff import instruction, new_handoff
from deskhand_d.native.service import Caller
from deskhand_d.native.sessions import Session
from deskhand_d.ops.context import Handler, RequestContext, ask, caller, session_of, words
from deskhand_d.protocol import HandoffInfo, Progress, ResultBody, Run, RunResult


def _task(req: Run) -> Task:
    return Task(
        app=req.app,
        goal=req.goal,
        dry_run=req.dry_run,
        max_steps=req.max_steps,
        candidate_max=req.candidate_max,
        verify=Verify(req.verify.role, req.verify.label_equals) if req.verify else None,
        plan=req.plan,
        constraints=tuple(req.constraints),
        resources=Resources(text=req.text, key=req.key, direction=req.direction),
    )


def _not_jev(ctx: RequestContext, session: Session) -> E.JevModeRequired:
    """``run`` in native mode: why the session is in native mode, and what to do."""
    w = words(ctx)
    meanwhile = f"Meanwhile, act natively with {w.act()}"
    if session.mode_reason == "missing_jev_key":
        problem = ctx.services.jev.problem
        why = (
            "this session is in native mode because jev mode needs a Jev key, so nothing was "
            "sent to Jev: "
            f"{missing_key_help(problem, w.set_mode('jev'), ctx.services.managed_by)}. {meanwhile}"
        )
    else:
        since = (
            "was switched to native mode"
            if session.mode_chosen
            else "is in native mode, the mode new sessions start in (native.default_mode)"
        )
        why = (
            f"this session {since}, so nothing was sent to Jev. Only the person switches it "
            f"to jev mode, with {w.set_mode('jev')}; {meanwhile[0].lower()}{meanwhile[1:]}"
        )
    return E.JevModeRequired(why, data={"mode": session.mode, "reason": session.mode_reason})


async def run(ctx: RequestContext, req: Run) -> ResultBody:
    native = ctx.services.native
    session = session_of(ctx)
    if session.mode != "jev":
        raise _not_jev(ctx, session)
    if session.running_task:
        raise E.ModeBusy("this session is already running a task; wait for it or cancel it")
    decider = ctx.services.jev.client()  # MissingJevKey before anything touches the desktop
    native.gates.check_unlocked()
    native.gates.check_app(req.app)
    now = trio.current_time()
    spent = session.budget.exhausted(now)
    if spent == "task_deadline_exceeded":
        raise E.TaskDeadlineExceeded(
            "this turn's Jev runs have used their time; hand the task back to the person or "
            "continue natively in a new turn"
        )
    if spent == "action_budget_exhausted":
        raise E.ActionBudgetExhausted(
            "this turn's Jev runs have used their action attempts; hand the task back to the "
            "person or continue in a new turn"
        )
    who = caller(ctx)
    trace = await _open_trace(ctx, req, who)
    if trace is None:  # the person declined the full trace: no file, no read, no Jev call
        return RunResult(
            status="stop", reason="consent_declined", steps=0, verified=False, elapsed_ms=0
        )
    session.budget.start(now)
    session.retire("a Jev run started")
    who = replace(who, run_id=trace.run_id)
    names = native.gates.allowed_apps()

    async def emit(**fields: Any) -> None:
        await ctx.emit(Progress(request_id=req.id, **fields))

    loop = TaskLoop(
        _task(req),
        desk=ServiceDesk(native, who, req.app),
        decider=decider,
        budget=session.budget,
        allowed=lambda app: allowlist.is_allowed(app, names),
        emit=emit,
        trace=trace,
    )

    def on_cancel(why: str) -> E.DeskhandError:
        data = {"steps": loop.steps, "phase": loop.phase}
        if loop.phase == "execute":
            return E.OutcomeUnknown(
                f"the run was {why} while an action was being dispatched; whether it took "
                "effect is unknown, so observe again",
                data=data,
            )
        return E.RequestCancelled(
            f"the run was {why} ({loop.phase}); nothing was being dispatched",
            data=data,
            delivery="refused",
        )

    ctx.on_cancel(on_cancel)
    session.running_task = True
    started = trio.current_time()
    try:
        ending = await loop.run()
    finally:
        session.running_task = False
    return _result(ctx, req, ending, started, trace)


async def _open_trace(ctx: RequestContext, req: Run, who: Caller) -> Recorder | None:
    """The run's trace: none, metadata (config) or full (the person must agree first)."""
    cfg = ctx.services.config
    directory = paths.state_dir(ctx.services.env) / "traces"
    secrets = ctx.services.secrets()
    if req.full_trace:
        text = (
            f"{who.client} asks to record a full trace of a Jev run on {req.app!r}. It would "
            f"store, in {directory}: the goal, every accessibility tree read (all text visible "
            "in the app), the text and keys given to type or press, and every question sent to "
            "Jev with its answers. API keys are removed; screenshots are never stored. Allow?"
        )
        try:  # through this client or a console; nobody to ask, or no answer, is a no
            choice = await ask(ctx, "full_trace", text, app=req.app)
        except (E.NoOneToAsk, E.QuestionExpired):
            return None
        if choice != "accept":
            return None
        return TraceFile(directory, mode="full", secrets=secrets, budget=cfg.jev.trace_budget_bytes)
    if cfg.jev.trace == "metadata":
        return TraceFile(
            directory, mode="metadata", secrets=secrets, budget=cfg.jev.trace_budget_bytes
        )
    return NoTrace()


def _result(
    ctx: RequestContext, req: Run, ending: Ending, started: float, trace: Recorder
) -> RunResult:
    session = session_of(ctx)
    handoff = None
    if ending.status == "needs_planner" and ending.handoff is not None:
        h = ending.handoff
        session.handoff = new_handoff(
            session_id=session.session_id,
            turn=session.turn,
            app=req.app,
            goal=req.goal,
            remaining=h.remaining_steps,
        )
        handoff = HandoffInfo(
            token=session.handoff.token,
            app=req.app,
            goal=req.goal,
            remaining_steps=session.handoff.remaining,
            context=h.context,
            recent_actions=list(h.recent_actions),
            candidates=[msgspec.structs.asdict(c) for c in h.candidates],
            candidates_truncated=h.candidates_truncated,
            instruction=instruction(words(ctx).act_under_handoff()),
        )
    now = trio.current_time()
    return RunResult(
        status=ending.status,
        reason=ending.reason,
        steps=ending.steps,
        verified=ending.verified,
        elapsed_ms=round((now - started) * 1000),
        outcome_unknown=ending.outcome_unknown,
        trace_path=trace.path,
        trace_incomplete=ending.trace_incomplete,
        decision=ending.decision,
        planned=ending.planned,
        target=ending.target,
        handoff=handoff,
        budget_remaining_s=round(session.budget.remaining_s(now), 1),
        budget_remaining_actions=max(0, session.budget.actions - session.budget.used),
        # Jev's messages never hold the key; the redaction is the second lock on that door.
        detail=redact(ending.detail, tuple(ctx.services.secrets())),
    )


HANDLERS: dict[type, Handler] = {Run: run}
