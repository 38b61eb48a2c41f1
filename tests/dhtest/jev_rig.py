"""A real daemon on the simulated desktop in jev mode, talking to the scripted fake Jev server
(a real HTTP process on loopback), with the simulator's call record and the fake's request log."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, open_client, save_grants
from dhtest.wsclient import SyncClient

KEY = "tsk-daemon-test-8d1f02c6a9"
FAKE = Path(__file__).resolve().parent.parent / "peers" / "fake_jev.py"
# Calculator's buttons in the simulator before any operator is pressed (pressing one adds the
# expression line to the display, which shifts later indices: pick by description then).
CALC = {"1": 17, "2": 18, "3": 19, "0": 22, "+": 20, "=": 24, "AC": 6, "7": 9}
BUTTON = {
    "1": "ID: One",
    "2": "ID: Two",
    "3": "ID: Three",
    "0": "ID: Zero",
    "7": "ID: Seven",
    "+": "button: Add",
    "=": "button: Equals",
}


def pick(
    index: int,
    *,
    confidence: float = 0.9,
    done: float = 0.0,
    risk: float = 0.0,
    action: str = "click_element",
) -> dict[str, Any]:
    target = {"target_match": index} if isinstance(index, str) else {"target": f"i{index}"}
    return {
        "pick": {
            **target,
            "action": action,
            "confidence": confidence,
            "done": done,
            "risk": risk,
        }
    }


class JevDesk:
    def __init__(
        self,
        script: list[dict[str, Any]],
        scenario: dict[str, Any] | None,
        config: str,
        extra_env: dict[str, str] | None = None,
        grant: Callable[[Path], object] | None = None,
    ) -> None:
        """``grant(config_home)`` saves the grants the run needs (default: the simulator's
        apps); ``extra_env`` may point the daemon at another backend (``DESKHAND_BACKEND``)."""
        self.root = short_tmpdir()
        script_path = self.root / "script.json"
        script_path.write_text(json.dumps([{"expect_key": KEY}, *script]))
        port_file = self.root / "port"
        self.jev_record = self.root / "jev.jsonl"
        self.fake = subprocess.Popen(
            [
                sys.executable,
                str(FAKE),
                "--port-file",
                str(port_file),
                "--script",
                str(script_path),
                "--record",
                str(self.jev_record),
            ],
            stdin=subprocess.DEVNULL,
        )
        deadline = time.monotonic() + 15
        while not (port_file.exists() and port_file.read_text().strip()):
            assert self.fake.poll() is None, "the fake Jev server exited"
            assert time.monotonic() < deadline, "the fake Jev server never listened"
            time.sleep(0.02)
        port = int(port_file.read_text())
        self.jev_url = f"http://127.0.0.1:{port}/v1/systemone"
        self.record = self.root / "record.jsonl"
        if config:
            conf = self.root / "config" / "deskhand"
            conf.mkdir(parents=True, mode=0o700, exist_ok=True)
            (conf / "config.toml").write_text(config)
        if grant is None:
            save_grants(self.root / "config", SIM_APPS)
        else:
            grant(self.root / "config")
        env = {
            "DESKHAND_BACKEND": "sim",
            "DESKHAND_MODE": "jev",
            "TYPESAFE_API_KEY": KEY,
            "DESKHAND_JEV_URL": self.jev_url,
            "DESKHAND_SIM_RECORD": str(self.record),
            "DESKHAND_SIM_SCENARIO": json.dumps({"preapproved": ["*"], **(scenario or {})}),
            **(extra_env or {}),
        }
        self.daemon: DaemonProc = spawn_daemon(self.root, extra_env=env)
        self.clients: list[SyncClient] = []

    def client(self, session: str = "agent", *, answers: bool = False) -> SyncClient:
        c = open_client(self.daemon.socket, session, answers=answers, name="agent")
        self.clients.append(c)
        return c

    def calls(self, tool: str | None = None) -> list[dict[str, Any]]:
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [r for r in rows if r["event"] == "call_start" and tool in (None, r["tool"])]

    def jev_requests(self) -> list[dict[str, Any]]:
        if not self.jev_record.exists():
            return []
        return [json.loads(x) for x in self.jev_record.read_text().splitlines() if x.strip()]

    def close(self) -> None:
        for c in self.clients:
            c.sock.close()
        for proc in (self.daemon.proc, self.fake):
            if proc.poll() is None:
                proc.kill()
                proc.wait(10)
        shutil.rmtree(self.root, ignore_errors=True)


def run_traced(c: SyncClient, rid: int, **fields: Any) -> dict[str, Any]:
    """``run`` with ``full_trace``, the person accepting the trace question."""
    c.send_obj({"op": "run", "id": rid, "full_trace": True, **fields})
    while True:
        msg = c.recv_obj()
        if msg["type"] == "event":
            ev = msg["event"]
            if ev["kind"] == "question":
                assert ev["question"] == "full_trace", ev
                c.send_obj(
                    {"op": "answer", "id": rid + 1000, "question_id": ev["id"], "choice": "accept"}
                )
            continue
        if msg.get("id") == rid:
            return dict(msg)


def run_request(
    c: SyncClient, rid: int, **fields: Any
) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Send ``run`` and read until its reply; returns (reply, progress events)."""
    c.send_obj({"op": "run", "id": rid, **fields})
    events: list[dict[str, Any]] = []
    while True:
        msg = c.recv_obj()
        if msg["type"] == "event":
            events.append(msg["event"])
            continue
        if msg.get("id") == rid:
            return msg, events


@pytest.fixture
def jev_factory() -> Iterator[Any]:
    desks: list[JevDesk] = []

    def make(
        script: list[dict[str, Any]],
        scenario: dict[str, Any] | None = None,
        config: str = "",
        env: dict[str, str] | None = None,
    ) -> JevDesk:
        desks.append(JevDesk(script, scenario, config, env))
        return desks[-1]

    yield make
    for d in desks:
        d.close()
