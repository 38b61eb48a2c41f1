"""A real daemon on the simulated desktop driven through the real ``deskhandctl``, for tests.

:class:`CliDaemon` runs CLI commands as subprocesses against one daemon (never autostarting
another), reads its simulator's traffic record and its audit log; :func:`cli_daemons` is the
factory behind the tests' fixtures and ends every daemon it started. :func:`mount_tmpfs` and
:func:`fill` make a small file system and fill it to the last byte, for full-disk cases.
"""

from __future__ import annotations

import json
import os
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


class CliDaemon:
    """One daemon (restartable with the same settings) and the CLI pointed at it."""

    def __init__(self, root: Path, extra: dict[str, str]) -> None:
        self.root = root
        self.extra = extra
        self.record = root / "sim.jsonl"
        self.daemon: DaemonProc = spawn_daemon(root, extra_env=extra)

    @property
    def env(self) -> dict[str, str]:
        return {**daemon_env(self.root), "DESKHAND_NO_AUTOSTART": "1"}  # only this daemon

    def argv(self, *argv: str) -> list[str]:
        return [sys.executable, "-m", "deskhandctl", "--socket", str(self.daemon.socket), *argv]

    def run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            self.argv(*argv),
            env=self.env,
            capture_output=True,
            text=True,
            timeout=timeout,
            stdin=subprocess.DEVNULL,
        )

    def start(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            self.argv(*argv),
            env=self.env,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            stdin=subprocess.DEVNULL,
            text=True,
        )

    def json(self, *argv: str, code: int = 0) -> dict[str, Any]:
        done = self.run("--json", *argv)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout)
        return value

    def observe(self, app: str = "TextEdit", session: str = "") -> str:
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
                continue  # a process killed mid-line
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


def mount_tmpfs(path: Path, size: str) -> None:
    """A tmpfs of ``size`` at ``path`` (created 0700); skips without root, fails under CI."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        if os.environ.get("CI"):
            pytest.fail("a tmpfs needs root and mount(8); CI runs as root")
        pytest.skip("needs root to mount a small tmpfs for the full-disk case")
    path.mkdir(parents=True, mode=0o700, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True
    )


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` to the last byte; return the filler file."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 1):  # down to the last byte
            try:
                while f.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler
