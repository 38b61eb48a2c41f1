"""Sky's runtime laid out under a temporary home, with the fake ``codex`` and fake client from
``tests/fakes/sky`` in the places Deskhand looks for the real ones (on any OS).

The fakes are copied with the venv's interpreter as their ``#!`` line, so the fake client can
use Deskhand's own description of Sky's surface. Which failure each plays is set by the
environment :func:`install` returns (see the scripts' docstrings).
"""

from __future__ import annotations

import stat
import sys
from dataclasses import dataclass
from pathlib import Path

from deskhand_d.backends import skylaunch

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

    def codex_calls(self) -> list[dict[str, object]]:
        import json

        if not self.codex_log.exists():
            return []
        return [json.loads(line) for line in self.codex_log.read_text().splitlines()]


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
    ipc: bool = True,
    cwd: bool = True,
) -> SkyFake:
    """The runtime under ``root/home`` (the home :func:`dhtest.daemon.daemon_env` sets); each
    part can be left out to play a runtime that is not installed."""
    home = root / "home"
    codex_home = home / ".codex"
    work = codex_home / "computer-use"
    client_path = work / skylaunch.CLIENT_IN_APP
    codex_path = root / "bin" / "codex"
    ipc_path = home / "Library" / "Group Containers" / skylaunch.SKY_TEAM_CONTAINER / "IPC"
    if client:
        _copy(FAKES / "SkyComputerUseClient", client_path)
    if codex:
        _copy(FAKES / "codex", codex_path)
    if ipc:
        ipc_path.mkdir(parents=True, exist_ok=True)
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
        },
    )
    fake.mode("ok")
    return fake
