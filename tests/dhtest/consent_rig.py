"""A real daemon on the simulated desktop with a staged identity catalogue, and a person.

The catalogue (``DESKHAND_IDENTITY_CATALOG``) decides what each simulated app *is*: the tests
re-sign, copy or unsign apps by rewriting it while the daemon runs. :class:`Person` is a client
that declared it can answer questions and answers Deskhand's consent questions from a script.
"""

from __future__ import annotations

import json
import shutil
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon
from dhtest.desk import open_client
from dhtest.wsclient import SyncClient

CALC = "/System/Applications/Calculator.app/Contents/MacOS/Calculator"
APPLE_CALC = 'identifier "com.apple.calculator" and anchor apple'
RESIGNED_CAL = (
    'anchor apple generic and identifier "com.apple.iCal" and '
    "certificate leaf[subject.OU] = EVIL123456"
)
ALLOWED = "Calculator,com.apple.calculator,TextEdit,Calendar,Calculator Copy"


def default_catalog() -> dict[str, Any]:
    return {
        "version": 1,
        "apps": [
            {
                "names": ["Calculator", "com.apple.calculator"],
                "path": CALC,
                "requirement": APPLE_CALC,
                "signer": "Apple",
            },
            {
                "names": ["Calculator Copy"],
                "path": "/Users/me/Downloads/Calculator.app/Contents/MacOS/Calculator",
                "requirement": APPLE_CALC,
                "signer": "Apple",
            },
            {
                "names": ["TextEdit", "com.apple.TextEdit"],
                "path": "/Users/me/build/TextEdit.app/Contents/MacOS/TextEdit",
                "content_sha256": "ab" * 32,
            },
            {
                "names": ["Calendar", "com.apple.iCal"],
                "path": "/System/Applications/Calendar.app/Contents/MacOS/Calendar",
                "requirement": 'identifier "com.apple.iCal" and anchor apple',
                "signer": "Apple",
            },
        ],
    }


class Rig:
    def __init__(self, scenario: dict[str, Any] | None = None) -> None:
        self.root = short_tmpdir()
        self.catalog_path = self.root / "catalog.json"
        self.catalog = default_catalog()
        self.write_catalog()
        self.record = self.root / "record.jsonl"
        self.env = {
            "DESKHAND_BACKEND": "sim",
            "DESKHAND_IDENTITY_CATALOG": str(self.catalog_path),
            "DESKHAND_ALLOWED_APPS": ALLOWED,
            "DESKHAND_SIM_RECORD": str(self.record),
            "DESKHAND_SIM_SCENARIO": json.dumps({"preapproved": ["*"], **(scenario or {})}),
        }
        self.daemon: DaemonProc | None = None
        self.clients: list[SyncClient] = []
        self.start()

    # -- the daemon ---------------------------------------------------------------------------

    def start(self) -> None:
        self.daemon = spawn_daemon(self.root, extra_env=self.env)

    def restart(self) -> None:
        assert self.daemon is not None
        for c in self.clients:
            c.sock.close()
        self.clients.clear()
        assert self.daemon.stop(signal.SIGTERM) == 0
        self.start()

    def close(self) -> None:
        for c in self.clients:
            c.sock.close()
        if self.daemon is not None and self.daemon.proc.poll() is None:
            self.daemon.proc.kill()
            self.daemon.proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)

    # -- the desktop's identities -------------------------------------------------------------

    def write_catalog(self) -> None:
        tmp = self.catalog_path.with_suffix(".tmp")
        tmp.write_text(json.dumps(self.catalog))
        tmp.replace(self.catalog_path)

    def entry(self, name: str) -> dict[str, Any]:
        return next(e for e in self.catalog["apps"] if e["names"][0] == name)

    def change(self, name: str, **fields: Any) -> None:
        self.entry(name).update(fields)
        self.write_catalog()

    @property
    def grants_path(self) -> Path:
        return self.root / "config" / "deskhand" / "grants.json"

    def saved(self) -> list[dict[str, Any]]:
        if not self.grants_path.exists():
            return []
        grants: list[dict[str, Any]] = json.loads(self.grants_path.read_text())["grants"]
        return grants

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [
            r for r in rows if r["event"] == "call_start" and (tool is None or r["tool"] == tool)
        ]

    # -- clients ------------------------------------------------------------------------------

    def client(self, session: str = "agent", *, answers: bool = True, name: str = "agent") -> Any:
        assert self.daemon is not None
        c = open_client(self.daemon.socket, session, answers=answers, name=name)
        self.clients.append(c)
        return c

    def person(self, session: str = "agent") -> Person:
        return Person(self.client(session))

    def admin(self) -> Any:
        """The person's own CLI-like client, for grants and status (answers nothing)."""
        return self.client("", answers=False, name="deskhandctl")

    def backend_pid(self) -> int | None:
        status = self.admin().call("status")["result"]
        pid: int | None = status["backend"]["running_pid"]
        return pid


def closing(msg: dict[str, Any]) -> bool:
    """Is ``msg`` the ``question_closed`` event that follows every question once it closes?"""
    return msg["type"] == "event" and msg["event"]["kind"] == "question_closed"


class Person:
    """A client whose person answers consent questions as told."""

    def __init__(self, client: SyncClient) -> None:
        self.c = client
        self.next_id = 100
        self.questions: list[dict[str, Any]] = []

    def send(self, op: str, **fields: Any) -> int:
        self.next_id += 1
        self.c.send_obj({"op": op, "id": self.next_id, **fields})
        return self.next_id

    def next_question(self) -> dict[str, Any]:
        while True:
            msg = self.c.recv_obj()
            if closing(msg):
                continue
            if msg["type"] == "event" and msg["event"]["kind"] == "question":
                self.questions.append(msg["event"])
                return dict(msg["event"])
            raise AssertionError(f"expected a question, got {msg}")

    def answer(self, question: dict[str, Any], choice: str) -> None:
        self.next_id += 1
        self.c.send_obj(
            {"op": "answer", "id": self.next_id, "question_id": question["id"], "choice": choice}
        )

    def wait_reply(self, rid: int, answers: list[str] | None = None) -> dict[str, Any]:
        """Read until request ``rid``'s reply, answering consent questions from ``answers``
        in order (a question with no answer left fails the test)."""
        todo = list(answers or [])
        while True:
            msg = self.c.recv_obj()
            if closing(msg):
                continue
            if msg["type"] == "event" and msg["event"]["kind"] == "question":
                ev = msg["event"]
                self.questions.append(ev)
                assert ev["question"] == "app_consent", ev
                assert todo, f"an unexpected question: {ev['text']}"
                self.answer(ev, todo.pop(0))
                continue
            if msg.get("id") == rid:
                return dict(msg)
            # replies to our answers: must be results
            assert msg["type"] == "result", msg

    def request(self, op: str, answers: list[str] | None = None, **fields: Any) -> dict[str, Any]:
        return self.wait_reply(self.send(op, **fields), answers)


@pytest.fixture
def rig_factory() -> Iterator[Any]:
    rigs: list[Rig] = []

    def make(scenario: dict[str, Any] | None = None) -> Rig:
        rigs.append(Rig(scenario))
        return rigs[-1]

    yield make
    for r in rigs:
        r.close()
