"""``deskhandctl questions``: the person answers, on a real terminal, what another client cannot ask.

A real daemon on the simulator (every app needs consent: no saved grants, the staged identity
catalogue); an agent's ``deskhandctl observe`` without a terminal cannot ask anyone, so its
consent question waits for the console running on a pseudo-terminal, where the test reads the
prompt and types the answer.
"""

from __future__ import annotations

import json
import signal
from collections.abc import Iterator

import pytest
from dhtest.clidaemon import CliDaemon, consent_daemon
from terminal import Terminal

PROMPT = b"(default deny) "


@pytest.fixture
def desk() -> Iterator[CliDaemon]:
    """A daemon on the simulator where every app needs the person's consent."""
    with consent_daemon() as daemon:
        yield daemon


def console(desk: CliDaemon, *argv: str) -> Terminal:
    term = Terminal(*desk.argv("questions", *argv), env=desk.env)
    term.read_until(b"Ctrl-C to stop")
    return term


def test_the_person_answers_a_question_of_a_client_that_cannot_ask(desk: CliDaemon) -> None:
    term = console(desk)
    try:
        agent = desk.start("observe", "Calculator")  # stdin is not a terminal: it cannot ask
        shown = term.read_until(PROMPT).decode()
        assert f"Question from deskhandctl (pid {agent.pid}, session" in shown
        assert "about Calculator;" in shown and "s left to answer" in shown
        assert "wants to operate 'Calculator'" in shown  # the daemon's text, quoted
        assert "[o]nce / [a]lways / [d]eny" in shown
        term.type(b"o\n")
        term.read_until(b"allowed for this task; sent")
        out, err = agent.communicate(timeout=60)
        assert agent.returncode == 0, err
        assert "Calculator" in out
        assert desk.received("get_app_state") == 1
        term.proc.send_signal(signal.SIGINT)  # Ctrl-C (the pty is not its controlling tty)
        code, _ = term.finish()
        assert code == 130
    finally:
        term.close()


def test_keys_typed_before_the_question_never_answer_it(desk: CliDaemon) -> None:
    term = console(desk)
    try:
        term.type(b"always\n")  # typed ahead, while no question is shown
        term.read_until(b"always")  # echoed: it sits in the terminal's input queue
        agent = desk.start("observe", "Calculator")
        term.read_until(PROMPT)
        term.type(b"d\n")
        term.read_until(b"denied; sent")
        _, err = agent.communicate(timeout=60)
        assert agent.returncode == 1 and "you said no" in err, err
        assert desk.received("get_app_state") == 0
        grants = desk.root / "config" / "deskhand" / "grants.json"
        assert not grants.exists() or json.loads(grants.read_text())["grants"] == []
    finally:
        term.close()


def test_a_question_that_closes_meanwhile_is_withdrawn(desk: CliDaemon) -> None:
    term = console(desk)
    try:
        agent = desk.start("observe", "Calculator")
        term.read_until(PROMPT)
        agent.kill()  # the asking client goes: its question is cancelled
        agent.communicate(timeout=10)  # reaped, its pipes closed
        term.read_until(b"withdrawn: the question is no longer open")
        assert desk.received("get_app_state") == 0
    finally:
        term.close()


def test_once_answers_what_is_waiting_then_exits(desk: CliDaemon) -> None:
    empty = Terminal(*desk.argv("questions", "--once"), env=desk.env)
    try:
        assert empty.finish()[0] == 0 and b"no questions are waiting" in empty.seen
    finally:
        empty.close()
    watcher = console(desk)  # keeps the agent's question waiting for a console
    agent = desk.start("observe", "Calculator")
    watcher.read_until(PROMPT)
    term = Terminal(*desk.argv("questions", "--once"), env=desk.env)
    try:
        term.read_until(PROMPT)
        term.type(b"o\n")
        code, _ = term.finish()
        assert code == 0 and b"allowed for this task; sent" in term.seen
        agent.communicate(timeout=60)
        assert agent.returncode == 0
        watcher.read_until(b"withdrawn")  # the other console's prompt goes away
    finally:
        term.close()
        watcher.close()


def test_without_a_terminal_it_refuses_and_json_only_lists(desk: CliDaemon) -> None:
    refused = desk.run("questions")
    assert refused.returncode == 66
    assert "runs only from your own terminal" in refused.stderr and "--json" in refused.stderr
    listed = desk.json("questions")
    assert listed["kind"] == "questions" and listed["questions"] == []
    assert isinstance(listed["version"], int)
