"""Deskhand's consent at every dispatch: identify the app, decide, ask the person, remember.

The trio shell around :mod:`.model`. :meth:`ConsentGate.admit` runs after the allowlist and
before the action queue for every op that names an app (observations, actions, launches, in
every mode). It resolves the app's identity through the platform (cached while the platform's
cheap stamp of the executable is unchanged), decides from the saved grants and what the task
remembers, and otherwise asks the requesting client a ``question`` of kind ``app_consent``.

* **One question per app per task.** Selections of the same identity within one task queue on
  a lock; whoever waited decides again from what the first answer recorded.
* **Nobody to ask** (the client declared it cannot answer and no console is connected, or it
  went away) → deny, and nothing is remembered, so a person can still say yes later. A question
  nobody answers expires (``question_expired``), likewise remembered nowhere.
* **Revocation wins races.** Every revocation bumps an epoch. An answer that arrives after a
  revocation began is void (``consent_denied``, reason ``revoked_meanwhile``), and an "always"
  is written inside the grants mutation queue only if no revocation started since the question
  was asked, so a decision in flight can never restore access the person has just revoked.
* **Cold selection.** Whenever a question was asked, the identity is resolved again, uncached,
  right before the dispatch (which may launch the app: Sky's ``get_app_state`` does); if it
  changed while the person decided, nothing is dispatched (``identity_changed``).
* **Instances.** A task grant is bound to the process the backend reports on the first
  observation; if a later observation shows another process the caller asks again before
  using that observation (:meth:`ConsentGate.observed`).
"""

from __future__ import annotations

import os
import shlex
from collections.abc import Awaitable, Callable, Hashable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Literal

import msgspec
import structlog
import trio

from deskhand_d import errors as E
from deskhand_d.consent import model
from deskhand_d.consent.grants import GrantsStore, SavedGrant
from deskhand_d.consent.identity import AppIdentity, IdentityPlatform, IdentityUnavailable
from deskhand_d.consent.model import Choice, TaskConsent
from deskhand_d.nextsteps import PROTOCOL, Words

log = structlog.get_logger("deskhand.consent")

ConsentAsker = Callable[[str, tuple[Choice, ...], str], Awaitable[Choice]]
"""(question text, choices, app) → the person's choice. Raises trio.Cancelled if nobody
answers before the request ends."""

IDENTITY_TTL_S = 60.0  # re-resolve names at least this often even if the stamp is unchanged


@dataclass(frozen=True, slots=True)
class Admission:
    identity: AppIdentity
    source: Literal["saved", "task"]


@dataclass(slots=True)
class _Cached:
    identity: AppIdentity
    stamp: Hashable
    at: float


class ConsentGate:
    def __init__(
        self,
        *,
        platform: IdentityPlatform,
        store: GrantsStore,
        generation: Callable[[], int],
    ) -> None:
        self.platform = platform
        self.store = store
        self._backend_generation = generation
        self.revocations = 0
        self._identities: dict[str, _Cached] = {}
        self._selecting: dict[tuple[int, str], trio.Lock] = {}
        self._saved: tuple[Hashable, list[SavedGrant]] | None = None
        self.questions_asked = 0
        # Revocations in force but not yet in grants.json (its disk was full, say): grant key
        # -> when it was revoked. They override the file until a write succeeds.
        self.unsaved_revocations: dict[str, str] = {}
        self._last_save_try = float("-inf")

    # ----- what the decision needs ------------------------------------------------------------

    def generation(self) -> int:
        """Changes whenever the backend process changes or a revocation closes it. Both
        counters only grow, so their sum changes whenever either does."""
        return self._backend_generation() + self.revocations

    def saved(self) -> list[SavedGrant]:
        """grants.json, re-read (with its safety checks) whenever the file changes."""
        try:
            st = os.stat(self.store.path)
            key: Hashable = (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode)
        except FileNotFoundError:
            key = None
        if self._saved is None or self._saved[0] != key:
            self._saved = (key, self.store.read())
        grants = self._saved[1]
        if not self.unsaved_revocations:
            return grants
        pending = self.unsaved_revocations
        return [
            msgspec.structs.replace(g, revoked_at=pending[g.key])
            if g.active and g.key in pending
            else g
            for g in grants
        ]

    async def identify(self, app: str, *, fresh: bool = False) -> AppIdentity:
        now = trio.current_time()
        cached = self._identities.get(app)
        if not fresh and cached is not None and now - cached.at < IDENTITY_TTL_S:
            try:
                if self.platform.stamp(cached.identity) == cached.stamp:
                    return cached.identity
            except OSError:
                pass
        try:
            identity = await trio.to_thread.run_sync(self.platform.identify, app)
            stamp = self.platform.stamp(identity)
        except (IdentityUnavailable, OSError) as exc:
            self._identities.pop(app, None)
            raise E.AppUnidentified(
                f"cannot tell which program {app!r} is without launching it: {exc}",
                data={"app": app},
                delivery="refused",
            ) from None
        self._identities[app] = _Cached(identity, stamp, now)
        return identity

    # ----- the gate ---------------------------------------------------------------------------

    async def admit(
        self,
        task: TaskConsent,
        app: str,
        *,
        ask: ConsentAsker | None,
        client: str,
        task_id: int,
        instance: int | None = None,
        words: Words = PROTOCOL,
    ) -> Admission:
        """Allow the dispatch or raise ConsentDenied / AppUnidentified / IdentityChanged.

        ``task_id`` identifies the task for serializing questions (the session object's id is
        fine); ``instance`` is the pid the caller's observation saw, for actions; ``words``
        name the next step in a refusal for the caller's client.
        """
        identity = await self.identify(app)
        decision = model.decide(
            task, identity, self.saved(), generation=self.generation(), instance=instance
        )
        if isinstance(decision, model.Allow):
            return Admission(identity, decision.source)
        if isinstance(decision, model.Deny):
            raise self._denied(identity, "refused_this_task", words)
        key = (task_id, identity.key)
        lock = self._selecting.setdefault(key, trio.Lock())
        try:
            async with lock:
                return await self._settle(task, identity, ask, client, instance, words)
        finally:
            if not lock.locked() and not lock.statistics().tasks_waiting:
                self._selecting.pop(key, None)

    async def _settle(
        self,
        task: TaskConsent,
        identity: AppIdentity,
        ask: ConsentAsker | None,
        client: str,
        instance: int | None,
        words: Words,
    ) -> Admission:
        # Decide again: the request we queued behind may have settled it.
        generation = self.generation()
        decision = model.decide(
            task, identity, self.saved(), generation=generation, instance=instance
        )
        if isinstance(decision, model.Allow):
            return Admission(identity, decision.source)
        if isinstance(decision, model.Deny):
            raise self._denied(identity, "refused_this_task", words)
        if ask is None:
            raise self._denied(identity, "no_one_to_ask", words)
        epoch = self.revocations
        text = self.question_text(identity, client, restarted=decision.restarted)
        try:
            choice = await ask(text, decision.choices, identity.app)
        except E.NoOneToAsk:
            raise self._denied(identity, "no_one_to_ask", words) from None
        except E.QuestionExpired as exc:
            self.questions_asked += 1
            raise self._expired(identity, exc) from None
        self.questions_asked += 1
        if choice not in decision.choices:
            choice = "deny"
        if self.revocations != epoch:
            raise self._denied(identity, "revoked_meanwhile", words)
        log.info("consent.answered", app=identity.app, kind=identity.kind, choice=choice)
        if choice == "deny":
            task.record(identity, "deny", generation=generation)
            raise self._denied(identity, "declined", words)
        if choice == "always":

            def save(file: object) -> bool:
                # Runs inside the mutation queue: a revocation that began after the question
                # was asked has bumped the epoch, and then nothing is written.
                if self.revocations != epoch:
                    return False
                self.store.file.add(identity)
                return True

            if not await self.store.mutate(save):
                raise self._denied(identity, "revoked_meanwhile", words)
        # Cold selection: the person took their time; check the program again before it is
        # launched or touched.
        again = await self.identify(identity.app, fresh=True)
        if again.key != identity.key or again.path != identity.path:
            raise E.IdentityChanged(
                f"{identity.app!r} changed on disk while you were deciding ({identity.path}); "
                "nothing was launched or sent; ask again",
                data={"app": identity.app},
                delivery="refused",
            )
        task.record(identity, choice, generation=self.generation())
        return Admission(identity, "saved" if choice == "always" else "task")

    async def observed(
        self,
        task: TaskConsent,
        admission: Admission,
        pid: int | None,
        *,
        ask: ConsentAsker | None,
        client: str,
        task_id: int,
        words: Words = PROTOCOL,
    ) -> None:
        """After an observation: bind the task grant to the process the backend saw, or, if
        the grant belongs to another process (the app restarted), ask again first."""
        if admission.source != "task" or model.after_observation(task, admission.identity, pid):
            return
        again = await self.admit(
            task,
            admission.identity.app,
            ask=ask,
            client=client,
            task_id=task_id,
            instance=pid,
            words=words,
        )
        model.after_observation(task, again.identity, pid)

    # ----- revocation -------------------------------------------------------------------------

    def begin_revocation(self) -> None:
        """Void every open question and lapse every task grant (call before the file write)."""
        self.revocations += 1
        self._identities.clear()

    def revoke_now(self, app: str) -> list[SavedGrant]:
        """Revoke every active saved grant ``app`` names, in this daemon, at once: it holds
        from this moment whether or not grants.json can be written (see :meth:`save_revocations`).
        Raises GrantNotFound when none matches."""
        matching = [g for g in self.saved() if g.active and g.names(app)]
        if not matching:
            raise E.GrantNotFound(
                f"no active saved grant matches {app!r}; `deskhandctl grants list` shows them",
                data={"app": app},
            )
        self.begin_revocation()
        now = datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")
        for g in matching:
            self.unsaved_revocations.setdefault(g.key, now)
        return [msgspec.structs.replace(g, revoked_at=now) for g in matching]

    def restore_now(self, app: str) -> list[SavedGrant]:
        """Withdraw revocations of ``app`` that were never saved; returns the grants so
        restored (the file still has them active)."""
        restored = [
            g
            for g in self.store.read()
            if g.active and g.names(app) and g.key in self.unsaved_revocations
        ]
        for g in restored:
            del self.unsaved_revocations[g.key]
        return restored

    async def save_revocations(self) -> str:
        """Write revocations that are in force but not saved; ``""`` when all are saved, else
        why the file could not be written (they stay in force here meanwhile)."""
        pending = dict(self.unsaved_revocations)
        if not pending:
            return ""
        self._last_save_try = trio.current_time()
        try:
            await self.store.mutate(lambda f: f.revoke_keys(set(pending)))
        except (E.GrantsFileError, OSError) as exc:
            return getattr(exc, "message", None) or str(exc)
        for key, when in pending.items():
            if self.unsaved_revocations.get(key) == when:
                del self.unsaved_revocations[key]
        return ""

    async def retry_unsaved(self, every_s: float = 1.0) -> None:
        """Try again, now and then, to save revocations a full disk kept out of the file."""
        if self.unsaved_revocations and trio.current_time() - self._last_save_try >= every_s:
            problem = await self.save_revocations()
            if problem:
                log.warning("consent.revocation_unsaved", problem=problem)

    # ----- words ------------------------------------------------------------------------------

    @staticmethod
    def question_text(identity: AppIdentity, client: str, *, restarted: bool) -> str:
        what = "was restarted; " if restarted else ""
        return (
            f"{client} wants to operate {identity.app!r}, which {what}is the program "
            f"{identity.describe()}. Allow it for this task"
            + (", always allow this exact program," if identity.verifiable else "")
            + " or deny?"
        )

    def revoked_grant(self, identity: AppIdentity) -> bool:
        """Is there a revoked saved grant for exactly this program (which ``grants restore``
        would give back)?"""
        return any(
            not g.active and g.key == identity.key and g.path == identity.path for g in self.saved()
        )

    @staticmethod
    def _expired(identity: AppIdentity, exc: E.QuestionExpired) -> E.QuestionExpired:
        waited = exc.data.get("waited_s", 0)
        return E.QuestionExpired(
            f"Deskhand may not operate {identity.app!r}: nobody answered the consent question "
            f"in {waited:g} s, so it expired. Nothing was sent, nothing is remembered, and the "
            "next request for it asks again.",
            data={"app": identity.app, "waited_s": waited},
        )

    def _denied(self, identity: AppIdentity, reason: str, words: Words) -> E.ConsentDenied:
        """The refusal, with the next step that is true for this case and this client."""
        app, person = identity.app, words.person()
        if reason == "declined":
            text = (
                f"{person} said no. Nothing was sent, and Deskhand does not ask again in this "
                f"turn; it asks again in a new turn ({words.new_turn()})"
            )
        elif reason == "refused_this_task":
            text = (
                f"{person} already said no to it in this turn, and Deskhand does not ask twice "
                f"in one turn. Nothing was sent; it asks again in a new turn "
                f"({words.new_turn()})"
            )
        elif reason == "no_one_to_ask":
            text = f"{words.cannot_ask(app, identity.verifiable)}. Nothing was sent"
        else:  # revoked_meanwhile
            text = (
                "access to it was revoked while the question was open. Nothing was sent; "
                "`deskhandctl grants list` shows what is allowed now"
            )
        data: dict[str, object] = {"app": app, "reason": reason}
        if reason != "revoked_meanwhile" and self.revoked_grant(identity):
            data["revoked_grant"] = True
            text += (
                f". {person[:1].upper()}{person[1:]} saved a grant for this exact program "
                f"earlier and revoked it: `deskhandctl grants restore {shlex.quote(app)}` gives "
                "it back"
            )
        return E.ConsentDenied(
            f"Deskhand may not operate {app!r}: {text}.",
            data=data,
            delivery="refused",
        )
