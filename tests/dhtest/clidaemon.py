"""A real daemon on the simulated desktop driven through the real ``deskhandctl``, for tests.

What this owns: starting daemons on the simulator (each with its traffic record, the saved grants
and the environment a test adds), running ``deskhandctl`` as a subprocess against exactly that
daemon (never autostarting another; :meth:`CliDaemon.at_terminal` as the person at a terminal,
for the steps only they take), and reading back what the simulator received and what the
daemon audited. :func:`cli_daemons` is the factory and ends every daemon it started;
:func:`sim_desk` is the fixture for tests of what a person reads from the CLI (every app
preapproved unless the scenario says otherwise, no Jev key unless the test gives one).
Full-disk set-ups live in :mod:`dhtest.fulldisk`.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, save_grants
from dhtest.terminal import as_the_person


class CliDaemon:
    """One daemon (restartable with the same settings) and the CLI pointed at it."""

    def __init__(self, root: Path, extra: dict[str, str]) -> None:
        self.root = root
        self.extra = extra
        self.record = root / "sim.jsonl"
        self.daemon: DaemonProc = spawn_daemon(root, extra_env=extra)

    @property
    def env(self) -> dict[str, str]:
        """The CLI's environment: the daemon's directories, and no autostart (only this one)."""
        return {**daemon_env(self.root), "DESKHAND_NO_AUTOSTART": "1"}

    def argv(self, *argv: str) -> list[str]:
        """``deskhandctl``'s arguments for ``argv`` against this daemon (without the program)."""
        return ["--socket", str(self.daemon.socket), *argv]

    def _command(self, *argv: str) -> list[str]:
        return [sys.executable, "-m", "deskhandctl", *self.argv(*argv)]

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self._command(*argv),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self._command(*argv),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )

    def at_terminal(self, *argv: str, answer: bytes = b"y\n") -> subprocess.CompletedProcess[str]:
        """``deskhandctl argv`` run by the person at a terminal (a pty): a step only they take
        (``unlock``, ``apps add``, ``grants restore``) asks them to confirm, and ``answer`` is
        typed once the prompt shows. ``stderr`` is what the terminal showed."""
        return as_the_person(self.argv(*argv), self.env, answer)

    def json(self, *argv: str, code: int = 0, at_terminal: bool = False) -> dict[str, Any]:
        done = self.at_terminal("--json", *argv) if at_terminal else self.run("--json", *argv)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout)
        return value

    def observe(self, app: str = "TextEdit", session: str = "") -> str:
        """``observe app`` (in ``session`` when given); the new state id."""
        head = ("--session", session) if session else ()
        state: str = self.json(*head, "observe", app)["state_id"]
        return state

    def restart(self) -> None:
        self.daemon = spawn_daemon(self.root, extra_env=self.extra)

    def received(self, tool: str) -> int:
        """How many calls of ``tool`` the simulator received (over every backend process)."""
        if not self.record.exists():
            return 0
        n = 0
        for line in self.record.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a blank line, or a process killed mid-line
            n += event.get("event") == "call_start" and event.get("tool") == tool
        return n

    @property
    def audit_path(self) -> Path:
        return self.root / "state" / "deskhand" / "audit" / "audit.jsonl"

    def audit(self) -> list[dict[str, Any]]:
        return [json.loads(x) for x in self.audit_path.read_text().splitlines() if x]

    def close(self) -> None:
        if self.daemon.proc.poll() is None:
            self.daemon.proc.kill()
            self.daemon.proc.wait(10)


@contextmanager
def cli_daemons() -> Iterator[Callable[..., CliDaemon]]:
    """``make(scenario, grants=SIM_APPS, root=None, **env)``: a daemon on the simulator with
    its traffic recorded and ``env`` added; every one is ended afterwards."""
    made: list[CliDaemon] = []

    def make(
        scenario: dict[str, Any] | None = None,
        *,
        grants: tuple[str, ...] = SIM_APPS,
        root: Path | None = None,
        **env: str,
    ) -> CliDaemon:
        root = root or short_tmpdir()
        if grants:
            save_grants(root / "config", grants)
        extra = {
            "DESKHAND_BACKEND": "sim",
            "DESKHAND_SIM_RECORD": str(root / "sim.jsonl"),
            **({"DESKHAND_SIM_SCENARIO": json.dumps(scenario)} if scenario is not None else {}),
            **env,
        }
        made.append(CliDaemon(root, extra))
        return made[-1]

    try:
        yield make
    finally:
        for d in made:
            d.close()
            shutil.rmtree(d.root, ignore_errors=True)


@pytest.fixture
def sim_desk() -> Iterator[Callable[..., CliDaemon]]:
    """``sim_desk(scenario, grants=SIM_APPS, **env)``: :func:`cli_daemons`'s ``make`` with every
    app preapproved when no scenario is given, and no Jev key unless ``env`` has one."""
    with cli_daemons() as make:

        def desk(
            scenario: dict[str, Any] | None = None,
            *,
            grants: tuple[str, ...] = SIM_APPS,
            **env: str,
        ) -> CliDaemon:
            return make(
                scenario or {"preapproved": ["*"]},
                grants=grants,
                **{"TYPESAFE_API_KEY": "", **env},
            )

        yield desk


@contextmanager
def consent_daemon() -> Iterator[CliDaemon]:
    """A daemon on the simulator where every app needs the person's consent: no saved grants,
    the staged identity catalogue (:mod:`dhtest.consent_rig`), the backend's own approval
    prompt preapproved so that only Deskhand's consent is asked."""
    from dhtest.consent_rig import ALLOWED, default_catalog

    root = short_tmpdir()
    catalog = root / "catalog.json"
    catalog.write_text(json.dumps(default_catalog()))
    with cli_daemons() as make:
        yield make(
            {"preapproved": ["*"]},
            grants=(),
            root=root,
            DESKHAND_IDENTITY_CATALOG=str(catalog),
            DESKHAND_ALLOWED_APPS=ALLOWED,
        )
