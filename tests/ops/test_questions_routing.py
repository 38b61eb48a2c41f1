"""Questions reach the person wherever the person is: the asking client, or a console.

In-process, on real services and the simulator: a console (a connection that called
``questions_watch``) lists every open question with who asks and answers questions of clients
that cannot ask; the first answer counts; the asker is told when its question closes; a
question nobody answers expires (consent: ``question_expired``; the backend's approval:
``cancel``); without a console a client that cannot ask is refused at once, in words that say
what the person can do. Time passes only when a test jumps ``mock_clock`` (the simulator is a
real child process, so the autojump clock cannot be used).
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

import pytest
import trio
import trio.testing
from dhtest.consent_rig import ALLOWED, default_catalog
from dhtest.inproc import Desk, FakeClient, Pending, open_desk

from deskhand_d.errors import DeskhandError
from deskhand_d.ops.questions import Choice
from deskhand_d.protocol import (
    Answer,
    Done,
    GetAppState,
    Observation,
    QuestionClosed,
    QuestionList,
    QuestionPass,
    QuestionsWatch,
)

TIMEOUT_S = 300.0  # native.question_timeout_s by default


def staged_catalog(root: Path) -> dict[str, str]:
    catalog = root / "catalog.json"
    catalog.write_text(json.dumps(default_catalog()))
    return {"DESKHAND_IDENTITY_CATALOG": str(catalog), "DESKHAND_ALLOWED_APPS": ALLOWED}


@asynccontextmanager
async def consent_desk() -> AsyncIterator[Desk]:
    """No saved grants and the backend's own prompt preapproved: only consent is asked."""
    async with open_desk({"preapproved": ["*"]}, grants=(), setup=staged_catalog) as desk:
        yield desk


async def watch(c: FakeClient, after: int = 0, wait_s: float = 0.0) -> QuestionList:
    listed = await c.call(QuestionsWatch(id=c.next_id(), after=after, wait_s=wait_s))
    assert isinstance(listed, QuestionList)
    return listed


async def next_list(console: FakeClient, after: int) -> QuestionList:
    """The list once it has changed from version ``after`` (a real long poll)."""
    return await watch(console, after, wait_s=30.0)


async def answer(c: FakeClient, qid: str, choice: Choice) -> Done:
    done = await c.call(Answer(id=c.next_id(), question_id=qid, choice=choice))
    assert isinstance(done, Done)
    return done


def closings(c: FakeClient) -> list[QuestionClosed]:
    return [e for e in c.events if isinstance(e, QuestionClosed)]


async def refused(pending: Pending, code: str) -> DeskhandError:
    with pytest.raises(DeskhandError) as info:
        await pending.wait()
    assert info.value.code == code, info.value.message
    return info.value


@pytest.mark.parametrize("choice", ["once", "always", "deny"])
async def test_a_console_answers_the_consent_question_of_a_client_that_cannot_ask(
    choice: Choice,
) -> None:
    """The agent cannot ask; the console lists its question with who asks and answers it."""
    async with consent_desk() as desk:
        agent = await desk.client("agent-session", name="agent-x")
        console = await desk.client("console", answers=True, name="console")
        start = await watch(console)
        assert start.questions == []
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            listed = await next_list(console, start.version)
            [q] = listed.questions
            assert listed.version > start.version
            assert (q.kind, q.app, q.choices) == (
                "app_consent",
                "Calculator",
                ["once", "always", "deny"],
            )
            assert (q.client, q.client_pid, q.session) == ("agent-x", os.getpid(), "agent-session")
            assert "'Calculator'" in q.text and q.text.startswith("agent-x wants to operate")
            assert q.asked_s_ago >= 0 and 0 < q.expires_in_s <= TIMEOUT_S
            done = await answer(console, q.id, choice)
            assert done.detail == "answered from the console"
            if choice == "deny":
                err = await refused(pending, "consent_denied")
                assert err.data["reason"] == "declined"
            else:
                assert isinstance(await pending.wait(), Observation)
        assert agent.questions == []  # it said it cannot answer: never sent the question
        assert closings(agent) == [QuestionClosed(id=q.id, how="answered", by="console")]
        assert (await watch(console)).questions == []


async def test_the_first_answer_wins_and_a_later_one_is_told_so() -> None:
    """The asker can answer too; the console is first, so the asker's answer comes too late."""
    async with consent_desk() as desk:
        agent = await desk.client("agent", answers=True)
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            question = await agent.question()
            [listed] = (await next_list(console, start.version)).questions
            assert listed.id == question.id
            await answer(console, question.id, "deny")
            with pytest.raises(DeskhandError) as late:
                await agent.answer_question(question, "once")
            assert late.value.code == "bad_request"
            err = await refused(pending, "consent_denied")
            assert err.data["reason"] == "declined"
        assert closings(agent) == [QuestionClosed(id=question.id, how="answered", by="console")]


async def test_the_asker_answering_itself_closes_the_question_for_the_consoles() -> None:
    async with consent_desk() as desk:
        agent = await desk.client("agent", answers=True)
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            question = await agent.question()
            opened = await next_list(console, start.version)
            await agent.answer_question(question, "once")
            closed = await next_list(console, opened.version)
            assert closed.questions == []
            assert isinstance(await pending.wait(), Observation)
        assert closings(agent) == [QuestionClosed(id=question.id, how="answered", by="client")]


async def test_a_client_that_is_not_a_console_cannot_answer_anothers_question() -> None:
    async with consent_desk() as desk:
        agent = await desk.client("agent")
        console = await desk.client("console", answers=True)
        bystander = await desk.client("other", answers=True)  # could answer, never watched
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            [q] = (await next_list(console, start.version)).questions
            with pytest.raises(DeskhandError) as info:
                await answer(bystander, q.id, "always")
            assert info.value.code == "bad_request"
            assert "deskhandctl questions" in info.value.message
            await answer(console, q.id, "once")
            assert isinstance(await pending.wait(), Observation)


async def test_only_a_client_that_can_answer_may_be_a_console() -> None:
    async with consent_desk() as desk:
        mute = await desk.client("mute")
        with pytest.raises(DeskhandError) as info:
            await watch(mute)
        assert info.value.code == "cannot_answer_questions"
        assert "can_answer_questions" in info.value.message
        assert desk.services.questions.consoles == 0


async def test_without_a_console_a_client_that_cannot_ask_is_refused_at_once() -> None:
    """Refused before any question opens, naming what the person can do themselves."""
    async with consent_desk() as desk:
        agent = await desk.client("agent")
        with pytest.raises(DeskhandError) as info:
            await agent.call(GetAppState(id=agent.next_id(), app="Calculator"))
        err = info.value
        assert err.code == "consent_denied" and err.data["reason"] == "no_one_to_ask"
        assert err.delivery == "refused"
        assert "`deskhandctl questions`" in err.message
        assert "`deskhandctl apps add Calculator`" in err.message
        assert agent.events == [] and desk.services.questions.version == 0
        assert desk.calls("get_app_state") == []


async def test_a_consent_question_nobody_answers_expires(
    mock_clock: trio.testing.MockClock,
) -> None:
    async with consent_desk() as desk:
        agent = await desk.client("agent")
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            [q] = (await next_list(console, start.version)).questions
            mock_clock.jump(TIMEOUT_S - 1)
            await trio.testing.wait_all_tasks_blocked()
            assert not pending.done.is_set()  # a second before its deadline: still open
            mock_clock.jump(1.5)
            err = await refused(pending, "question_expired")
            assert err.data == {"app": "Calculator", "waited_s": 300.5}
            assert err.delivery == "refused" and "expired" in err.message
        assert closings(agent) == [QuestionClosed(id=q.id, how="expired", by="")]
        assert desk.calls("get_app_state") == []
        with pytest.raises(DeskhandError) as late:
            await answer(console, q.id, "once")
        assert late.value.code == "bad_request"


async def test_the_backends_approval_goes_to_a_console() -> None:
    async with open_desk() as desk:  # saved grants: only the backend's own prompt is asked
        agent = await desk.client("agent")
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            [q] = (await next_list(console, start.version)).questions
            assert (q.kind, q.text, q.choices) == (
                "backend_approval",
                "Allow ChatGPT to use Calculator?",
                ["accept", "decline"],
            )
            await answer(console, q.id, "accept")
            obs = await pending.wait()
            assert isinstance(obs, Observation) and obs.approval_reason == "user_accepted"
        assert [a["answer"] for a in desk.records("elicitation_answer")] == ["accept"]


async def test_an_approval_nobody_answers_expires_as_cancel(
    mock_clock: trio.testing.MockClock,
) -> None:
    """The backend is answered cancel, never accept, and the reply says the question expired."""
    async with open_desk() as desk:
        agent = await desk.client("agent")
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            [q] = (await next_list(console, start.version)).questions
            mock_clock.jump(TIMEOUT_S + 0.5)
            err = await refused(pending, "approval_cancelled")
            assert err.data["approval_reason"] == "question_expired"
        assert [a["answer"] for a in desk.records("elicitation_answer")] == ["cancel"]
        assert closings(agent) == [QuestionClosed(id=q.id, how="expired", by="")]


async def test_the_last_console_leaving_mid_question_refuses_it() -> None:
    """Nobody is left who could answer: the question closes cancelled and consent is refused."""
    async with consent_desk() as desk:
        agent = await desk.client("agent")
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            [q] = (await next_list(console, start.version)).questions
            console.leave()
            err = await refused(pending, "consent_denied")
            assert err.data["reason"] == "no_one_to_ask"
        assert closings(agent) == [QuestionClosed(id=q.id, how="cancelled", by="")]
        assert desk.services.questions.pending == 0 and desk.services.questions.consoles == 0


async def test_a_console_leaving_leaves_questions_the_asker_can_answer_open() -> None:
    async with consent_desk() as desk:
        agent = await desk.client("agent", answers=True)
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            question = await agent.question()
            await next_list(console, start.version)
            console.leave()
            assert desk.services.questions.pending == 1
            await agent.answer_question(question, "once")
            assert isinstance(await pending.wait(), Observation)


async def test_the_asker_leaving_cancels_its_question_for_the_consoles() -> None:
    async with consent_desk() as desk:
        agent = await desk.client("agent")
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            opened = await next_list(console, start.version)
            [q] = opened.questions
            agent.leave()
            assert (await next_list(console, opened.version)).questions == []
        assert closings(agent) == [QuestionClosed(id=q.id, how="cancelled", by="")]


async def test_the_watch_waits_for_a_change_or_its_time(mock_clock: trio.testing.MockClock) -> None:
    async with consent_desk() as desk:
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            idle = console.start(
                nursery, QuestionsWatch(id=console.next_id(), after=start.version, wait_s=20)
            )
            await trio.testing.wait_all_tasks_blocked()
            mock_clock.jump(19.5)
            await trio.testing.wait_all_tasks_blocked()
            assert not idle.done.is_set()
            mock_clock.jump(1)
            same = await idle.wait()
            assert same == QuestionList(version=start.version, questions=[])
            # a change ends the wait at once (no time passes)
            changed = console.start(
                nursery, QuestionsWatch(id=console.next_id(), after=start.version, wait_s=60)
            )
            agent = await desk.client("agent")
            asked = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            listed = await changed.wait()
            assert isinstance(listed, QuestionList) and len(listed.questions) == 1
            # a version the console has not seen yet is answered at once
            assert (await watch(console, after=start.version, wait_s=60)).version == listed.version
            await answer(console, listed.questions[0].id, "deny")
            await refused(asked, "consent_denied")


# ----- a host that answers for itself ----------------------------------------------------------


async def pass_on(c: FakeClient, qid: str) -> Done:
    done = await c.call(QuestionPass(id=c.next_id(), question_id=qid))
    assert isinstance(done, Done)
    return done


async def test_a_question_the_host_answered_itself_waits_for_a_console() -> None:
    """An MCP host in a run nobody sits at answers Deskhand's question on its own; the facade
    passes the question on instead of relaying that answer, and the console's answer counts."""
    async with consent_desk() as desk:
        host = await desk.client("claude-code-1", answers=True, name="claude-code", kind="mcp")
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = host.start(nursery, GetAppState(id=host.next_id(), app="Calculator"))
            question = await host.question()
            opened = await next_list(console, start.version)
            assert [q.id for q in opened.questions] == [question.id]
            assert (await pass_on(host, question.id)).detail == "the question waits for a console"
            [still] = (await watch(console)).questions
            assert still.id == question.id  # open, now for the console alone
            with pytest.raises(DeskhandError) as again:
                await host.answer_question(question, "deny")  # a host's later "no" is too late
            assert again.value.code == "bad_request"
            await answer(console, question.id, "once")
            assert isinstance(await pending.wait(), Observation)
        assert closings(host) == [QuestionClosed(id=question.id, how="answered", by="console")]


async def test_a_passed_question_with_no_console_is_refused_as_asked_of_nobody() -> None:
    """With no console open, a passed question closes at once and the refusal says that nobody
    was asked, in the MCP host's words: no turn_begin (not an MCP tool), no "said no", and the
    ways the person has (a console, an 'always' answered at a terminal)."""
    async with consent_desk() as desk:
        host = await desk.client("claude-code-1", answers=True, name="claude-code", kind="mcp")
        async with trio.open_nursery() as nursery:
            pending = host.start(nursery, GetAppState(id=host.next_id(), app="Calculator"))
            question = await host.question()
            done = await pass_on(host, question.id)
            assert done.detail == "no console was open: the question closed unanswered"
            err = await refused(pending, "consent_denied")
        assert (err.data["reason"], err.delivery) == ("no_one_to_ask", "refused")
        text = err.message
        assert "nobody was asked" in text and "not the person's no" in text
        assert "`deskhandctl questions`" in text and "'always'" in text
        assert "said no" not in text and "turn_begin" not in text
        assert desk.calls("get_app_state") == []
        with pytest.raises(DeskhandError) as late:
            await host.answer_question(question, "once")
        assert late.value.code == "bad_request"
        assert "closed unanswered" in late.value.message


async def test_only_the_asker_may_pass_its_question_on() -> None:
    async with consent_desk() as desk:
        host = await desk.client("h", answers=True, kind="mcp")
        console = await desk.client("console", answers=True)
        await watch(console)
        async with trio.open_nursery() as nursery:
            pending = host.start(nursery, GetAppState(id=host.next_id(), app="Calculator"))
            question = await host.question()
            with pytest.raises(DeskhandError) as info:
                await pass_on(console, question.id)
            assert info.value.code == "bad_request"
            await host.answer_question(question, "once")
            assert isinstance(await pending.wait(), Observation)


async def test_a_late_answer_is_told_how_the_question_closed() -> None:
    """The asker answers after a console did: told who answered and what, not a bare "no such
    question"."""
    async with consent_desk() as desk:
        agent = await desk.client("agent", answers=True)
        console = await desk.client("console", answers=True)
        start = await watch(console)
        async with trio.open_nursery() as nursery:
            pending = agent.start(nursery, GetAppState(id=agent.next_id(), app="Calculator"))
            question = await agent.question()
            await next_list(console, start.version)
            await answer(console, question.id, "deny")
            with pytest.raises(DeskhandError) as late:
                await agent.answer_question(question, "once")
            await refused(pending, "consent_denied")
        assert late.value.message == "that question was already answered (deny) by a console"
