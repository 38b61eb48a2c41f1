"""What a Jev run is asked to do and how it ended, as values, plus their small conversions.

Pure. :class:`Task` is the request as the loop sees it; :class:`Ending` is the outcome the
``run`` reply and the trace's ``outcome`` event are built from. :func:`refusal_ending` maps a
refusal or failure from the desk or from Jev onto an ending (``outcome_unknown`` whenever an
action may have been sent).
"""

from __future__ import annotations

import unicodedata
from dataclasses import asdict, dataclass, field, replace
from typing import Any

import msgspec

from deskhand_d import ax
from deskhand_d import errors as E
from deskhand_d.ax import Element
from deskhand_d.jev.types import Decision, Prepared, Resources
from deskhand_d.native.handoff import HandoffBrief


def plain(text: str) -> str:
    """A label without invisible format characters (the display's U+200E, say)."""
    return "".join(c for c in text if unicodedata.category(c) != "Cf").strip()


@dataclass(frozen=True, slots=True)
class Verify:
    """Done means: some element has exactly this role and (ignoring format characters) label."""

    role: str
    label_equals: str

    def matches(self, tree: ax.Tree) -> bool:
        want = plain(self.label_equals)
        roles = tree.roles()  # only the elements with the role are read
        return any(
            plain(tree.element_at(at).label) == want
            for at, role in enumerate(roles)
            if role == self.role
        )


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

    def constraint_text(self) -> str:
        parts = (f"Plan (from planner): {self.plan}" if self.plan else "", *self.constraints)
        return "\n".join(p for p in parts if p)


@dataclass(slots=True)
class Ending:
    status: str
    reason: str
    steps: int
    verified: bool = False
    outcome_unknown: bool = False
    trace_incomplete: bool = False
    decision: dict[str, Any] | None = None
    planned: dict[str, Any] | None = None
    target: dict[str, Any] | None = None
    handoff: HandoffBrief | None = None  # what is handed back; the caller mints the token
    detail: str = ""  # for an ending a refusal or failure caused: its message, in words

    def as_dict(self) -> dict[str, Any]:
        """The ending as plain data, for the trace."""
        out = asdict(replace(self, handoff=None))
        out["handoff"] = None if self.handoff is None else msgspec.to_builtins(self.handoff)
        return out


def brief(element: Element | None) -> dict[str, Any] | None:
    return None if element is None else {"role": element.role, "label": element.label[:300]}


def decision_dict(d: Decision) -> dict[str, Any]:
    return {
        "action": d.action,
        "target_index": d.target_index,
        "confidence": d.confidence,
        "done": d.done,
        "risk": d.risk,
    }


def prepared_dict(p: Prepared) -> dict[str, Any]:
    """The prepared action for replies: typed text appears only as its length."""
    out: dict[str, Any] = {"kind": p.kind}
    for key in ("index", "key", "direction", "at", "start", "end"):
        value = getattr(p, key)
        if value is not None:
            out[key] = value
    if p.text is not None:
        out["text_length"] = len(p.text)
    return out


def candidate_key(selection: ax.Selection) -> tuple[tuple[int, str, str], ...]:
    return tuple((c.index, c.role, c.label) for c in selection.candidates)


def refusal_ending(exc: E.DeskhandError, steps: int) -> Ending:
    """How a run ends when the desk, Jev or the trace refuses or fails (not a cancellation)."""
    if exc.delivery in ("unknown", "partial"):
        return Ending(
            status="error",
            reason="outcome_unknown",
            steps=steps,
            outcome_unknown=True,
            detail=f"{exc.code}: {exc.message}",
        )
    refused = exc.delivery == "refused" or isinstance(
        exc, E.ConsentDenied | E.AppNotAllowed | E.Locked | E.ApprovalDeclined | E.ApprovalCancelled
    )
    return Ending(
        status="stop" if refused else "error", reason=exc.code, steps=steps, detail=exc.message
    )


def element_dict(e: Element | None) -> dict[str, Any] | None:
    return None if e is None else {"index": e.index, "role": e.role, "label": e.label}


def action_dict(p: Prepared) -> dict[str, Any]:
    """The whole prepared action, typed text included (for full traces only)."""
    return {f: getattr(p, f) for f in p.__struct_fields__ if getattr(p, f) is not None}


def task_fields(t: Task) -> dict[str, Any]:
    """The full trace's ``task`` event."""
    spec = t.verify
    return {
        "appName": t.app,
        "goal": t.goal,
        "dryRun": t.dry_run,
        "maxSteps": t.max_steps,
        "candidateMax": t.candidate_max,
        "plan": t.plan,
        "constraints": list(t.constraints),
        "resources": {k: getattr(t.resources, k) for k in ("text", "key", "direction")},
        "verification": {
            "enabled": spec is not None,
            "specification": None
            if spec is None
            else {"role": spec.role, "labelEquals": spec.label_equals},
        },
        "decider": "jev",
    }
