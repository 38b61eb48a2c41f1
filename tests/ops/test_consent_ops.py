"""Deskhand's consent through the ops, in-process: questions answered once, always or deny by
the test's person, a client nobody answers for, saved grants, revocation and restore, and
questions going only to the connection that asked.

Identities are staged in the catalogue of dhtest.consent_rig (Calculator signed by Apple,
TextEdit unsigned); the simulator's own approval prompt is preapproved for every app.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from typing import Any

import pytest
import trio
from dhtest.consent_rig import ALLOWED, default_catalog
from dhtest.inproc import Desk, FakeClient, answering, open_desk

from deskhand_d.errors import DeskhandError
from deskhand_d.protocol import (
    Done,
    GetAppState,
    Grants,
    GrantsList,
    GrantsRestore,
    GrantsRevoke,
    Observation,
    TurnEnd,
)


def staged_catalog(root: Path) -> dict[str, str]:
    catalog = root / "catalog.json"
    catalog.write_text(json.dumps(default_catalog()))
    return {"DESKHAND_IDENTITY_CATALOG": str(catalog), "DESKHAND_ALLOWED_APPS": ALLOWED}


@asynccontextmanager
async def consent_desk() -> AsyncIterator[Desk]:
    """Services with the staged catalogue and no saved grants: every app is asked about."""
    async with open_desk({"preapproved": ["*"]}, grants=(), setup=staged_catalog) as desk:
        yield desk


def saved(desk: Desk) -> list[dict[str, Any]]:
    path = desk.root / "config" / "deskhand" / "grants.json"
    if not path.exists():
        return []
    grants: list[dict[str, Any]] = json.loads(path.read_text())["grants"]
    return grants


async def observe(c: FakeClient, app: str = "Calculator") -> Observation:
    obs = await c.call(GetAppState(id=c.next_id(), app=app))
    assert isinstance(obs, Observation)
    return obs


async def denied(c: FakeClient, app: str = "Calculator") -> DeskhandError:
    with pytest.raises(DeskhandError) as info:
        await c.call(GetAppState(id=c.next_id(), app=app))
    assert info.value.code == "consent_denied" and info.value.delivery == "refused"
    return info.value


async def test_once_is_asked_once_per_task_and_never_saved() -> None:
    """ "once" admits the app for this task only: no second question in the task, nothing in
    grants.json, and the next task is asked again."""
    async with consent_desk() as desk:
        agent = await desk.client("agent", answer=answering("once", "once"))
        await observe(agent)
        await observe(agent)
        [q] = agent.questions
        assert (q.question, q.app, q.choices) == (
            "app_consent",
            "Calculator",
            ["once", "always", "deny"],
        )
        assert default_catalog()["apps"][0]["path"] in q.text
        assert saved(desk) == []
        assert isinstance(await agent.call(TurnEnd(id=agent.next_id())), Done)
        await observe(agent)
        assert len(agent.questions) == 2
        assert len(desk.calls("get_app_state")) == 3


async def test_always_is_saved_and_reused_by_later_tasks() -> None:
    """ "always" for a signed app is written to grants.json; later tasks are not asked."""
    async with consent_desk() as desk:
        agent = await desk.client("agent", answer=answering("always"))
        await observe(agent)
        assert [(g["app"], g["revoked_at"]) for g in saved(desk)] == [("Calculator", None)]
        await agent.call(TurnEnd(id=agent.next_id()))
        await observe(agent, "com.apple.calculator")  # the same program by its bundle id
        assert len(agent.questions) == 1
        listed = await agent.call(GrantsList(id=agent.next_id()))
        assert isinstance(listed, Grants) and [g.app for g in listed.grants] == ["Calculator"]


async def test_deny_is_refused_unsent_and_not_asked_again_in_the_task() -> None:
    """ "deny" refuses before the backend, and stays the answer for the rest of the task."""
    async with consent_desk() as desk:
        agent = await desk.client("agent", answer=answering("deny", "once"))
        await denied(agent)
        await denied(agent)
        await denied(agent, "com.apple.calculator")
        assert len(agent.questions) == 1 and desk.calls() == []
        await agent.call(TurnEnd(id=agent.next_id()))
        await observe(agent)
        assert len(agent.questions) == 2 and saved(desk) == []


async def test_an_unsigned_app_is_offered_once_or_deny_only() -> None:
    async with consent_desk() as desk:
        agent = await desk.client("agent", answer=answering("deny"))
        await denied(agent, "TextEdit")
        assert agent.questions[0].choices == ["once", "deny"]


async def test_nobody_to_ask_is_denied_and_nothing_is_remembered() -> None:
    """A client that cannot answer is refused (no_one_to_ask) without a question; a person
    who can is still asked afterwards."""
    async with consent_desk() as desk:
        deaf = await desk.client("deaf")
        err = await denied(deaf)
        assert err.data["reason"] == "no_one_to_ask" and deaf.events == []
        agent = await desk.client("agent", answer=answering("once"))
        await observe(agent)
        assert len(agent.questions) == 1 and saved(desk) == []


async def test_revoke_then_restore_a_saved_grant() -> None:
    """A revoked grant asks again (and a deny sticks for the task); restoring it admits
    without a question, on a fresh backend process."""
    async with consent_desk() as desk:
        agent = await desk.client("agent", answer=answering("always", "deny"))
        await observe(agent)
        admin = await desk.client("", name="deskhandctl")
        revoked = await admin.call(GrantsRevoke(id=admin.next_id(), app="Calculator"))
        assert isinstance(revoked, Grants) and revoked.grants[0].revoked_at
        assert revoked.cancelled == 0 and revoked.not_saved == ""
        assert [g["revoked_at"] is not None for g in saved(desk)] == [True]
        assert desk.services.backend.running_pid is None  # closed with the revocation
        await denied(agent)
        await denied(agent)
        assert len(agent.questions) == 2
        restored = await admin.call(GrantsRestore(id=admin.next_id(), app="Calculator"))
        assert isinstance(restored, Grants) and restored.grants[0].restored_at
        await observe(agent)
        assert len(agent.questions) == 2
        assert len({c["pid"] for c in desk.calls("get_app_state")}) == 2


async def test_questions_go_only_to_the_asking_connection() -> None:
    """Two connections of one session: the question reaches only the one whose request asked;
    the other cannot answer it (bad_request) and the first answer decides."""
    async with consent_desk() as desk:
        asker = await desk.client("shared", answers=True)
        bystander = await desk.client("shared", answers=True)
        assert asker.session is bystander.session
        rid = asker.next_id()
        async with trio.open_nursery() as nursery:
            pending = asker.start(nursery, GetAppState(id=rid, app="Calculator"))
            question = await asker.question()
            assert question.request_id == rid and bystander.events == []
            with pytest.raises(DeskhandError) as info:
                await bystander.answer_question(question, "always")
            assert info.value.code == "bad_request"
            assert isinstance(await asker.answer_question(question, "once"), Done)
            assert isinstance(await pending.wait(), Observation)
        assert bystander.events == [] and saved(desk) == []  # "once", not the bystander's "always"
        with pytest.raises(DeskhandError) as again:
            await asker.answer_question(question, "once")  # answered: no longer open
        assert again.value.code == "bad_request"
