"""``deskhandctl mcp config --write``: new files, the hosts' sample files with other entries
(kept byte for byte outside ours), rewriting our entry, backups, modes, symlinks."""

from __future__ import annotations

import os
import stat
import tomllib
from pathlib import Path

import pytest
from deskhandctl.setup import mcpconfig
from hostdesk import (
    ARGS,
    COMMAND,
    FIXTURES,
    HOST_FILES,
    PORTABLE,
    PORTABLE_TYPED,
    SOCKET,
    Desk,
    dump_json,
    files_in,
    read_json,
)

ENTRY = {"command": COMMAND, "args": ARGS, "env": {"DESKHAND_SOCKET": SOCKET}}
TYPED = {"type": "stdio", **ENTRY}


def mode_of(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def umask() -> int:
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def backups(path: Path) -> list[Path]:
    return sorted(path.parent.glob(path.name + ".bak-*"))


def codex_entry(name: str = "deskhand", *, approve: bool = False) -> str:
    approval = (
        'default_tools_approval_mode = "approve"  # codex exec runs no tool it must ask about\n'
        if approve
        else ""
    )
    return (
        f"[mcp_servers.{name}]\n"
        f'command = "{COMMAND}"\n'
        'args = ["-P", "-m", "deskhandctl", "mcp"]\n'
        "tool_timeout_sec = 600  # a call may wait for a consent answer\n"
        f"{approval}"
        "\n"
        f"[mcp_servers.{name}.env]\n"
        f'DESKHAND_SOCKET = "{SOCKET}"\n'
    )


@pytest.mark.parametrize(("host", "scope", "relative", "key"), HOST_FILES)
def test_creates_a_missing_file(desk: Desk, host: str, scope: str, relative: str, key: str) -> None:
    """Parent directories are made and the file holds only our entry; no backup. User scope:
    0600 in a 0700 directory, this machine's entry; project scope (checked in, read by
    teammates' tools): 0644 in a 0755 directory, the portable entry."""
    res = desk.cli("--host", host, "--scope", scope, "--write")
    assert res.code == 0, res.err
    path = desk.path(relative)
    user = scope == "user"
    assert mode_of(path) == (0o600 if user else 0o644)
    assert f"Created {path} (mode {'0600' if user else '0644'})" in res.out
    if path.parent not in (desk.home, desk.project):
        assert mode_of(path.parent) == (0o700 if user else 0o755) & ~umask()
    typed = host in ("claude-code", "vscode")
    if host == "codex" and user:
        assert path.read_text() == codex_entry()
    elif host == "codex":
        assert path.read_text() == mcpconfig.toml_entry("deskhand", mcpconfig.PORTABLE)
        assert tomllib.loads(path.read_text())["mcp_servers"]["deskhand"] == {
            **PORTABLE,
            "tool_timeout_sec": 600,
        }
    elif user:
        assert path.read_text() == dump_json({key: {"deskhand": TYPED if typed else ENTRY}})
    else:
        entry = PORTABLE_TYPED if typed else PORTABLE
        assert path.read_text() == dump_json({key: {"deskhand": entry}})
    if host == "codex":
        assert "tool_timeout_sec" in res.out
    assert backups(path) == []
    assert files_in(path.parent) == [path.name]


JSON_SAMPLES = [
    ("claude-code", "user", "claude-code-user.json", ".claude.json", "mcpServers", TYPED),
    ("cursor", "user", "cursor-mcp.json", ".cursor/mcp.json", "mcpServers", ENTRY),
    ("cursor", "project", "cursor-mcp.json", "project/.cursor/mcp.json", "mcpServers", PORTABLE),
    (
        "claude-desktop",
        "user",
        "claude-desktop-config.json",
        ".config/Claude/claude_desktop_config.json",
        "mcpServers",
        ENTRY,
    ),
    ("vscode", "user", "vscode-mcp.json", ".config/Code/User/mcp.json", "servers", TYPED),
    (
        "vscode",
        "project",
        "vscode-mcp.json",
        "project/.vscode/mcp.json",
        "servers",
        PORTABLE_TYPED,
    ),
]


@pytest.mark.parametrize(("host", "scope", "fixture", "relative", "key", "entry"), JSON_SAMPLES)
def test_json_sample_keeps_everything_else(
    desk: Desk,
    host: str,
    scope: str,
    fixture: str,
    relative: str,
    key: str,
    entry: dict[str, object],
) -> None:
    """Our entry is added last under the servers key; without it the file is the sample again,
    byte for byte (other keys, servers and their order); mode and a backup are kept."""
    path = desk.place(fixture, relative, mode=0o644)
    original = path.read_bytes()
    res = desk.cli("--host", host, "--scope", scope, "--write")
    assert res.code == 0, res.err
    doc = read_json(path)
    assert list(doc[key])[-1] == "deskhand"
    assert doc[key].pop("deskhand") == entry
    assert dump_json(doc).encode() == original
    assert mode_of(path) == 0o644
    (saved,) = backups(path)
    assert saved.read_bytes() == original and mode_of(saved) == 0o644
    assert f"the old file is {saved}" in res.out
    assert '+    "deskhand": {' in res.out  # the difference is shown


def test_claude_code_leaves_project_local_servers(desk: Desk) -> None:
    """User scope writes the top-level mcpServers, never a project's local deskhand entry."""
    path = desk.place("claude-code-user.json", ".claude.json")
    before = read_json(path)
    assert desk.cli("--host", "claude-code", "--write").code == 0
    after = read_json(path)
    assert after["projects"] == before["projects"]
    assert list(after["mcpServers"]) == ["playwright", "deskhand"]


def test_rewrites_our_json_entry_in_place(desk: Desk) -> None:
    """An older deskhand entry is replaced where it stands (its pinned socket dropped: a
    project's entry pins nothing); the servers around it stay."""
    path = desk.place("claude-code-project.mcp.json", "project/.mcp.json")
    before = read_json(path)
    res = desk.cli("--host", "claude-code", "--scope", "project", "--write")
    assert res.code == 0, res.err
    after = read_json(path)
    assert list(after["mcpServers"]) == ["docs", "deskhand", "tracker"]
    assert after["mcpServers"]["deskhand"] == PORTABLE_TYPED
    before["mcpServers"]["deskhand"] = PORTABLE_TYPED
    assert path.read_text() == dump_json(before)
    assert '-        "DESKHAND_SOCKET": "/run/user/1000/deskhand/old.sock"' in res.out
    assert mode_of(path) == 0o600  # an existing file keeps its mode


def test_codex_sample_keeps_every_byte(desk: Desk) -> None:
    """Without our entry, the table is appended after a blank line; the rest, comments and a
    look-alike header inside a multi-line string included, is untouched."""
    path = desk.place("codex-config.toml", ".codex/config.toml", mode=0o640)
    original = path.read_text()
    res = desk.cli("--host", "codex", "--write")
    assert res.code == 0, res.err
    assert path.read_text() == original + "\n" + codex_entry()
    doc = tomllib.loads(path.read_text())
    assert list(doc["mcp_servers"]) == ["github", "notes", "deskhand"]
    assert mode_of(path) == 0o640
    (saved,) = backups(path)
    assert saved.read_text() == original and mode_of(saved) == 0o640


def test_codex_rewrites_only_our_table_and_env(desk: Desk) -> None:
    """An older entry and its .env are replaced in place; its tools subtable, the comments
    around it and the other servers stay exactly as they were."""
    path = desk.place("codex-config-with-deskhand.toml", ".codex/config.toml")
    expected = (FIXTURES / "codex-config-with-deskhand.after.toml").read_text()
    res = desk.cli("--host", "codex", "--write")
    assert res.code == 0, res.err
    assert path.read_text() == expected.replace("@ENTRY@\n", codex_entry() + "\n")
    doc = tomllib.loads(path.read_text())
    assert doc["mcp_servers"]["deskhand"]["tools"] == {"click": {"approval_mode": "prompt"}}
    assert '-command = "deskhandctl"' in res.out


def test_codex_env_elsewhere_and_without_env(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    """A .env subtable far from its table is removed with it; with no env to pin, none is
    written; a named entry leaves deskhand alone; CRLF files get CRLF lines."""
    path = desk.path(".codex/config.toml")
    path.parent.mkdir()
    path.write_bytes(
        b'[mcp_servers.deskhand.env]\r\nOLD = "1"\r\n\r\n[other]\r\nx = 1\r\n\r\n'
        b'[mcp_servers.deskhand]\r\ncommand = "old"\r\n'
    )
    monkeypatch.delenv("XDG_RUNTIME_DIR")
    assert desk.cli("--host", "codex", "--write").code == 0
    ours = (
        f'[mcp_servers.deskhand]\r\ncommand = "{COMMAND}"\r\n'
        'args = ["-P", "-m", "deskhandctl", "mcp"]\r\n'
        "tool_timeout_sec = 600  # a call may wait for a consent answer\r\n"
    ).encode()
    assert path.read_bytes() == ours + b"\r\n[other]\r\nx = 1\r\n\r\n"
    assert desk.cli("--host", "codex", "--name", "desk-b", "--write").code == 0
    doc = tomllib.loads(path.read_text())
    assert list(doc["mcp_servers"]) == ["deskhand", "desk-b"]
    assert path.read_bytes().startswith(ours + b"\r\n[other]\r\nx = 1\r\n\r\n[mcp_servers.desk-b]")


@pytest.mark.parametrize("host", ["codex", "cursor"])
def test_same_entry_writes_nothing(desk: Desk, host: str) -> None:
    """A second --write finds the entry there: no new backup, the file untouched."""
    assert desk.cli("--host", host, "--write").code == 0
    path = desk.path(".codex/config.toml" if host == "codex" else ".cursor/mcp.json")
    stamp = path.stat().st_mtime_ns
    res = desk.cli("--host", host, "--write")
    assert res.code == 0
    assert "nothing written" in res.out
    assert path.stat().st_mtime_ns == stamp
    assert backups(path) == []


def test_two_backups_in_one_second(desk: Desk, monkeypatch: pytest.MonkeyPatch) -> None:
    """Backups never overwrite each other."""
    path = desk.place("cursor-mcp.json", ".cursor/mcp.json")
    assert desk.cli("--host", "cursor", "--write").code == 0
    monkeypatch.setenv("DESKHAND_SOCKET", "/tmp/other.sock")
    assert desk.cli("--host", "cursor", "--write").code == 0
    first, second = backups(path)
    assert first.read_bytes() == (FIXTURES / "cursor-mcp.json").read_bytes()
    assert "/run/user/4242" in second.read_text()
    assert read_json(path)["mcpServers"]["deskhand"]["env"] == {
        "DESKHAND_SOCKET": "/tmp/other.sock"
    }


def test_symlink_to_own_dotfiles_is_followed(desk: Desk) -> None:
    """A link into a private directory of the person's: the target is edited, the link kept."""
    dotfiles = desk.home / "dotfiles"
    dotfiles.mkdir(mode=0o700)
    real = dotfiles / "mcp.json"
    real.write_bytes((FIXTURES / "cursor-mcp.json").read_bytes())
    link = desk.path(".cursor/mcp.json")
    link.parent.mkdir()
    link.symlink_to(real)
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 0, res.err
    assert link.is_symlink() and os.readlink(link) == str(real)
    assert read_json(real)["mcpServers"]["deskhand"] == ENTRY
    assert len(backups(real)) == 1
    assert "is a symbolic link to" in res.out


def test_subprocess_writes(desk: Desk) -> None:
    """The module in a process of its own writes the sample like main() does."""
    path = desk.place("vscode-mcp.json", "project/.vscode/mcp.json")
    res = desk.sub("--host", "vscode", "--scope", "project", "--write")
    assert res.code == 0, res.err
    assert read_json(path)["servers"]["deskhand"] == PORTABLE_TYPED
    assert len(backups(path)) == 1


def test_toml_headers_reader() -> None:
    """Headers are found outside strings and arrays only, with quoting and comments."""
    lines = [
        'a = """\n',
        "[not.this]\n",
        '"""\n',
        "b = [\n",
        "  [1, 2],\n",
        "]\n",
        '[ mcp_servers . "deskhand" ]  # ours\n',
        "c = '[x]'\n",
        "[[runs.step]]\n",
        "d = '''one line''' # [no]\n",
        "[next]\n",
    ]
    assert mcpconfig.toml_headers(lines) == [
        (6, ("mcp_servers", "deskhand")),
        (8, ("runs", "step")),
        (10, ("next",)),
    ]


def test_empty_file_counts_as_empty(desk: Desk) -> None:
    """A file made with touch is taken as an empty object (and backed up)."""
    path = desk.path(".cursor/mcp.json")
    path.parent.mkdir()
    path.touch()
    assert desk.cli("--host", "cursor", "--write").code == 0
    assert read_json(path) == {"mcpServers": {"deskhand": ENTRY}}
    assert len(backups(path)) == 1
