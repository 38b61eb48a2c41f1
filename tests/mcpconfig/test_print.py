"""``deskhandctl mcp config`` without ``--write``: the entry, its file and the host's command,
for every host and scope; nothing is written."""

from __future__ import annotations

import json
import shlex
import tomllib

import pytest
from hostdesk import (
    ARGS,
    COMMAND,
    HOST_FILES,
    PORTABLE_ARGS,
    PORTABLE_COMMAND,
    SOCKET,
    Desk,
    files_in,
    machine_paths,
    snippet,
)


def parsed_entry(out: str, key: str, name: str = "deskhand") -> dict[str, object]:
    text = snippet(out)
    doc = tomllib.loads(text) if key == "mcp_servers" else json.loads(text)
    assert list(doc) == [key]
    assert list(doc[key]) == [name]
    entry: dict[str, object] = doc[key][name]
    return entry


@pytest.mark.parametrize(("host", "scope", "relative", "key"), HOST_FILES)
def test_prints_the_entry_and_its_file(
    desk: Desk, host: str, scope: str, relative: str, key: str
) -> None:
    """The printed snippet parses in the host's format. User scope starts this interpreter
    with the socket pinned; project scope (a file to check in) runs deskhandctl from PATH and
    pins nothing of this machine, and says so."""
    res = desk.cli("--host", host, "--scope", scope)
    assert res.code == 0, res.err
    entry = parsed_entry(res.out, key)
    if scope == "user":
        assert entry["command"] == COMMAND
        assert entry["args"] == ARGS
        assert entry["env"] == {"DESKHAND_SOCKET": SOCKET}
        assert "from PATH" not in res.out
    else:
        assert entry["command"] == PORTABLE_COMMAND
        assert entry["args"] == PORTABLE_ARGS
        assert "env" not in entry
        assert not any(p in snippet(res.out) for p in machine_paths(desk))
        assert "runs `deskhandctl` from PATH" in res.out and "check the file in" in res.out
    if host in ("claude-code", "vscode"):
        assert entry["type"] == "stdio"
    if host == "codex":
        assert entry["tool_timeout_sec"] == 600
        assert "tool_timeout_sec" in res.out.split("Or ", 1)[1]
    assert f"File: {desk.path(relative)}\n" in res.out
    assert f"--host {host}" in res.out and "--write" in res.out
    assert files_in(desk.home) == [] and files_in(desk.project) == []


def host_command(out: str, program: str) -> list[str]:
    line = next(line for line in out.splitlines() if line.startswith(f"  {program} "))
    return shlex.split(line)


def test_claude_code_command(desk: Desk) -> None:
    """claude mcp add with the scope, the env before --transport, the name, then the command;
    for project scope the portable command and no env."""
    argv = host_command(desk.cli("--host", "claude-code", "--scope", "user").out, "claude")
    assert argv == [
        "claude",
        "mcp",
        "add",
        "--scope",
        "user",
        "-e",
        f"DESKHAND_SOCKET={SOCKET}",
        "--transport",
        "stdio",
        "deskhand",
        "--",
        COMMAND,
        *ARGS,
    ]
    argv = host_command(desk.cli("--host", "claude-code", "--scope", "project").out, "claude")
    assert argv == [
        "claude",
        "mcp",
        "add",
        "--scope",
        "project",
        "--transport",
        "stdio",
        "deskhand",
        "--",
        PORTABLE_COMMAND,
        *PORTABLE_ARGS,
    ]


def test_codex_and_vscode_commands(desk: Desk) -> None:
    """code --add-mcp for VS Code's user scope; Codex's own command is not offered (it writes
    no tool_timeout_sec); none for project scope."""
    out = desk.cli("--host", "codex", "--name", "desk-2").out
    assert " add it:" not in out
    assert "[mcp_servers.desk-2]" in out and "--name desk-2" in out
    spec = json.loads(host_command(desk.cli("--host", "vscode").out, "code")[2])
    assert spec == {
        "name": "deskhand",
        "type": "stdio",
        "command": COMMAND,
        "args": ARGS,
        "env": {"DESKHAND_SOCKET": SOCKET},
    }
    for host, scope in [("codex", "project"), ("vscode", "project"), ("cursor", "user")]:
        assert " add it:" not in desk.cli("--host", host, "--scope", scope).out


def test_env_only_where_needed(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    """No env without XDG_RUNTIME_DIR (the default socket is then fixed) or on macOS;
    DESKHAND_SOCKET and DESKHAND_CONFIG pass on when set."""
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert "env" not in parsed_entry(desk.cli("--host", "cursor").out, "mcpServers")
    monkeypatch.setenv("XDG_RUNTIME_DIR", "/run/user/4242")
    out = desk.cli("--host", "cursor", "--platform", "macos").out
    assert "env" not in parsed_entry(out, "mcpServers")
    monkeypatch.setenv("DESKHAND_SOCKET", "/tmp/elsewhere.sock")
    monkeypatch.setenv("DESKHAND_CONFIG", "profile/config.toml")
    entry = parsed_entry(desk.cli("--host", "codex").out, "mcp_servers")
    assert entry["env"] == {
        "DESKHAND_SOCKET": "/tmp/elsewhere.sock",
        "DESKHAND_CONFIG": str(desk.project / "profile" / "config.toml"),
    }


def test_platform_paths(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    """macOS paths under Library; XDG_CONFIG_HOME and CODEX_HOME are honoured; Claude
    Desktop's Windows path is printed for reference."""
    support = desk.home / "Library" / "Application Support"
    out = desk.cli("--host", "claude-desktop", "--platform", "macos").out
    assert f"File: {support}/Claude/claude_desktop_config.json\n" in out
    assert r"%APPDATA%\Claude\claude_desktop_config.json" in out
    out = desk.cli("--host", "vscode", "--platform", "macos").out
    assert f"File: {support}/Code/User/mcp.json\n" in out
    monkeypatch.setenv("XDG_CONFIG_HOME", str(desk.home / "xdg"))
    monkeypatch.setenv("CODEX_HOME", str(desk.home / "codex-home"))
    assert f"File: {desk.home}/xdg/Code/User/mcp.json\n" in desk.cli("--host", "vscode").out
    out = desk.cli("--host", "claude-desktop")
    assert f"File: {desk.home}/xdg/Claude/claude_desktop_config.json\n" in out.out
    assert "no official Linux build" in out.out
    assert f"File: {desk.home}/codex-home/config.toml\n" in desk.cli("--host", "codex").out
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(desk.home / "cc"))
    assert f"File: {desk.home}/cc/.claude.json\n" in desk.cli("--host", "claude-code").out


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["--host", "zed"],
        ["--host", "claude-desktop", "--scope", "project"],
        ["--host", "cursor", "--name", "desk hand"],
        ["--host", "cursor", "--name", "x" * 65],
        ["--host", "cursor", "--write", "--platform", "macos"],
    ],
)
def test_usage_errors(desk: Desk, args: list[str]) -> None:
    """Bad usage exits 2 with a message and writes nothing."""
    res = desk.cli(*args)
    assert res.code == 2
    assert "error:" in res.err
    assert files_in(desk.home) == [] and files_in(desk.project) == []


def test_help(desk: Desk) -> None:
    """--help comes from the CLI's one parser: the command's usage, its options, the hosts."""
    res = desk.cli("--help")
    assert res.code == 0
    assert res.out.startswith("usage: deskhandctl mcp config")
    assert "--host {claude-code,codex,cursor,claude-desktop,vscode}" in res.out
    assert "--write" in res.out and "--platform {linux,macos}" in res.out


@pytest.mark.parametrize(
    ("args", "problem"),
    [
        (["--host", "claude-desktop", "--scope", "project"], "Claude Desktop has no project scope"),
        (["--host", "cursor", "--name", "desk hand"], "--name takes 1 to 64 letters"),
        (["--host", "cursor", "--write", "--platform", "macos"], "--write edits this machine's"),
    ],
)
def test_semantic_usage_errors_read_like_the_parsers(
    desk: Desk, args: list[str], problem: str
) -> None:
    """The checks the table cannot express end as every usage error does: the command's usage,
    then ``deskhandctl mcp config: error: ...``, exit 2."""
    res = desk.cli(*args)
    assert res.code == 2 and res.out == ""
    assert res.err.startswith("usage: deskhandctl mcp config")
    assert f"deskhandctl mcp config: error: {problem}" in res.err


def test_subprocess_prints(desk: Desk) -> None:
    """python -m deskhandctl mcp config, a process of its own, prints the same parseable entry."""
    res = desk.sub("--host", "claude-desktop")
    assert res.code == 0, res.err
    assert parsed_entry(res.out, "mcpServers")["command"] == COMMAND


def test_through_deskhandctl_mcp(desk: Desk) -> None:
    """python -m deskhandctl mcp config reaches this module, printing and writing."""
    res = desk.sub("--host", "codex")
    assert res.code == 0, res.err
    assert parsed_entry(res.out, "mcp_servers")["command"] == COMMAND
    res = desk.sub("--host", "codex", "--scope", "project")
    assert res.code == 0, res.err
    assert parsed_entry(res.out, "mcp_servers")["command"] == PORTABLE_COMMAND
    res = desk.sub("--host", "cursor", "--scope", "project", "--write")
    assert res.code == 0, res.err
    written = json.loads((desk.project / ".cursor" / "mcp.json").read_text())
    assert written["mcpServers"]["deskhand"]["args"] == PORTABLE_ARGS
