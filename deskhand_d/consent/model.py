"""The consent decision for one dispatch, and what a task remembers. Pure: values in, values out.

A **task** is one turn of one session (clients that never mark turns get one turn per
session). Within it the person's answers are remembered: a task grant ("once") for an
identity, bound to the process instance the backend reports once it has observed one, and
refusals, so nobody is asked twice. Task grants also die with the backend process they were
given under ("connection lifetime"): after a revocation or a backend restart, apps without a
saved grant are asked about again.

Order of the decision (:func:`decide`):

1. an active saved grant for exactly this identity → allow (this is also how an explicitly
   restored grant beats an earlier refusal);
2. a refusal in this task of this identity or of this app name → deny, without asking;
3. a task grant for this identity under the current backend process, and (when both are
   known) the same process instance → allow;
4. otherwise ask; "always" is offered only for verifiable identities.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Literal

from deskhand_d.consent.grants import SavedGrant
from deskhand_d.consent.identity import AppIdentity

Choice = Literal["once", "always", "deny"]


@dataclass(frozen=True, slots=True)
class Allow:
    source: Literal["saved", "task"]


@dataclass(frozen=True, slots=True)
class Deny:
    reason: Literal["refused_this_task"]


@dataclass(frozen=True, slots=True)
class Ask:
    choices: tuple[Choice, ...]
    restarted: bool  # the task grant exists but the app's process changed since


Decision = Allow | Deny | Ask


@dataclass(slots=True)
class TaskGrant:
    generation: int  # backend process it was given under
    instance: int | None = None  # pid the backend reported for it; None until observed


@dataclass(slots=True)
class TaskConsent:
    """What one task has been told. Reset by :meth:`reset` when the turn changes."""

    grants: dict[str, TaskGrant] = field(default_factory=dict)  # identity key → grant
    refused_keys: set[str] = field(default_factory=set)
    refused_apps: set[str] = field(default_factory=set)  # casefolded names asked for

    def reset(self) -> None:
        self.grants.clear()
        self.refused_keys.clear()
        self.refused_apps.clear()

    def record(self, identity: AppIdentity, choice: Choice, *, generation: int) -> None:
        if choice == "deny":
            self.refused_keys.add(identity.key)
            self.refused_apps.add(identity.app.strip().casefold())
            self.grants.pop(identity.key, None)
        else:
            self.grants[identity.key] = TaskGrant(generation=generation)

    def bind(self, identity: AppIdentity, pid: int | None) -> None:
        """The backend observed this identity's process: tie the task grant to it."""
        grant = self.grants.get(identity.key)
        if grant is not None and pid is not None:
            grant.instance = pid


def saved_grant_for(identity: AppIdentity, saved: Iterable[SavedGrant]) -> SavedGrant | None:
    if not identity.verifiable:
        return None
    for g in saved:
        if g.active and g.key == identity.key and g.path == identity.path:
            return g
    return None


def choices_for(identity: AppIdentity) -> tuple[Choice, ...]:
    return ("once", "always", "deny") if identity.verifiable else ("once", "deny")


def decide(
    task: TaskConsent,
    identity: AppIdentity,
    saved: Iterable[SavedGrant],
    *,
    generation: int,
    instance: int | None,
) -> Decision:
    """See the module docstring. ``instance`` is the pid the app is known to run as, if any."""
    if saved_grant_for(identity, saved) is not None:
        return Allow("saved")
    if identity.key in task.refused_keys or identity.app.strip().casefold() in task.refused_apps:
        return Deny("refused_this_task")
    grant = task.grants.get(identity.key)
    restarted = False
    if grant is not None and grant.generation == generation:
        if grant.instance is None or instance is None or grant.instance == instance:
            return Allow("task")
        restarted = True
    return Ask(choices=choices_for(identity), restarted=restarted)


def after_observation(task: TaskConsent, identity: AppIdentity, pid: int | None) -> bool:
    """Bind a fresh task grant to the observed pid. False if it is bound to another process
    (the app was restarted under us: the caller must ask again before using the result)."""
    grant = task.grants.get(identity.key)
    if grant is None or pid is None:
        return True
    if grant.instance is None:
        grant.instance = pid
        return True
    return grant.instance == pid
