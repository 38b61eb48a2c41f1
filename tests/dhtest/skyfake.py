"""Sky's runtime laid out under a temporary home, with the fake ``codex`` and fake client from
``tests/fakes/sky`` in the places Deskhand looks for the real ones (on any OS).

The fakes are copied with the venv's interpreter as their ``#!`` line, so the fake client can
use Deskhand's own description of Sky's surface. Which failure each plays, and which shape of
``codex sandbox`` the fake codex has, is set by the environment :func:`install` returns (see
the scripts' docstrings).

The Computer Use service's group container is absent unless asked for: Deskhand must never
need it (and never look into it).
"""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from deskhand_d.backends import skylaunch
from dhtest.daemon import DaemonProc, daemon_env

FAKES = Path(__file__).resolve().parents[1] / "fakes" / "sky"


@dataclass(frozen=True)
class SkyFake:
    home: Path
    codex: Path
    client: Path
    ipc: Path
    cwd: Path
    codex_log: Path
    record: Path
    mode_file: Path
    env: dict[str, str]

    def mode(self, mode: str) -> None:
        """What the fake client does from its next start on."""
        self.mode_file.write_text(mode)

    def _codex_log(self) -> list[dict[str, object]]:
        if not self.codex_log.exists():
            return []
        return [json.loads(line) for line in self.codex_log.read_text().splitlines()]

    def codex_calls(self) -> list[dict[str, object]]:
        """Every run of ``codex sandbox`` that was to start a program (not a help or version
        question)."""
        return [c for c in self._codex_log() if not _is_question(c)]

    def client_starts(self) -> list[list[str]]:
        """The command line of every run of ``codex sandbox`` that started the client's
        ``mcp`` (not a ``turn-ended``)."""
        out: list[list[str]] = []
        for call in self.codex_calls():
            argv = call["argv"]
            assert isinstance(argv, list)
            if argv[-1:] == ["mcp"]:
                out.append([str(a) for a in argv])
        return out

    def help_reads(self) -> list[list[str]]:
        """The arguments of every ``--help`` and ``--version`` question put to the codex."""
        out: list[list[str]] = []
        for call in self._codex_log():
            argv = call["argv"]
            assert isinstance(argv, list)
            if _is_question(call):
                out.append([str(a) for a in argv[1:]])
        return out


def _is_question(call: dict[str, object]) -> bool:
    argv = call["argv"]
    return isinstance(argv, list) and argv[-1] in ("--help", "--version")


def _copy(src: Path, dst: Path) -> Path:
    dst.parent.mkdir(parents=True, exist_ok=True)
    body = src.read_text().split("\n", 1)[1]
    dst.write_text(f"#!{sys.executable}\n{body}")
    dst.chmod(dst.stat().st_mode | stat.S_IXUSR | stat.S_IXGRP | stat.S_IXOTH)
    return dst


def install(
    root: Path,
    *,
    codex_mode: str = "needs_p",
    client: bool = True,
    codex: bool = True,
    cwd: bool = True,
    container: str = "absent",
    client_in_app: bool = False,
) -> SkyFake:
    """The runtime under ``root/home`` (the home :func:`dhtest.daemon.daemon_env` sets); each
    part can be left out to play a runtime that is not installed.

    ``container``: ``absent`` (no ``~/Library/Group Containers`` at all), ``folder`` (the
    service's IPC folder exists) or ``loop`` (``Group Containers`` is a symbolic link to
    itself, so any look at a path inside it fails). ``client_in_app``: the client lives only
    inside a fake ChatGPT.app under ``root`` (named by ``DESKHAND_SKY_CLIENT``), as when
    Computer Use came with the app, and ``$CODEX_HOME/computer-use`` is left out."""
    home = root / "home"
    codex_home = home / ".codex"
    work = codex_home / "computer-use"
    client_path = work / skylaunch.CLIENT_IN_APP
    extra: dict[str, str] = {}
    if client_in_app:
        app = root / "Applications" / "ChatGPT.app" / "Contents" / "Resources" / "cua_node"
        work = app / "lib" / "node_modules" / "@oai" / "sky"
        client_path = work / skylaunch.CLIENT_IN_APP
        extra["DESKHAND_SKY_CLIENT"] = str(client_path)
    codex_path = root / "bin" / "codex"
    containers = home / "Library" / "Group Containers"
    ipc_path = containers / skylaunch.SKY_TEAM_CONTAINER / "IPC"
    if client:
        _copy(FAKES / "SkyComputerUseClient", client_path)
    if codex:
        _copy(FAKES / "codex", codex_path)
    if container == "folder":
        ipc_path.mkdir(parents=True, exist_ok=True)
    elif container == "loop":
        containers.parent.mkdir(parents=True, exist_ok=True)
        os.symlink(containers.name, containers)
    else:
        assert container == "absent", container
    if cwd:
        work.mkdir(parents=True, exist_ok=True)
    fake = SkyFake(
        home=home,
        codex=codex_path,
        client=client_path,
        ipc=ipc_path,
        cwd=work,
        codex_log=root / "codex.log",
        record=root / "sky.record",
        mode_file=root / "sky.mode",
        env={
            "CODEX_HOME": str(codex_home),
            "DESKHAND_CODEX": str(codex_path),
            "FAKE_CODEX_MODE": codex_mode,
            "FAKE_CODEX_LOG": str(root / "codex.log"),
            "FAKE_SKY_RECORD": str(root / "sky.record"),
            "FAKE_SKY_MODE_FILE": str(root / "sky.mode"),
            **extra,
        },
    )
    fake.mode("ok")
    return fake


def doctor(d: DaemonProc, backend: str = "sky") -> tuple[int, dict[str, Any]]:
    """``deskhandctl doctor [--backend KIND] --json`` against ``d``: its exit status and JSON
    result (``backend=""``: the daemon's own backend)."""
    which = ["--backend", backend] if backend else []
    done = subprocess.run(
        [sys.executable, "-m", "deskhandctl", "--socket", str(d.socket), "--no-autostart",
         "doctor", *which, "--json"],
        capture_output=True, text=True, timeout=90, env=daemon_env(d.root),
    )  # fmt: skip
    assert done.stdout, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return done.returncode, result
