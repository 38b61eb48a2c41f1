"""``--write`` refuses files it cannot edit safely: exit 1, a message saying why, and the file,
its mode and its directory exactly as they were (no backup, no temp file)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from hostdesk import FIXTURES, Desk, files_in

JSON_CASES = [
    ("not json", b'{"mcpServers": {', "not valid JSON"),
    ("comments", (FIXTURES / "vscode-mcp-with-comments.jsonc").read_bytes(), "not valid JSON"),
    ("top level array", b"[]\n", "not an object"),
    ("top level string", b'"servers"\n', "not an object"),
    ("servers a list", b'{"servers": []}\n', '"servers" in'),
    ("entry a string", b'{"servers": {"deskhand": "off"}}\n', '"servers"."deskhand"'),
    ("duplicate key", b'{"servers": {}, "servers": {"a": {}}}\n', "appears twice"),
    ("not utf-8", b'{"servers": {"a": {"command": "\xff"}}}\n', "not UTF-8"),
]


def assert_untouched(res_code: int, err: str, path: Path, data: bytes, mode: int) -> None:
    assert res_code == 1
    assert "nothing was written" in err
    assert path.read_bytes() == data
    assert stat.S_IMODE(path.lstat().st_mode) == mode
    assert files_in(path.parent) == [path.name]


@pytest.mark.parametrize(("case", "data", "message"), JSON_CASES, ids=[c[0] for c in JSON_CASES])
def test_json_refusals(desk: Desk, case: str, data: bytes, message: str) -> None:
    path = desk.path("project/.vscode/mcp.json")
    path.parent.mkdir()
    path.write_bytes(data)
    path.chmod(0o640)
    res = desk.cli("--host", "vscode", "--scope", "project", "--write")
    assert message in res.err
    assert_untouched(res.code, res.err, path, data, 0o640)


TOML_CASES = [
    ("not toml", b"[mcp_servers.deskhand\ncommand = 1\n", "not valid TOML"),
    ("duplicate table", b"[a]\nx = 1\n[a]\ny = 2\n", "not valid TOML"),
    ("servers not a table", b'mcp_servers = "none"\n', "not a table"),
    ("entry not a table", b"[mcp_servers]\ndeskhand = 1\n", "not a table"),
    ("entry an array", b'[[mcp_servers.deskhand]]\ncommand = "x"\n', "not a table"),
    (
        "inline entry",
        b'[mcp_servers]\ndeskhand = { command = "old", args = [] }\n',
        "inline table or dotted keys",
    ),
    (
        "dotted keys",
        b'[mcp_servers]\ndeskhand.command = "old"\n',
        "inline table or dotted keys",
    ),
    (
        "top-level dotted keys",
        b'mcp_servers.deskhand.command = "old"\n[x]\n',
        "inline table or dotted keys",
    ),
]


@pytest.mark.parametrize(("case", "data", "message"), TOML_CASES, ids=[c[0] for c in TOML_CASES])
def test_toml_refusals(desk: Desk, case: str, data: bytes, message: str) -> None:
    path = desk.path(".codex/config.toml")
    path.parent.mkdir()
    path.write_bytes(data)
    path.chmod(0o600)
    res = desk.cli("--host", "codex", "--write")
    assert message in res.err, res.err
    assert_untouched(res.code, res.err, path, data, 0o600)


def test_dangling_symlink(desk: Desk) -> None:
    link = desk.path(".cursor/mcp.json")
    link.parent.mkdir()
    link.symlink_to(desk.home / "gone.json")
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 1 and "does not exist" in res.err
    assert link.is_symlink() and files_in(link.parent) == ["mcp.json"]
    assert not (desk.home / "gone.json").exists()


def test_symlink_into_a_shared_directory(desk: Desk, tmp_path: Path) -> None:
    """A link into a directory others may write is not followed."""
    shared = tmp_path / "shared"
    shared.mkdir()
    shared.chmod(0o777)
    real = shared / "mcp.json"
    data = (FIXTURES / "cursor-mcp.json").read_bytes()
    real.write_bytes(data)
    link = desk.path(".cursor/mcp.json")
    link.parent.mkdir()
    link.symlink_to(real)
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 1 and "not yours alone" in res.err
    assert real.read_bytes() == data and files_in(shared) == ["mcp.json"]
    assert link.is_symlink()


def test_symlink_to_a_directory(desk: Desk) -> None:
    target = desk.home / "somewhere"
    target.mkdir()
    link = desk.path(".cursor/mcp.json")
    link.parent.mkdir()
    link.symlink_to(target)
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 1 and "not a regular file" in res.err
    assert files_in(target) == []


def test_not_a_regular_file(desk: Desk) -> None:
    path = desk.path(".cursor/mcp.json")
    path.mkdir(parents=True)
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 1 and "not a regular file" in res.err
    assert files_in(path) == [] and files_in(path.parent) == ["mcp.json"]


@pytest.mark.skipif(os.getuid() != 0, reason="needs root to make a file of another user")
def test_file_of_another_user(desk: Desk) -> None:
    path = desk.place("cursor-mcp.json", ".cursor/mcp.json")
    os.chown(path, 12345, 12345)
    res = desk.cli("--host", "cursor", "--write")
    assert res.code == 1 and "not to you" in res.err
    assert path.read_bytes() == (FIXTURES / "cursor-mcp.json").read_bytes()
    assert files_in(path.parent) == ["mcp.json"]


def test_subprocess_refusal(desk: Desk) -> None:
    """Through a process of its own: exit 1, the reason on stderr, nothing on stdout."""
    path = desk.path(".config/Claude/claude_desktop_config.json")
    path.parent.mkdir(parents=True)
    path.write_bytes(b"{ not json")
    res = desk.sub("--host", "claude-desktop", "--write")
    assert res.code == 1 and res.out == ""
    assert "not valid JSON" in res.err
    assert path.read_bytes() == b"{ not json"
