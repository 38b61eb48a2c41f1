"""A private home for ``deskhandctl mcp config``: HOME, the XDG variables and the working
directory point into the test's temporary directory, so every host file it reads or writes is a
real file there. ``Desk.cli`` runs ``deskhandctl mcp config ARGS`` in-process (through the CLI's
one parser, as ``deskhandctl.__main__.main``); ``Desk.sub`` runs ``python -m deskhandctl mcp
config ARGS`` as a separate process with the same environment. The ``desk`` fixture is re-exported by this
directory's conftest.py; the tests import the rest from here (a module of its own name, so it
never collides with another directory's conftest)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
from deskhandctl.__main__ import main

ROOT = Path(__file__).resolve().parents[2]
FIXTURES = ROOT / "fixtures" / "mcp-hosts"
RUNTIME_DIR = "/run/user/4242"
SOCKET = f"{RUNTIME_DIR}/deskhand/deskhand.sock"
COMMAND = os.path.abspath(sys.executable)
ARGS = ["-P", "-m", "deskhandctl", "mcp"]
#: A project's entry: portable, checked in, nothing of this machine in it.
PORTABLE_COMMAND = "deskhandctl"
PORTABLE_ARGS = ["mcp"]
PORTABLE = {"command": PORTABLE_COMMAND, "args": PORTABLE_ARGS}
PORTABLE_TYPED = {"type": "stdio", **PORTABLE}
#: Every host and scope, the file it writes (under the test's home) and the table it holds.
HOST_FILES = [
    ("claude-code", "user", ".claude.json", "mcpServers"),
    ("claude-code", "project", "project/.mcp.json", "mcpServers"),
    ("codex", "user", ".codex/config.toml", "mcp_servers"),
    ("codex", "project", "project/.codex/config.toml", "mcp_servers"),
    ("cursor", "user", ".cursor/mcp.json", "mcpServers"),
    ("cursor", "project", "project/.cursor/mcp.json", "mcpServers"),
    ("claude-desktop", "user", ".config/Claude/claude_desktop_config.json", "mcpServers"),
    ("vscode", "user", ".config/Code/User/mcp.json", "servers"),
    ("vscode", "project", "project/.vscode/mcp.json", "servers"),
]
CLEARED = (
    "XDG_CONFIG_HOME",
    "DESKHAND_SOCKET",
    "DESKHAND_CONFIG",
    "CODEX_HOME",
    "CLAUDE_CONFIG_DIR",
    "APPDATA",
)
MCP_CONFIG = [sys.executable, "-m", "deskhandctl", "mcp", "config"]


@dataclass
class Result:
    code: int
    out: str
    err: str


@dataclass
class Desk:
    home: Path
    project: Path
    capsys: pytest.CaptureFixture[str]

    def cli(self, *args: str) -> Result:
        code = main(["mcp", "config", *args])
        captured = self.capsys.readouterr()
        return Result(code, captured.out, captured.err)

    def sub(self, *args: str, argv: list[str] | None = None) -> Result:
        command = argv or MCP_CONFIG
        done = subprocess.run(
            [*command, *args],
            cwd=self.project,
            env=dict(os.environ),
            capture_output=True,
            text=True,
            timeout=60,
        )
        return Result(done.returncode, done.stdout, done.stderr)

    def place(self, fixture: str, relative: str, mode: int = 0o600) -> Path:
        """Copy a sample config to ``relative`` (under home, or the project if it starts with
        ``project/``) with ``mode``; return its path."""
        path = self.path(relative)
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes((FIXTURES / fixture).read_bytes())
        path.chmod(mode)
        return path

    def path(self, relative: str) -> Path:
        if relative.startswith("project/"):
            return self.project / relative.removeprefix("project/")
        return self.home / relative


@pytest.fixture
def desk(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> Iterator[Desk]:
    home = tmp_path / "home"
    project = tmp_path / "project"
    home.mkdir()
    project.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_RUNTIME_DIR", RUNTIME_DIR)
    for name in CLEARED:
        monkeypatch.delenv(name, raising=False)
    monkeypatch.chdir(project)
    yield Desk(home, project, capsys)


def snippet(out: str) -> str:
    """The JSON or TOML block of what ``mcp config`` printed: JSON from its first ``{`` line
    to the first ``}`` line; TOML from its first ``[`` line to the line that offers another way
    (``Or …``)."""
    lines = out.splitlines()
    start = next(i for i, line in enumerate(lines) if line[:1] in "{[")
    if lines[start] == "{":
        end = lines.index("}", start) + 1
    else:
        end = next(i for i in range(start, len(lines)) if lines[i].startswith("Or "))
    return "\n".join(lines[start:end]).strip() + "\n"


def machine_paths(desk: Desk) -> list[str]:
    """Absolute paths of this machine that a portable entry must not hold."""
    return [COMMAND, str(desk.home), str(desk.project), RUNTIME_DIR, os.path.dirname(COMMAND)]


def read_json(path: Path) -> Any:
    return json.loads(path.read_text(encoding="utf-8"))


def dump_json(value: object) -> str:
    return json.dumps(value, indent=2, ensure_ascii=False) + "\n"


def files_in(directory: Path) -> list[str]:
    return sorted(p.name for p in directory.iterdir())
