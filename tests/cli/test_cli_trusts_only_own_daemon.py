"""deskhandctl talks only to a daemon of its own user (issue #15, item 1).

A squatter, another uid listening where the CLI expects its daemon, is run with setpriv in the
two layouts that were reproduced: the /tmp fallback's ``deskhand-<uid>/`` made first by
someone else in a sticky world-writable directory, and the daemon's 0700 ``deskhand/`` renamed
away and replaced in a world-writable parent. In each the CLI must exit 77 with the check's
code and the path, and the squatter must have received nothing at all: no hello, no HTTP
upgrade, not the text that ``type`` was asked to type. The directory check and the peer check
are also tested each on its own.
"""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest.daemon import daemon_env, short_tmpdir
from dhtest.squatter import (
    NOBODY,
    Squatter,
    owned_by_nobody,
    require_squatting,
    traversable_tree,
)

from deskhand_d.clientcheck import PEER_FOREIGN_UID, NotOurDaemon, check_peer

SECRET = "hunter2 typed into the wrong daemon"


@pytest.fixture
def base() -> Iterator[Path]:
    root = short_tmpdir()
    yield root
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture
def squatters() -> Iterator[list[Squatter]]:
    """Squatters to stop at the end; skips (fails under CI) where none can be run."""
    require_squatting()
    started: list[Squatter] = []
    yield started
    for s in started:
        s.stop()


def cli(*argv: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )


def type_secret(env: dict[str, str], *socket_flag: str) -> subprocess.CompletedProcess[str]:
    """The command that leaked in the reproduction: ``type`` with text for an app."""
    return cli(
        *socket_flag, "--timeout", "5", "type", "--app", "Notes", "--state", "s1", SECRET, env=env
    )


def our_listener(path: Path) -> socket.socket:
    """A listener of our own uid at ``path``: it would pass the peer check."""
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.bind(str(path))
    s.listen(8)
    s.setblocking(False)
    return s


def nobody_connected(listener: socket.socket) -> bool:
    try:
        conn, _ = listener.accept()
    except BlockingIOError:
        return True
    conn.close()
    return False


def test_squatted_tmp_fallback_layout_gets_nothing(base: Path, squatters: list[Squatter]) -> None:
    """``deskhand-<uid>/`` 0777 made by uid 65534 in a sticky world-writable directory, the
    squatter listening inside: refused before connecting, zero bytes reach it."""
    traversable_tree(base)
    sticky = base / "tmp"
    sticky.mkdir()
    os.chmod(sticky, 0o1777)
    squat_dir = sticky / f"deskhand-{os.getuid()}"
    squat_dir.mkdir()
    owned_by_nobody(squat_dir, 0o777)
    squatters.append(squatter := Squatter.start(squat_dir / "deskhand.sock"))

    env = daemon_env(base)
    done = type_secret(env, "--socket", str(squatter.path))

    assert done.returncode == 77, done.stderr
    assert "socket_dir_foreign_owner" in done.stderr
    assert str(squat_dir) in done.stderr and f"uid {NOBODY}" in done.stderr
    assert squatter.report() == {"connections": 0, "bytes": 0, "data": ""}


def test_renamed_and_squatted_daemon_dir_gets_nothing(
    base: Path, squatters: list[Squatter]
) -> None:
    """The daemon's 0700 ``deskhand/`` in a world-writable (not sticky) parent, replaced by
    uid 65534's own: found through XDG_RUNTIME_DIR as usual, refused, zero bytes, and no
    daemon autostarted in its place."""
    traversable_tree(base)
    shared = base / "shared"
    shared.mkdir()
    os.chmod(shared, 0o777)
    squat_dir = shared / "deskhand"
    squat_dir.mkdir()
    owned_by_nobody(squat_dir, 0o700)
    squatters.append(squatter := Squatter.start(squat_dir / "deskhand.sock"))

    env = daemon_env(base, {"XDG_RUNTIME_DIR": str(shared)})
    done = type_secret(env)  # no --socket: the default lookup, autostart allowed

    assert done.returncode == 77, done.stderr
    assert "socket_dir_foreign_owner" in done.stderr and str(squat_dir) in done.stderr
    assert squatter.report() == {"connections": 0, "bytes": 0, "data": ""}
    assert not (base / "state" / "deskhand" / "daemon.log").exists()  # no autostart either


def test_foreign_peer_in_our_own_private_dir_is_refused_after_connect(
    base: Path, squatters: list[Squatter]
) -> None:
    """The directory passes (ours, 0700) but uid 65534 listens on the socket in it: the peer
    check refuses on the connected socket, before the HTTP upgrade."""
    traversable_tree(base)
    sock_dir = base / "run" / "deskhand"
    sock_dir.parent.mkdir(mode=0o755)
    sock_dir.mkdir()
    owned_by_nobody(sock_dir, 0o700)  # so the squatter can bind in it...
    squatters.append(squatter := Squatter.start(sock_dir / "deskhand.sock"))
    os.chown(sock_dir, os.getuid(), os.getgid())  # ...then it is ours again, 0700
    assert os.stat(sock_dir).st_uid == os.getuid()

    env = daemon_env(base, {"DESKHAND_SOCKET": str(squatter.path)})
    done = type_secret(env)

    assert done.returncode == 77, done.stderr
    assert PEER_FOREIGN_UID in done.stderr
    assert str(squatter.path) in done.stderr and f"uid {NOBODY}" in done.stderr
    # It connected (so the directory check let it through) and sent nothing.
    assert squatter.report() == {"connections": 1, "bytes": 0, "data": ""}


@pytest.mark.parametrize("mode", [0o770, 0o703, 0o777, 0o1777])
def test_our_socket_dir_writable_by_others_is_refused(base: Path, mode: int) -> None:
    """A socket directory of ours that group or others may write to is refused before
    connecting, even though the listener in it is ours and would pass the peer check."""
    sock_dir = base / "d"
    sock_dir.mkdir()
    os.chmod(sock_dir, mode)
    listener = our_listener(sock_dir / "deskhand.sock")
    try:
        done = cli("--socket", str(sock_dir / "deskhand.sock"), "ping", env=daemon_env(base))
        assert done.returncode == 77, done.stderr
        assert "socket_dir_writable_by_others" in done.stderr and str(sock_dir) in done.stderr
        assert f"{mode:04o}" in done.stderr
        assert nobody_connected(listener)
    finally:
        listener.close()


def test_symlinked_socket_dir_is_refused(base: Path) -> None:
    """A symlink in place of the socket directory is refused, even pointing at our own."""
    real = base / "real"
    real.mkdir(mode=0o700)
    listener = our_listener(real / "deskhand.sock")
    link = base / "link"
    link.symlink_to(real)
    try:
        done = cli("--socket", str(link / "deskhand.sock"), "ping", env=daemon_env(base))
        assert done.returncode == 77, done.stderr
        assert "socket_dir_not_a_directory" in done.stderr and str(link) in done.stderr
        assert nobody_connected(listener)
    finally:
        listener.close()


def test_peer_check_reads_the_kernel_record() -> None:
    """The peer check compares the kernel's uid for the other end with ours: our own
    socketpair passes, and the same socket fails for any other uid we claim to be."""
    a, b = socket.socketpair(socket.AF_UNIX, socket.SOCK_STREAM)
    with a, b:
        check_peer(a, "pair")
        with pytest.raises(NotOurDaemon) as refused:
            check_peer(a, "pair", uid=os.getuid() + 1)
    assert refused.value.code == PEER_FOREIGN_UID
    assert f"uid {os.getuid()}" in refused.value.message
