"""Setup that matches each host (issue #27 §3): Claude Code's CLAUDE_CONFIG_DIR, ``--write``
idempotent after a host rewrote its file, Codex's ``--approve-tools``, portable project entries
(0644, nothing of this machine) and no ``codex mcp add`` on offer."""

from __future__ import annotations

import json
import stat
import tomllib
from pathlib import Path

import pytest
from hostdesk import (
    ARGS,
    COMMAND,
    FIXTURES,
    PORTABLE,
    PORTABLE_TYPED,
    SOCKET,
    Desk,
    files_in,
    machine_paths,
    read_json,
    snippet,
)

TYPED = {"type": "stdio", "command": COMMAND, "args": ARGS, "env": {"DESKHAND_SOCKET": SOCKET}}
APPROVE_LINE = (
    'default_tools_approval_mode = "approve"  # codex exec runs no tool it must ask about\n'
)


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


# ----- 1. CLAUDE_CONFIG_DIR --------------------------------------------------------------------


def test_claude_config_dir_is_where_user_scope_prints(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With CLAUDE_CONFIG_DIR set, Claude Code reads only $CLAUDE_CONFIG_DIR/.claude.json:
    that is the file printed, with no hedging note; project scope does not move."""
    config_dir = desk.home / "claude-alt"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    res = desk.cli("--host", "claude-code")
    assert res.code == 0, res.err
    assert f"File: {config_dir}/.claude.json\n" in res.out
    assert f"File: {desk.home}/.claude.json\n" not in res.out
    assert "CLAUDE_CONFIG_DIR is set" not in res.out
    res = desk.cli("--host", "claude-code", "--scope", "project")
    assert f"File: {desk.project}/.mcp.json\n" in res.out
    assert files_in(desk.home) == []


def test_claude_config_dir_write_leaves_home_file(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """--write edits $CLAUDE_CONFIG_DIR/.claude.json (keeping the rest of it) and leaves
    ~/.claude.json byte for byte as it was, with no backup beside it."""
    config_dir = desk.home / "claude-alt"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    home_file = desk.place("claude-code-user.json", ".claude.json")
    home_bytes = home_file.read_bytes()
    alt = desk.place("claude-code-user.json", "claude-alt/.claude.json")
    res = desk.cli("--host", "claude-code", "--write")
    assert res.code == 0, res.err
    assert f"Updated {alt} " in res.out
    doc = read_json(alt)
    assert list(doc["mcpServers"]) == ["playwright", "deskhand"]
    assert doc["mcpServers"]["deskhand"] == TYPED
    assert len(backups(alt)) == 1
    assert home_file.read_bytes() == home_bytes
    assert backups(home_file) == []


def test_claude_config_dir_write_creates_the_file(
    desk: Desk, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A missing $CLAUDE_CONFIG_DIR/.claude.json is created 0600 (user scope); no
    ~/.claude.json appears."""
    config_dir = desk.home / "claude-alt"
    monkeypatch.setenv("CLAUDE_CONFIG_DIR", str(config_dir))
    res = desk.cli("--host", "claude-code", "--write")
    assert res.code == 0, res.err
    path = config_dir / ".claude.json"
    assert f"Created {path} (mode 0600)" in res.out
    assert read_json(path) == {"mcpServers": {"deskhand": TYPED}}
    assert mode_of(path) == 0o600
    assert files_in(desk.home) == ["claude-alt"]


# ----- 2. idempotent by meaning ----------------------------------------------------------------


def test_claude_code_rewrite_then_write_again_writes_nothing(desk: Desk) -> None:
    """After Claude Code rewrote ~/.claude.json (the same JSON with no final newline, another
    indent, its own keys moved), a second --write finds the entry: nothing written, no new
    backup, the bytes as Claude Code left them."""
    path = desk.place("claude-code-user.json", ".claude.json")
    assert desk.cli("--host", "claude-code", "--write").code == 0
    assert len(backups(path)) == 1
    doc = read_json(path)
    doc["numStartups"] += 1
    doc = {"mcpServers": doc.pop("mcpServers"), **doc}  # key order elsewhere changed
    for rewritten in (json.dumps(doc, indent=2), json.dumps(doc, indent=4), json.dumps(doc)):
        path.write_text(rewritten, encoding="utf-8")  # no trailing newline
        res = desk.cli("--host", "claude-code", "--write")
        assert res.code == 0, res.err
        assert f"{path} already has this entry for 'deskhand'; nothing written." in res.out
        assert "Updated" not in res.out
        assert path.read_text(encoding="utf-8") == rewritten
        assert len(backups(path)) == 1


def test_json_entry_with_keys_reordered_writes_nothing(desk: Desk) -> None:
    """Our entry itself laid out differently (keys in another order) is the same entry."""
    path = desk.path(".cursor/mcp.json")
    path.parent.mkdir()
    entry = {"env": {"DESKHAND_SOCKET": SOCKET}, "args": ARGS, "command": COMMAND}
    text = json.dumps({"mcpServers": {"deskhand": entry}}, indent="\t")
    path.write_text(text)
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 0, res.err
    assert "nothing written" in res.out
    assert path.read_text() == text and backups(path) == []


def test_codex_reformatted_entry_writes_nothing(desk: Desk) -> None:
    """A Codex table holding our values in another layout (keys reordered, args over several
    lines, no comment, an inline env) and a per-tool subtable of the person's is already our
    entry: nothing written, no backup, every byte kept."""
    path = desk.path(".codex/config.toml")
    path.parent.mkdir()
    text = (
        'model = "gpt-5-codex"\n'
        "\n"
        "[mcp_servers.deskhand]\n"
        "tool_timeout_sec = 600\n"
        "args = [\n"
        '  "-P", "-m",\n'
        '  "deskhandctl", "mcp",\n'
        "]\n"
        f"command = '{COMMAND}'\n"
        f'env = {{ DESKHAND_SOCKET = "{SOCKET}" }}\n'
        "\n"
        "[mcp_servers.deskhand.tools.click]\n"
        'approval_mode = "prompt"'  # and no final newline
    )
    path.write_text(text)
    res = desk.cli("--host", "codex", "--write")
    assert res.code == 0, res.err
    assert f"{path} already has this entry for 'deskhand'; nothing written." in res.out
    assert path.read_text() == text
    assert backups(path) == []


def test_codex_write_reformat_write_again(desk: Desk) -> None:
    """Written once, then the TOML reformatted around and in our table: the second run writes
    nothing and leaves no second backup."""
    path = desk.place("codex-config.toml", ".codex/config.toml")
    assert desk.cli("--host", "codex", "--write").code == 0
    text = path.read_text()
    reformatted = (
        text.replace("tool_timeout_sec = 600  # a call may wait for a consent answer", "")
        .replace("[mcp_servers.deskhand.env]", "tool_timeout_sec=600\n[mcp_servers.deskhand.env]")
        .replace(
            'args = ["-P", "-m", "deskhandctl", "mcp"]', "args = ['-P','-m','deskhandctl','mcp']"
        )
        .rstrip("\n")
    )
    assert reformatted != text
    path.write_text(reformatted)
    assert tomllib.loads(reformatted) == tomllib.loads(text)
    res = desk.cli("--host", "codex", "--write")
    assert res.code == 0, res.err
    assert "nothing written" in res.out
    assert path.read_text() == reformatted
    assert len(backups(path)) == 1


def test_a_different_entry_is_still_rewritten(desk: Desk) -> None:
    """Idempotence is by meaning, not blindness: another socket, or an approval mode no longer
    asked for, is a change."""
    path = desk.path(".codex/config.toml")
    assert desk.cli("--host", "codex", "--write", "--approve-tools").code == 0
    assert APPROVE_LINE in path.read_text()
    res = desk.cli("--host", "codex", "--write")
    assert res.code == 0, res.err
    assert "nothing written" not in res.out
    assert "default_tools_approval_mode" not in path.read_text()
    assert (
        "default_tools_approval_mode"
        not in tomllib.loads(path.read_text())["mcp_servers"]["deskhand"]
    )
    assert len(backups(path)) == 1


# ----- 3. --approve-tools ----------------------------------------------------------------------


def test_approve_tools_writes_the_codex_line(desk: Desk) -> None:
    """--approve-tools adds default_tools_approval_mode = "approve" to our table, after
    tool_timeout_sec; the file parses with it and the rest of the sample stays."""
    path = desk.place("codex-config.toml", ".codex/config.toml")
    original = path.read_text()
    res = desk.cli("--host", "codex", "--write", "--approve-tools")
    assert res.code == 0, res.err
    text = path.read_text()
    assert text.startswith(original)
    assert "tool_timeout_sec = 600  # a call may wait for a consent answer\n" + APPROVE_LINE in text
    doc = tomllib.loads(text)
    assert doc["mcp_servers"]["deskhand"] == {
        "command": COMMAND,
        "args": ARGS,
        "tool_timeout_sec": 600,
        "default_tools_approval_mode": "approve",
        "env": {"DESKHAND_SOCKET": SOCKET},
    }
    assert list(doc["mcp_servers"]) == ["github", "notes", "deskhand"]
    assert 'Note: default_tools_approval_mode = "approve"' in res.out
    again = desk.cli("--host", "codex", "--write", "--approve-tools")
    assert "nothing written" in again.out and path.read_text() == text


def test_approve_tools_printed(desk: Desk) -> None:
    """Printed with --approve-tools: the line is in the snippet, the offered --write keeps the
    switch, and the note explains it; without it the note suggests it."""
    res = desk.cli("--host", "codex", "--approve-tools")
    assert res.code == 0, res.err
    entry = tomllib.loads(snippet(res.out))["mcp_servers"]["deskhand"]
    assert entry["default_tools_approval_mode"] == "approve"
    assert "deskhandctl mcp config --host codex --approve-tools --write" in res.out
    assert "add --approve-tools" not in res.out
    res = desk.cli("--host", "codex")
    assert "default_tools_approval_mode" not in snippet(res.out)
    assert "codex exec" in res.out and "add --approve-tools" in res.out


def test_approve_tools_project_scope(desk: Desk) -> None:
    """--approve-tools goes with the portable project entry too."""
    res = desk.cli("--host", "codex", "--scope", "project", "--write", "--approve-tools")
    assert res.code == 0, res.err
    entry = tomllib.loads((desk.project / ".codex" / "config.toml").read_text())["mcp_servers"][
        "deskhand"
    ]
    assert entry == {**PORTABLE, "tool_timeout_sec": 600, "default_tools_approval_mode": "approve"}


@pytest.mark.parametrize("host", ["claude-code", "cursor", "claude-desktop", "vscode"])
@pytest.mark.parametrize("write", [False, True])
def test_approve_tools_is_for_codex_only(desk: Desk, host: str, write: bool) -> None:
    """Any other host: a usage error (exit 2) that says why, and nothing written."""
    res = desk.cli("--host", host, "--approve-tools", *(["--write"] if write else []))
    assert res.code == 2
    assert res.out == ""
    assert res.err.startswith("usage: deskhandctl mcp config")
    assert "deskhandctl mcp config: error: --approve-tools is for codex" in res.err
    if host == "claude-code":
        assert "--allowedTools mcp__deskhand" in res.err
    assert files_in(desk.home) == [] and files_in(desk.project) == []


def test_approve_tools_in_help(desk: Desk) -> None:
    res = desk.cli("--help")
    assert res.code == 0 and "--approve-tools" in res.out


# ----- 4. portable project entries -------------------------------------------------------------

PROJECT_FILES = [
    ("claude-code", ".mcp.json", "mcpServers", PORTABLE_TYPED),
    ("codex", ".codex/config.toml", "mcp_servers", {**PORTABLE, "tool_timeout_sec": 600}),
    ("cursor", ".cursor/mcp.json", "mcpServers", PORTABLE),
    ("vscode", ".vscode/mcp.json", "servers", PORTABLE_TYPED),
]


@pytest.mark.parametrize(("host", "relative", "key", "entry"), PROJECT_FILES)
def test_project_scope_is_portable(
    desk: Desk,
    monkeypatch: pytest.MonkeyPatch,
    host: str,
    relative: str,
    key: str,
    entry: dict[str, object],
) -> None:
    """A project's new file (meant to be checked in) is 0644 and holds deskhandctl from PATH
    with no env: no socket, profile or interpreter of this machine, even when they are set."""
    monkeypatch.setenv("DESKHAND_SOCKET", str(desk.home / "my.sock"))
    monkeypatch.setenv("DESKHAND_CONFIG", str(desk.home / "profile.toml"))
    res = desk.cli("--host", host, "--scope", "project", "--write")
    assert res.code == 0, res.err
    path = desk.project / relative
    assert mode_of(path) == 0o644
    assert f"Created {path} (mode 0644)" in res.out
    text = path.read_text()
    doc = tomllib.loads(text) if host == "codex" else json.loads(text)
    assert doc == {key: {"deskhand": entry}}
    assert "/" not in json.dumps(doc)  # no path at all, of this machine or another
    assert not any(p in text for p in machine_paths(desk))
    assert "DESKHAND_SOCKET" not in text and "DESKHAND_CONFIG" not in text
    assert "runs `deskhandctl` from PATH" in res.out


def test_project_scope_keeps_an_existing_files_mode(desk: Desk) -> None:
    """An existing project file keeps its mode (0644 sample stays 0644, with its backup)."""
    path = desk.place("cursor-mcp.json", "project/.cursor/mcp.json", mode=0o644)
    res = desk.cli("--host", "cursor", "--scope", "project", "--write")
    assert res.code == 0, res.err
    assert read_json(path)["mcpServers"]["deskhand"] == PORTABLE
    assert mode_of(path) == 0o644
    (saved,) = backups(path)
    assert saved.read_bytes() == (FIXTURES / "cursor-mcp.json").read_bytes()


def test_user_scope_pins_this_machine_project_scope_does_not(desk: Desk) -> None:
    """The same host, both scopes: user scope keeps 0600, this interpreter's absolute path and
    the socket pinned; project scope, 0644 and the portable entry."""
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 0, res.err
    user = desk.home / ".cursor" / "mcp.json"
    assert mode_of(user) == 0o600
    assert read_json(user)["mcpServers"]["deskhand"] == {
        "command": COMMAND,
        "args": ARGS,
        "env": {"DESKHAND_SOCKET": SOCKET},
    }
    assert "from PATH" not in res.out
    res = desk.cli("--host", "cursor", "--scope", "project", "--write")
    assert res.code == 0, res.err
    project = desk.project / ".cursor" / "mcp.json"
    assert mode_of(project) == 0o644
    assert read_json(project)["mcpServers"]["deskhand"] == PORTABLE


# ----- 5. what each host is told ---------------------------------------------------------------


@pytest.mark.parametrize("scope", ["user", "project"])
def test_codex_mcp_add_is_not_offered(desk: Desk, scope: str) -> None:
    """Codex's own command is not offered (it writes no tool_timeout_sec and drops ours when
    run again): no line to run it, only a note saying to use this command with --write; the
    notes name tool_timeout_sec and --approve-tools."""
    res = desk.cli("--host", "codex", "--scope", scope)
    assert res.code == 0, res.err
    assert "Or let Codex add it" not in res.out
    lines = res.out.splitlines()
    assert not any(line.lstrip().startswith("codex ") for line in lines)
    assert all(line.startswith("Note: ") for line in lines if "codex mcp add" in line)
    notes = "\n".join(line for line in lines if line.startswith("Note: "))
    assert "`codex mcp add` writes no such line" in notes and "--write" in notes
    assert "tool_timeout_sec = 600" in notes
    assert "--approve-tools" in notes
    assert "then set tool_timeout_sec" not in res.out


def test_codex_write_notes(desk: Desk) -> None:
    """--write for Codex ends with the same notes: tool_timeout_sec and --approve-tools."""
    res = desk.cli("--host", "codex", "--write")
    assert res.code == 0, res.err
    assert "Note: tool_timeout_sec = 600" in res.out
    assert "add --approve-tools" in res.out
    assert not any(line.startswith("  codex ") for line in res.out.splitlines())


@pytest.mark.parametrize("write", [False, True])
def test_claude_code_headless_note(desk: Desk, write: bool) -> None:
    """Claude Code is told that claude -p needs --allowedTools mcp__NAME."""
    res = desk.cli("--host", "claude-code", *(["--write"] if write else []))
    assert res.code == 0, res.err
    assert "`claude -p`" in res.out and "--allowedTools mcp__" in res.out
    other = desk.cli("--host", "cursor")
    assert "--allowedTools" not in other.out
