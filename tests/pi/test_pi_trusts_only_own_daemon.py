"""The pi extension talks only to a daemon of its own user (issue #15, item 1).

Node has no SO_PEERCRED, so the extension checks what the file system shows around the
connect (clients/pi/src/trust.ts). Each case runs the real pi loader and a real agent session
(the harness's ``nodaemon`` scenario: an observation, then ``cua_status``) against a socket
that is not this user's daemon, and checks that the tool call is refused with the check's code
and the path, that status says so, and that the listener received nothing.
"""

from __future__ import annotations

import json
import os
import shutil
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import short_tmpdir
from dhtest.squatter import (
    NOBODY,
    Squatter,
    owned_by_nobody,
    require_squatting,
    traversable_tree,
)
from pirig import node_env, run_harness


@pytest.fixture
def base() -> Iterator[Path]:
    root = short_tmpdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


def run_pi(env: dict[str, str]) -> tuple[dict[str, Any], dict[str, Any], list[str]]:
    """The observation's result, the status tool's payload and the status lines pi showed."""
    out = run_harness("nodaemon", None, node_env(env))
    assert out["errors"] == []
    observe, status = out["results"]
    assert not status["isError"], status["text"]
    payload: dict[str, Any] = json.loads(status["text"][status["text"].index("{") :])
    return observe, payload, out["status"]


def assert_refused(
    observe: dict[str, Any], payload: dict[str, Any], lines: list[str], code: str, path: Path
) -> None:
    assert observe["isError"]
    assert observe["text"].startswith(f"{code}: refusing to connect"), observe["text"]
    assert str(path) in observe["text"] and "Nothing was sent" in observe["text"]
    assert payload["daemon"]["running"] is False and payload["daemon"]["refused"] == code
    assert f"Deskhand: refused the socket ({code})" in lines


@pytest.mark.parametrize("layout", ["tmp_fallback", "renamed_in_open_parent", "socket_only"])
def test_squatter_of_another_uid_gets_nothing(node: Path, base: Path, layout: str) -> None:
    """uid 65534 listens where the extension looks: in the /tmp fallback's ``deskhand-<uid>/``
    made first in a sticky world-writable directory, in a 0700 ``deskhand/`` put in place of
    the daemon's in a world-writable parent (found through XDG_RUNTIME_DIR), or as the owner of
    the socket file in our own 0700 directory. Refused before connecting; zero bytes."""
    require_squatting()
    traversable_tree(base)
    if layout == "tmp_fallback":
        (base / "tmp").mkdir()
        os.chmod(base / "tmp", 0o1777)
        sock_dir = base / "tmp" / f"deskhand-{os.getuid()}"
        sock_dir.mkdir()
        owned_by_nobody(sock_dir, 0o777)
    else:
        (base / "run").mkdir()
        os.chmod(base / "run", 0o777 if layout == "renamed_in_open_parent" else 0o755)
        sock_dir = base / "run" / "deskhand"
        sock_dir.mkdir()
        owned_by_nobody(sock_dir, 0o700)
    squatter = Squatter.start(sock_dir / "deskhand.sock")
    try:
        if layout == "socket_only":
            os.chown(sock_dir, os.getuid(), os.getgid())  # our directory again, 0700
            env = {"DESKHAND_SOCKET": str(squatter.path)}
            code, named = "socket_foreign_owner", squatter.path
        elif layout == "renamed_in_open_parent":
            env = {"XDG_RUNTIME_DIR": str(base / "run")}
            code, named = "socket_dir_foreign_owner", sock_dir
        else:
            env = {"DESKHAND_SOCKET": str(squatter.path)}
            code, named = "socket_dir_foreign_owner", sock_dir
        observe, payload, lines = run_pi(env)
        assert_refused(observe, payload, lines, code, named)
        assert f"uid {NOBODY}" in observe["text"]
        assert squatter.report() == {"connections": 0, "bytes": 0, "data": ""}
    finally:
        squatter.stop()


@pytest.mark.parametrize(
    ("dir_mode", "parent_mode", "code"),
    [
        (0o770, 0o700, "socket_dir_writable_by_others"),
        (0o1777, 0o700, "socket_dir_writable_by_others"),
        (0o700, 0o777, "socket_dir_parent_unsafe"),
    ],
)
def test_our_own_listener_in_an_unsafe_place_gets_nothing(
    node: Path, base: Path, dir_mode: int, parent_mode: int, code: str
) -> None:
    """Our own listener, but in a directory others may write to, or whose parent lets others
    replace the directory: the extension cannot tell a swap from the real thing without the
    peer's credentials, so it refuses, and never connects."""
    parent = base / "run"
    parent.mkdir()
    sock_dir = parent / "deskhand"
    sock_dir.mkdir()
    os.chmod(sock_dir, dir_mode)
    os.chmod(parent, parent_mode)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(sock_dir / "deskhand.sock"))
    listener.listen(8)
    listener.setblocking(False)
    try:
        observe, payload, lines = run_pi({"DESKHAND_SOCKET": str(sock_dir / "deskhand.sock")})
        assert_refused(
            observe, payload, lines, code, parent if code.endswith("parent_unsafe") else sock_dir
        )
        with pytest.raises(BlockingIOError):
            listener.accept()  # nobody connected
    finally:
        listener.close()
