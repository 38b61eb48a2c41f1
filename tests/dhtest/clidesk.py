"""A real daemon on the simulated desktop (with its call record) and the real CLI pointed at it,
for tests of what a person reads from ``deskhandctl``: ``sim_desk(scenario, grants=..., **env)``.
No Jev key unless a test gives one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, save_grants

# Words a person at the CLI must never be told to use: the backend's tools and error names.
FOREIGN = ("tool_search", "get_app_state", "invalidParameter", "Computer Use server error")


class Desk:
    """A daemon on the simulator (with its call record) and the CLI pointed at it."""

    def __init__(self, daemon: DaemonProc, record: Path, env: dict[str, str]) -> None:
        self.daemon = daemon
        self.record = record
        self.env = daemon_env(daemon.root, env)

    def argv(self, *argv: str) -> list[str]:
        return ["--socket", str(self.daemon.socket), *argv]

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "deskhandctl", *self.argv(*argv)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def json(self, *argv: str, code: int = 0) -> dict[str, Any]:
        done = self.run("--json", *argv)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout)
        return value

    def state(self, app: str = "Calculator", *options: str) -> str:
        return str(self.json(*options, "observe", app)["state_id"])

    def tools_called(self) -> list[str]:
        if not self.record.exists():
            return []
        rows = [json.loads(x) for x in self.record.read_text().splitlines() if x.strip()]
        return [r["tool"] for r in rows if r["event"] == "call_start"]


@pytest.fixture
def sim_desk() -> Iterator[Any]:
    """``desk(scenario, grants=..., **env)``: a daemon on the simulator, and the CLI."""
    started: list[DaemonProc] = []

    def make(
        scenario: dict[str, Any] | None = None,
        *,
        grants: tuple[str, ...] = SIM_APPS,
        **env: str,
    ) -> Desk:
        root = short_tmpdir()
        record = root / "record.jsonl"
        extra = {
            "DESKHAND_BACKEND": "sim",
            "DESKHAND_SIM_RECORD": str(record),
            "DESKHAND_SIM_SCENARIO": json.dumps(scenario or {"preapproved": ["*"]}),
            "TYPESAFE_API_KEY": "",  # no key unless a test gives one
            **env,
        }
        if grants:
            save_grants(root / "config", grants)
        started.append(spawn_daemon(root, extra_env=extra))
        return Desk(started[-1], record, {"TYPESAFE_API_KEY": "", **env})

    yield make
    for d in started:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)
        shutil.rmtree(d.root, ignore_errors=True)


def no_foreign_words(*texts: str) -> None:
    for text in texts:
        for word in FOREIGN:
            assert word not in text, (word, text)
