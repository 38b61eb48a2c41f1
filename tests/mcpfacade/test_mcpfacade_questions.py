"""Questions through ``deskhandctl mcp`` that the other facade tests leave out: the backend's own
approval prompt as a form the host answers, a question nobody answers expiring by the daemon's
deadline with its code, and a host that cannot ask whose person answers from a console."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon
from dhtest.mcpsaid import said_code, said_delivery, said_state_id
from facade_rig import RawHost

pytestmark = pytest.mark.slow

ELICIT = {"elicitation": {"form": {}}}


def _answer(host: RawHost, ask: dict[str, Any], result: dict[str, Any]) -> None:
    host.send({"jsonrpc": "2.0", "id": ask["id"], "result": result})


@pytest.mark.parametrize(
    ("answer", "observed"),
    [
        ({"action": "accept", "content": {"choice": "accept"}}, True),
        ({"action": "decline"}, False),
        ({"action": "cancel"}, False),
    ],
)
def test_the_backends_approval_prompt_is_a_form_the_host_answers(
    desks: Callable[..., CliDaemon],
    hosts: Callable[[CliDaemon], RawHost],
    answer: dict[str, Any],
    observed: bool,
) -> None:
    """Deskhand's consent is saved, the simulated backend asks its own approval: the host gets
    that prompt (the backend's words quoted) and only its accept lets the observation through."""
    desk = desks({}, TYPESAFE_API_KEY="")  # nothing preapproved by the backend
    host = hosts(desk)
    host.initialize("2025-11-25", ELICIT)
    host.call(1, "get_app_state", {"app": "Calculator"})
    ask = host.method("elicitation/create")
    params = ask["params"]
    assert "Calculator" in params["message"] or "calculator" in params["message"]
    assert set(params["requestedSchema"]) == {"type", "properties", "required"}
    schema = json.dumps(params["requestedSchema"])
    assert "accept" in schema and "decline" in schema
    if answer["action"] == "accept":  # the form's own value for yes
        prop = params["requestedSchema"]["properties"]
        (name,) = prop
        if prop[name].get("type") == "boolean":
            answer = {"action": "accept", "content": {name: True}}
        else:
            answer = {"action": "accept", "content": {name: "accept"}}
    _answer(host, ask, answer)
    result = host.reply(1)["result"]
    if observed:
        assert not result["isError"] and said_state_id(result)
    else:
        assert result["isError"]
        assert said_code(result) in ("approval_declined", "approval_cancelled")
    assert desk.received("get_app_state") == 1  # the backend asked: the call reached it


def test_a_question_nobody_answers_expires_with_its_code(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    """The host shows the consent form and never answers: the daemon's deadline ends the
    question (question_expired, nothing sent), and the form is withdrawn from the host."""
    desk = desks(
        {"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="", DESKHAND_QUESTION_TIMEOUT_S="2"
    )
    host = hosts(desk)
    host.initialize("2025-11-25", ELICIT)
    host.call(1, "get_app_state", {"app": "Calculator"})
    ask = host.method("elicitation/create")
    result = host.reply(1, timeout=30)["result"]
    assert result["isError"]
    assert said_code(result) == "question_expired"
    assert said_delivery(result) == "refused"
    withdrawn = host.method("notifications/cancelled")
    assert withdrawn["params"]["requestId"] == ask["id"]
    assert desk.received("get_app_state") == 0


def test_a_host_that_cannot_ask_is_answered_for_from_a_console(
    desks: Callable[..., CliDaemon], hosts: Callable[[CliDaemon], RawHost]
) -> None:
    """No elicitation in the host: with a console open, the consent question waits there; the
    person's "once" from the console lets the host's observation through."""
    desk = desks({"preapproved": ["*"]}, grants=(), TYPESAFE_API_KEY="")
    console = _Console(desk)
    console.join()  # open before the question comes, as a person's console would be
    try:
        host = hosts(desk)
        host.initialize("2025-11-25", {})
        host.call(1, "get_app_state", {"app": "Calculator"})
        pending = console.wait_for_question()
        assert pending["app"] == "Calculator" and pending["kind"] == "app_consent"
        console.answer(pending["id"], "once")
        result = host.reply(1)["result"]
        assert not result["isError"] and said_state_id(result)
    finally:
        console.close()
    assert desk.received("get_app_state") == 1


class _Console:
    """A console over the daemon's protocol (what `deskhandctl questions` does on a terminal),
    driven from the test through deskhandctl's own protocol client."""

    def __init__(self, desk: CliDaemon) -> None:
        code = (
            "import json, sys\n"
            "from deskhandctl.wire.connect import open_session\n"
            "s = open_session(sys.argv[1], timeout=60, autostart=False, client_version='t',"
            " can_answer_questions=True)\n"
            "version = 0\n"
            "for line in sys.stdin:\n"
            "    cmd = json.loads(line)\n"
            "    if cmd['op'] == 'watch':\n"
            "        r = s.request('questions_watch', after=version, wait_s=cmd['wait_s'])\n"
            "        version = r['version']\n"
            "    else:\n"
            "        r = s.request('answer', question_id=cmd['id'], choice=cmd['choice'])\n"
            "    print(json.dumps(r), flush=True)\n"
        )
        self.proc = subprocess.Popen(
            [sys.executable, "-c", code, str(desk.daemon.socket)],
            env=desk.env,
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )

    def _do(self, cmd: dict[str, Any]) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        reply: dict[str, Any] = json.loads(self.proc.stdout.readline())
        return reply

    def join(self) -> None:
        """Become a console now (the first watch answers at once)."""
        self._do({"op": "watch", "wait_s": 0})

    def wait_for_question(self) -> dict[str, Any]:
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            listed = self._do({"op": "watch", "wait_s": 20})
            if listed["questions"]:
                return dict(listed["questions"][0])
        raise TimeoutError("no question reached the console")

    def answer(self, question_id: str, choice: str) -> None:
        assert self._do({"op": "answer", "id": question_id, "choice": choice})["kind"] == "done"

    def close(self) -> None:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.close()
        self.proc.wait(10)
        self.proc.stdout.close()
