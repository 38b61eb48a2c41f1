"""What an agent may not do for the person: the daemon refuses the steps that widen what agents
may do to a connection that declared an agent's kind (``agent``: the MCP facade; ``pi``: the
pi extension), with ``not_for_agents`` and the command the person runs instead.

A real daemon on the simulated desktop, real sockets. Each refusal is checked by what did not
change (the stop still engaged, the app not added, the grant still revoked, the question still
open) and by the person's own client then doing the same thing. The agent's client still
answers the questions asked of it: that is how a host relays its own person's answer.
"""

from __future__ import annotations

from typing import Any

import pytest
from dhtest.consent_rig import Person, Rig, closing
from dhtest.wsclient import SyncClient

AGENT_KINDS = ["agent", "pi"]


def agent(rig: Rig, kind: str, session: str = "agent-task") -> Person:
    """A client that said it is an agent's, and can put questions to its host's person."""
    assert rig.daemon is not None
    c = SyncClient(rig.daemon.socket, hello=False)
    rig.clients.append(c)
    hello = c.call(
        "hello",
        protocol=1,
        client={"name": f"an {kind} host", "kind": kind},
        can_answer_questions=True,
        session=session,
    )
    assert hello["type"] == "result", hello
    return Person(c)


def refused(reply: dict[str, Any], command: str) -> None:
    assert reply["type"] == "error", reply
    error = reply["error"]
    assert error["code"] == "not_for_agents", error
    assert error["data"] == {"command": command}
    assert f"run `{command}` in their own terminal" in error["message"]
    assert "nothing was changed" in error["message"]


STEPS: dict[str, tuple[dict[str, Any], str]] = {
    "unlock": ({}, "deskhandctl unlock"),
    "apps_add": ({"app": "Safari"}, "deskhandctl apps add Safari"),
    "grants_restore": ({"app": "Calculator"}, "deskhandctl grants restore Calculator"),
    "questions_watch": ({"after": 0, "wait_s": 0}, "deskhandctl questions"),
}


@pytest.mark.parametrize("op", list(STEPS))
@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_an_agents_client_cannot_release_allow_restore_or_watch(
    rig_factory: Any, kind: str, op: str
) -> None:
    rig: Rig = rig_factory()
    person = rig.person("person-task")
    assert person.request("get_app_state", ["always"], app="Calculator")["type"] == "result"
    admin = rig.admin()
    assert admin.call("grants_revoke", app="Calculator")["type"] == "result"
    if op == "unlock":
        assert admin.call("stop")["result"]["locked"] is True
    fields, command = STEPS[op]

    refused(agent(rig, kind).request(op, **fields), command)
    if op == "unlock":
        assert admin.call("status")["result"]["locked_by"]  # still engaged
        assert admin.call("unlock")["result"]["locked"] is False
    assert "Safari" not in admin.call("apps_list")["result"]["apps"]
    assert [g["revoked_at"] is not None for g in rig.saved()] == [True]
    # The same step from the person's own client (a console, to watch) goes through.
    own = rig.client("console", answers=True, name="deskhandctl")
    assert own.call(op, **fields)["type"] == "result"


@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_an_agents_client_cannot_answer_another_clients_question(
    rig_factory: Any, kind: str
) -> None:
    """The whole attempt: become a console, then answer 'always' to another connection's
    consent question (which might be the agent's own second connection). Both are refused;
    the question stays open, its asker answers it, and no grant was saved."""
    rig: Rig = rig_factory()
    asker = rig.person("other-task")
    bot = agent(rig, kind)
    rid = asker.send("get_app_state", app="Calculator")
    question = asker.next_question()
    refused(bot.request("questions_watch", after=0, wait_s=0), "deskhandctl questions")
    answer = bot.request("answer", question_id=question["id"], choice="always")
    refused(answer, "deskhandctl questions")
    assert rig.saved() == []
    asker.answer(question, "deny")
    reply = asker.wait_reply(rid)
    assert reply["error"]["code"] == "consent_denied"
    assert reply["error"]["data"]["reason"] == "declined"  # the asker's answer, not the agent's
    assert rig.calls("get_app_state") == []


@pytest.mark.parametrize("kind", AGENT_KINDS)
def test_an_agents_client_answers_the_questions_asked_of_it(rig_factory: Any, kind: str) -> None:
    """What a host relays from its own person (MCP elicitation, pi's dialogs) still counts."""
    rig: Rig = rig_factory()
    bot = agent(rig, kind)
    rid = bot.send("get_app_state", app="Calculator")
    question = bot.next_question()
    bot.answer(question, "once")
    while True:
        msg = bot.c.recv_obj()
        if closing(msg) or msg.get("id") != rid:
            assert msg["type"] != "error", msg  # the answer itself was taken
            continue
        break
    assert msg["type"] == "result", msg
    assert len(rig.calls("get_app_state")) == 1
