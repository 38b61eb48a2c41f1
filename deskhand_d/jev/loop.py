"""The Jev task loop: observe, choose candidates, ask Jev, gate, act once, observe, verify.

The trio shell around the pure pieces (:mod:`deskhand_d.ax`, :mod:`.context`, :mod:`.policy`,
:mod:`.task`, and the session's :mod:`~deskhand_d.native.handoff` and
:mod:`~deskhand_d.native.turnbudget`). It reaches the desktop only through a :class:`Desk` (in the
daemon: the native service, so every observation and action passes the same lock, allowlist,
consent and action queue as native ops), Jev only through a :class:`Decider`, and records every
phase to a :class:`~deskhand_d.jev.trace.Recorder`.

Rules the loop keeps (see ``docs/jev.md``):

* **Nothing is retried**: not a decision, not an observation, not an action.
* **Re-read before acting**: right before the dispatch the tree is read again; the step goes
  ahead only if the chosen target still has the same index, role and label and the candidate
  set is the same (so a ticking clock elsewhere does not abort it); anything else hands back.
* **Honest endings**: ``done`` only when the verify spec matches the tree; Jev's own claim is
  ``model_done``; a failure after a dispatch began is ``outcome_unknown``; three observations in
  a row that an action did not change stop the run.
* **Budgets**: the turn's shared budget (time and action attempts) is checked before every step
  and before every dispatch; an attempt is charged before it is dispatched.
* **Trace first**: ``dispatch_start`` is on disk before the action goes out; a trace that cannot
  be written stops the run before its next dispatch (``trace_incomplete``).
* **Phases**: :attr:`TaskLoop.phase` says where the loop is, so a cancellation can be reported
  precisely (before ``execute`` nothing was dispatched; during it the outcome is unknown).

Snapshot ids in the trace: the first observation is 1; step k's re-read is 2k and its
observation after the action 2k + 1.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol

import trio

from deskhand_d import ax
from deskhand_d import errors as E
from deskhand_d.ax import Candidate
from deskhand_d.jev import policy
from deskhand_d.jev.briefing import build_context, summarize_action
from deskhand_d.jev.task import (
    Ending,
    Task,
    action_dict,
    brief,
    candidate_key,
    decision_dict,
    element_dict,
    prepared_dict,
    refusal_ending,
    task_fields,
)
from deskhand_d.jev.trace import NoTrace, Recorder
from deskhand_d.jev.types import Decision, Prepared
from deskhand_d.native.handoff import INSTRUCTION, HandoffBrief, candidate_briefs
from deskhand_d.native.turnbudget import TurnBudget

UNCHANGED_LIMIT = 3
DONE_THRESHOLD = 0.9
HISTORY = 6
TraceHook = Callable[[str, dict[str, Any]], None]
Emit = Callable[..., Awaitable[None]]


class Desk(Protocol):
    async def observe(self) -> str: ...

    async def act(self, prepared: Prepared) -> None: ...


class Decider(Protocol):
    async def decide(
        self,
        *,
        goal: str,
        app: str,
        candidates: Sequence[Candidate],
        context: str,
        recent_actions: Sequence[str],
        constraints: str,
        on_event: TraceHook | None = None,
    ) -> Decision: ...


class _Finish(Exception):  # control flow only: never escapes the loop
    def __init__(self, ending: Ending) -> None:
        self.ending = ending


class TaskLoop:
    def __init__(
        self,
        task: Task,
        *,
        desk: Desk,
        decider: Decider,
        budget: TurnBudget,
        allowed: Callable[[str], bool],
        emit: Emit | None = None,
        trace: Recorder | None = None,
    ) -> None:
        self.task = task
        self.desk = desk
        self.decider = decider
        self.budget = budget
        self.allowed = allowed
        self._emit = emit
        self.trace: Recorder = trace if trace is not None else NoTrace()
        self.phase = "start"
        self.steps = 0
        self.history: list[str] = []
        self._unchanged = 0
        self._snapshot = 0
        self._started = 0.0

    async def emit(self, **fields: Any) -> None:
        if self._emit is not None:
            await self._emit(**fields)

    def _end(self, status: str, reason: str, **extra: Any) -> _Finish:
        return _Finish(Ending(status=status, reason=reason, steps=self.steps, **extra))

    def _check_budget(self) -> None:
        spent = self.budget.exhausted(trio.current_time())
        if spent is not None:
            raise self._end("stop", spent)

    def _ms(self) -> int:
        return round((trio.current_time() - self._started) * 1000)

    async def _observe(self, phase: str, step: int, at: str, snapshot: int) -> tuple[str, ax.Tree]:
        self.phase = phase
        text = await self.desk.observe()
        self._snapshot = snapshot
        self.trace.event("snapshot", step=step, at=at, snapshotId=snapshot, ax=text)
        self.phase = "parse"
        try:
            return text, ax.parse(text)
        except ax.AxParseError as exc:
            raise self._end("error", "parse_failed", detail=str(exc)) from None

    def _verify(self, step: int, at: str, tree: ax.Tree) -> bool:
        verify = self.task.verify
        passed = verify.matches(tree) if verify is not None else None
        self.trace.event(
            "verification",
            step=step,
            at=at,
            snapshotId=self._snapshot,
            enabled=verify is not None,
            passed=passed,
        )
        return bool(passed)

    async def run(self) -> Ending:
        self._started = trio.current_time()
        try:
            self.trace.event("start")
            self.trace.event("task", **task_fields(self.task))
            await self._run()
        except _Finish as done:
            ending = done.ending
        except E.DeskhandError as exc:  # the desk, Jev or the trace refused or failed
            ending = refusal_ending(exc, self.steps)
            self._record_quietly(
                "failure",
                step=self.steps,
                phase=self.phase,
                errorName=exc.code,
                errorMessage=exc.message,
                outcomeUnknown=ending.outcome_unknown,
                # the same delivery value the reply and the audit line carry
                delivery=exc.delivery,
                delivered=exc.delivered.to_data() if exc.delivered is not None else None,
            )
        ending.trace_incomplete = self.trace.failed
        self._record_quietly("outcome", step=self.steps, phase=self.phase, result=ending.as_dict())
        self._record_quietly(
            "finish",
            status=ending.status,
            reason=ending.reason,
            elapsedMs=self._ms(),
            step=self.steps,
        )
        ending.trace_incomplete = self.trace.failed
        self.phase = "finished"
        await self.emit(
            step=self.steps,
            phase="finished",
            line=f"{ending.status}: {ending.reason} ({ending.steps} actions)",
        )
        return ending

    def _record_quietly(self, name: str, **fields: Any) -> None:
        """Closing events: a trace that already failed stays failed; the run is over anyway."""
        try:
            self.trace.event(name, **fields)
        except E.TraceIncomplete:
            pass

    async def _run(self) -> None:
        text, tree = await self._observe("observe", 0, "initial", 1)
        for step in range(1, self.task.max_steps + 1):
            self._check_budget()
            if self._verify(step, "before_decision", tree):
                raise self._end("done", "verified", verified=True)
            text, tree = await self._step(step, text, tree)
        raise self._end("max_steps", "step_budget_exhausted")

    async def _decide(self, step: int, tree: ax.Tree, selection: ax.Selection) -> Decision:
        task = self.task
        context = build_context(tree)
        recent = self.history[-HISTORY:]
        self.trace.event(
            "decision_input",
            step=step,
            snapshotId=self._snapshot,
            totalCandidates=selection.total,
            clipped=selection.clipped,
            input={
                "goal": task.goal,
                "app": task.app,
                "candidates": [
                    {"index": c.index, "role": c.role, "label": c.label, "score": c.score}
                    for c in selection.candidates
                ],
                "context": context,
                "recentActions": recent,
                "constraints": task.constraint_text(),
            },
        )
        self.phase = "decide"

        def exchange(kind: str, data: dict[str, Any]) -> None:
            # An error event carries its own "kind" (timeout, network...): keep both.
            fields = {("error" if k == "kind" else k): v for k, v in data.items()}
            self.trace.event("jev", step=step, exchange={"kind": kind, **fields})

        return await self.decider.decide(
            goal=task.goal,
            app=task.app,
            candidates=selection.candidates,
            context=context,
            recent_actions=recent,
            constraints=task.constraint_text(),
            on_event=exchange,
        )

    async def _step(self, step: int, text: str, tree: ax.Tree) -> tuple[str, ax.Tree]:
        task, trace = self.task, self.trace
        self.phase = "parse"
        selection = ax.select_candidates(tree, task.goal, task.candidate_max)
        if not selection.candidates:
            raise self._end("escalate", "no_candidates")
        decision = await self._decide(step, tree, selection)
        shown = {c.index: c for c in selection.candidates}
        picked = shown.get(decision.target_index) if decision.target_index is not None else None
        target = picked.element if picked is not None else None  # the one read whole
        trace.event(
            "decision_output",
            step=step,
            snapshotId=self._snapshot,
            decision=decision_dict(decision),
            target=element_dict(target),
        )
        facts: dict[str, Any] = {"decision": decision_dict(decision)}
        if not policy.is_valid(decision):
            raise self._end("escalate", "invalid_decision", **facts)
        if decision.target_index is not None and target is None:
            raise self._end("escalate", "unknown_target", **facts)
        assert decision.done is not None
        if decision.done >= DONE_THRESHOLD:
            if task.verify is not None:
                raise self._end("escalate", "verification_not_satisfied", **facts)
            raise self._end("model_done", "model_claimed_completion", **facts)
        if decision.action == "ask_user":
            raise self._end("confirm", "model_requested_user", **facts)
        self.phase = "prepare"
        resources = {k: getattr(task.resources, k) for k in ("text", "key", "direction")}
        trace.event("action_prepared", step=step, resources=resources, status="preparing")
        try:
            prepared = policy.prepare(decision, task.resources)
        except policy.PrepareError:
            raise self._end("escalate", "invalid_action_resources", **facts) from None
        trace.event(
            "action_prepared",
            step=step,
            status="prepared",
            action=action_dict(prepared),
            target=element_dict(target),
        )
        gate = policy.evaluate(
            app=task.app,
            allowed=self.allowed,
            decision=decision,
            target=target,
            prepared=prepared,
            focus=tree.focus,
        )
        trace.event("gate", step=step, gate={"verdict": gate.verdict, "reason": gate.reason})
        trace.event(
            "decision",
            step=step,
            action=prepared.kind,
            index=decision.target_index,
            confidence=decision.confidence,
            risk=decision.risk,
            done=decision.done,
            latencyMs=decision.latency_ms,
            status=gate.verdict,
            reason=gate.reason,
            candidateCount=len(selection.candidates),
        )
        facts.update(planned=prepared_dict(prepared), target=brief(target))
        await self.emit(
            step=step,
            phase="decided",
            line=(
                f"step {step}: {len(selection.candidates)}/{selection.total} candidates, "
                f"{prepared.kind} -> {gate.verdict} ({gate.reason})"
            ),
            action=prepared.kind,
            gate=gate.verdict,
            candidates=len(selection.candidates),
            total=selection.total,
        )
        if gate.verdict != "proceed":
            if policy.handoff_reason(gate):
                handoff = self._handoff(tree, selection)
                raise self._end("needs_planner", gate.reason, handoff=handoff, **facts)
            raise self._end(gate.verdict, gate.reason, **facts)
        if task.dry_run:
            raise self._end("dry_run", "preview_only", **facts)
        _, again = await self._observe("preflight_observe", step, "preflight", 2 * step)
        same_target = target is None or (
            (found := ax.find(again, target.index)) is not None
            and (found.role, found.label) == (target.role, target.label)
        )
        recheck = ax.select_candidates(again, task.goal, task.candidate_max)
        if not same_target or candidate_key(recheck) != candidate_key(selection):
            raise self._end("escalate", "observation_changed_before_action", **facts)
        self._check_budget()
        self.budget.spend()
        trace.event(
            "dispatch_start",
            step=step,
            snapshotId=self._snapshot,
            appName=task.app,
            method=prepared.kind,
            arguments=action_dict(prepared),
            action=prepared.kind,
            target=element_dict(target),
        )
        self.phase = "execute"
        began = trio.current_time()
        await self.desk.act(prepared)
        self.steps += 1
        elapsed = round((trio.current_time() - began) * 1000)
        trace.event(
            "dispatch_return",
            step=step,
            methodReturned=True,
            completedCalls=self.steps,
            elapsedMs=elapsed,
        )
        await self.emit(
            step=step,
            phase="dispatched",
            line=f"step {step}: {prepared.kind} dispatched",
            action=prepared.kind,
        )
        after_text, after = await self._observe(
            "post_action_observe", step, "after_action", 2 * step + 1
        )
        changed = after_text != text
        self._unchanged = 0 if changed else self._unchanged + 1
        trace.event("action", step=step, action=prepared.kind, changed=changed, elapsedMs=elapsed)
        self.history.append(summarize_action(prepared.kind, target, tree, after, changed))
        del self.history[:-HISTORY]
        if self._verify(step, "after_action", after):
            raise self._end("done", "verified", verified=True)
        if self._unchanged >= UNCHANGED_LIMIT:
            raise self._end("escalate", "repeated_no_change")
        return after_text, after

    def _handoff(self, tree: ax.Tree, selection: ax.Selection) -> HandoffBrief:
        briefs, truncated = candidate_briefs(selection.candidates)
        return HandoffBrief(
            remaining_steps=self.task.max_steps - self.steps,
            context=build_context(tree)[:600],
            recent_actions=tuple(h[:240] for h in self.history[-3:]),
            candidates=briefs,
            candidates_truncated=truncated,
            instruction=INSTRUCTION,
        )
