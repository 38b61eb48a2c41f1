"""The Jev task loop: observe, choose candidates, ask Jev, gate, act once, observe, verify.

The trio shell around the pure pieces (:mod:`.ax`, :mod:`.policy`, :mod:`.handoff`,
:mod:`.budget`). It reaches the desktop only through a :class:`Desk` (in the daemon: the native
service, so every observation and action passes the same lock, allowlist, consent and action
queue as native ops) and Jev only through a :class:`Decider`.

Rules the loop keeps (see ``docs/jev.md``):

* **Nothing is retried**: not a decision, not an observation, not an action.
* **Re-read before acting**: right before the dispatch the tree is read again; the step goes
  ahead only if the chosen target still has the same index, role and label and the candidate
  set is the same (so a ticking clock elsewhere does not abort it); anything else hands back.
* **Honest endings**: ``done`` only when the verify spec matches the tree; Jev's own claim is
  ``model_done``; a failure after a dispatch began is ``outcome_unknown``; three observations in a
  row that an action did not change stop the run.
* **Budgets**: the turn's shared budget (time and action attempts) is checked before every step
  and before every dispatch; an attempt is charged before it is dispatched.
* **Phases**: :attr:`TaskLoop.phase` says where the loop is, so a cancellation can be reported
  precisely (before ``execute`` nothing was dispatched; during it the outcome is unknown).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Protocol

import trio

from deskhand_d import errors as E
from deskhand_d.jev import ax as ax
from deskhand_d.jev import policy
from deskhand_d.jev.budget import TurnBudget
from deskhand_d.jev.handoff import INSTRUCTION, candidate_briefs
from deskhand_d.jev.types import Candidate, Decision, Element, Prepared, Resources

UNCHANGED_LIMIT = 3
DONE_THRESHOLD = 0.9
HISTORY = 6


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
    ) -> Decision: ...


@dataclass(frozen=True, slots=True)
class Verify:
    role: str
    label_equals: str

    def matches(self, tree: ax.Tree) -> bool:
        want = _plain(self.label_equals)
        return any(e.role == self.role and _plain(e.label) == want for e in tree.elements)


@dataclass(frozen=True, slots=True)
class Task:
    app: str
    goal: str
    dry_run: bool = False
    max_steps: int = 5
    candidate_max: int = 40
    verify: Verify | None = None
    plan: str = ""
    constraints: tuple[str, ...] = ()
    resources: Resources = field(default_factory=Resources)


@dataclass(slots=True)
class Ending:
    status: str
    reason: str
    steps: int
    verified: bool = False
    outcome_unknown: bool = False
    decision: dict[str, Any] | None = None
    planned: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    handoff: dict[str, Any] | None = None  # the handoff's contents; the caller mints the token


Emit = Callable[..., Awaitable[None]]


def _plain(text: str) -> str:
    """Compare labels without invisible format characters (the display's U+200E, say)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf").strip()


def _brief(element: Element | None) -> dict[str, Any] | None:
    return None if element is None else {"role": element.role, "label": element.label[:300]}


def _candidate_key(selection: ax.Selection) -> tuple[tuple[int, str, str], ...]:
    return tuple((c.element.index, c.element.role, c.element.label) for c in selection.candidates)


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
    ) -> None:
        self.task = task
        self.desk = desk
        self.decider = decider
        self.budget = budget
        self.allowed = allowed
        self._emit = emit
        self.phase = "start"
        self.steps = 0
        self.history: list[str] = []
        self._unchanged = 0

    async def emit(self, **fields: Any) -> None:
        if self._emit is not None:
            await self._emit(**fields)

    def _end(self, status: str, reason: str, **extra: Any) -> _Finish:
        return _Finish(Ending(status=status, reason=reason, steps=self.steps, **extra))

    def _check_budget(self) -> None:
        spent = self.budget.exhausted(trio.current_time())
        if spent is not None:
            raise self._end("stop", spent)

    async def _observe(self, phase: str) -> tuple[str, ax.Tree]:
        self.phase = phase
        text = await self.desk.observe()
        self.phase = "parse"
        try:
            return text, ax.parse(text)
        except ax.AxParseError:
            raise self._end("error", "parse_failed") from None

    async def run(self) -> Ending:
        try:
            await self._run()
        except _Finish as done:
            ending = done.ending
        except E.DeskhandError as exc:  # the desk or Jev refused or failed
            ending = refusal_ending(exc, self.steps)
        else:  # pragma: no cover - _run always finishes by raising
            raise AssertionError("the loop ended without an ending")
        self.phase = "finished"
        await self.emit(
            step=self.steps,
            phase="finished",
            line=f"{ending.status}: {ending.reason} ({ending.steps} actions)",
        )
        return ending

    async def _run(self) -> None:
        task = self.task
        text, tree = await self._observe("observe")
        for step in range(1, task.max_steps + 1):
            self._check_budget()
            if task.verify is not None and task.verify.matches(tree):
                raise self._end("done", "verified", verified=True)
            text, tree = await self._step(step, text, tree)
        raise self._end("max_steps", "step_budget_exhausted")

    async def _step(self, step: int, text: str, tree: ax.Tree) -> tuple[str, ax.Tree]:
        task = self.task
        selection = ax.select_candidates(tree, task.goal, task.candidate_max)
        if not selection.candidates:
            raise self._end("escalate", "no_candidates")
        self.phase = "decide"
        decision = await self.decider.decide(
            goal=task.goal,
            app=task.app,
            candidates=selection.candidates,
            context=ax.build_context(tree),
            recent_actions=self.history[-HISTORY:],
            constraints="\n".join(
                p
                for p in (
                    f"Plan (from planner): {task.plan}" if task.plan else "",
                    *task.constraints,
                )
                if p
            ),
        )
        shown = {c.element.index: c.element for c in selection.candidates}
        facts: dict[str, Any] = {"decision": _decision_dict(decision)}
        if not policy.is_valid(decision):
            raise self._end("escalate", "invalid_decision", **facts)
        target = shown.get(decision.target_index) if decision.target_index is not None else None
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
        try:
            prepared = policy.prepare(decision, task.resources)
        except policy.PrepareError:
            raise self._end("escalate", "invalid_action_resources", **facts) from None
        gate = policy.evaluate(
            app=task.app,
            allowed=self.allowed,
            decision=decision,
            target=target,
            prepared=prepared,
            focus=tree.focus,
        )
        facts.update(planned=_prepared_dict(prepared), target=_brief(target))
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
                raise self._end(
                    "needs_planner", gate.reason, handoff=self._handoff(tree, selection), **facts
                )
            raise self._end(gate.verdict, gate.reason, **facts)
        if task.dry_run:
            raise self._end("dry_run", "preview_only", **facts)
        _, again = await self._observe("preflight_observe")
        same_target = target is None or (
            (found := ax.find(again, target.index)) is not None
            and (found.role, found.label) == (target.role, target.label)
        )
        recheck = ax.select_candidates(again, task.goal, task.candidate_max)
        if not same_target or _candidate_key(recheck) != _candidate_key(selection):
            raise self._end("escalate", "observation_changed_before_action", **facts)
        self._check_budget()
        self.budget.spend()
        self.phase = "execute"
        await self.desk.act(prepared)
        self.steps += 1
        await self.emit(
            step=step,
            phase="dispatched",
            line=f"step {step}: {prepared.kind} dispatched",
            action=prepared.kind,
        )
        after_text, after = await self._observe("post_action_observe")
        changed = after_text != text
        self._unchanged = 0 if changed else self._unchanged + 1
        self.history.append(ax.summarize_action(prepared.kind, target, tree, after, changed))
        del self.history[:-HISTORY]
        if task.verify is not None and task.verify.matches(after):
            raise self._end("done", "verified", verified=True)
        if self._unchanged >= UNCHANGED_LIMIT:
            raise self._end("escalate", "repeated_no_change")
        return after_text, after

    def _handoff(self, tree: ax.Tree, selection: ax.Selection) -> dict[str, Any]:
        briefs, truncated = candidate_briefs(selection.candidates)
        return {
            "remaining_steps": self.task.max_steps - self.steps,
            "context": ax.build_context(tree)[:600],
            "recent_actions": [h[:240] for h in self.history[-3:]],
            "candidates": briefs,
            "candidates_truncated": truncated,
            "instruction": INSTRUCTION,
        }


def _decision_dict(d: Decision) -> dict[str, Any]:
    return {
        "action": d.action,
        "target_index": d.target_index,
        "confidence": d.confidence,
        "done": d.done,
        "risk": d.risk,
    }


def _prepared_dict(p: Prepared) -> dict[str, Any]:
    out: dict[str, Any] = {"kind": p.kind}
    for key in ("index", "key", "direction", "at", "start", "end"):
        value = getattr(p, key)
        if value is not None:
            out[key] = value
    if p.text is not None:
        out["text_length"] = len(p.text)  # the text itself stays out of replies and progress
    return out


def refusal_ending(exc: E.DeskhandError, steps: int) -> Ending:
    """How a run ends when the desk or Jev refuses or fails (not a cancellation)."""
    if isinstance(exc, E.OutcomeUnknown) or exc.data.get("delivery") == "unknown":
        return Ending(status="error", reason="outcome_unknown", steps=steps, outcome_unknown=True)
    refused = exc.data.get("delivery") == "refused" or isinstance(
        exc, E.ConsentDenied | E.AppNotAllowed | E.Locked | E.ApprovalDeclined | E.ApprovalCancelled
    )
    return Ending(status="stop" if refused else "error", reason=exc.code, steps=steps)
