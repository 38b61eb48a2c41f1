"""Socket security: private directory, peer-uid checks, single instance, stale sockets."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import stat
import subprocess
import sys
import textwrap

import pytest
from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon, wait_connectable
from dhtest.wsclient import SyncClient

NOBODY = 65534

_FOREIGN_CLIENT = textwrap.dedent(
    """
    import json, os, socket, sys
    os.setgroups([]); os.setgid(%(uid)d); os.setuid(%(uid)d)
    s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    s.settimeout(5)
    try:
        s.connect(sys.argv[1])
    except OSError as e:
        print(json.dumps({"connect": e.__class__.__name__})); sys.exit(0)
    try:
        s.sendall(b"GET /v1 HTTP/1.1\\r\\nHost: x\\r\\nUpgrade: websocket\\r\\n"
                  b"Connection: Upgrade\\r\\n"
                  b"Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\\r\\n"
                  b"Sec-WebSocket-Version: 13\\r\\n"
                  b"Sec-WebSocket-Protocol: deskhand.v1.json\\r\\n\\r\\n")
    except OSError as e:  # the daemon may hang up before we finish sending: also a refusal
        print(json.dumps({"connect": "ok", "error": e.__class__.__name__, "bytes": 0})); sys.exit(0)
    got = b""
    try:
        while True:
            chunk = s.recv(4096)
            if not chunk:
                break
            got += chunk
    except OSError as e:
        err = e.__class__.__name__
        print(json.dumps({"connect": "ok", "error": err, "bytes": len(got)})); sys.exit(0)
    print(json.dumps({"connect": "ok", "bytes": len(got)}))
    """
) % {"uid": NOBODY}

needs_root = pytest.mark.skipif(os.geteuid() != 0, reason="switching to another uid needs root")


def _run_foreign(path: str) -> dict[str, object]:
    out = subprocess.run(
        [sys.executable, "-c", _FOREIGN_CLIENT, path], capture_output=True, text=True, timeout=30
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


def _open_path_for_others(d: DaemonProc) -> None:
    # mkdtemp and the runtime dir are 0700; let another uid traverse them so the daemon's own
    # peer check (not the file system) is what stands in the way.
    for p in (d.root, d.root / "run", d.socket.parent):
        os.chmod(p, 0o711)


@needs_root
def test_foreign_uid_blocked_by_private_directory(daemon: DaemonProc) -> None:
    """With the default 0700 directory another user cannot even reach the socket."""
    os.chmod(daemon.root, 0o711)
    os.chmod(daemon.root / "run", 0o711)
    assert _run_foreign(str(daemon.socket)) == {"connect": "PermissionError"}


@needs_root
def test_foreign_uid_refused_by_peer_check_even_with_loose_modes(daemon: DaemonProc) -> None:
    """Socket 0666 in a traversable directory: the daemon still closes a foreign uid, silently."""
    _open_path_for_others(daemon)
    os.chmod(daemon.socket, 0o666)
    result = _run_foreign(str(daemon.socket))
    assert result["connect"] == "ok"
    assert result["bytes"] == 0  # not a single byte of handshake reply
    assert '"peer.refused"' in daemon.log_text() and f'"uid": {NOBODY}' in daemon.log_text()
    with SyncClient(daemon.socket) as ok:  # the daemon and other clients are unaffected
        assert ok.call("ping", data="still here")["result"]["data"] == "still here"


def test_socket_and_directory_modes(daemon: DaemonProc) -> None:
    """The socket is born 0600 inside a 0700 directory owned by us."""
    st = os.stat(daemon.socket.parent)
    assert stat.S_IMODE(st.st_mode) == 0o700 and st.st_uid == os.getuid()
    assert stat.S_IMODE(os.lstat(daemon.socket).st_mode) == 0o600


def test_loose_existing_directory_refuses_start() -> None:
    """A pre-existing socket directory with mode 0755 stops the daemon; we never chmod it."""
    root = short_tmpdir()
    try:
        sockdir = root / "run" / "deskhand"
        sockdir.parent.mkdir(mode=0o700)
        sockdir.mkdir()
        os.chmod(sockdir, 0o755)
        d = spawn_daemon(root, wait=False)
        assert d.proc.wait(30) == 69
        text = d.log_text()
        assert str(sockdir) in text and "0755" in text
        assert stat.S_IMODE(os.stat(sockdir).st_mode) == 0o755
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_symlinked_directory_refuses_start() -> None:
    """A symlink in place of the socket directory is refused."""
    root = short_tmpdir()
    try:
        (root / "run").mkdir(mode=0o700)
        (root / "elsewhere").mkdir(mode=0o700)
        (root / "run" / "deskhand").symlink_to(root / "elsewhere")
        d = spawn_daemon(root, wait=False)
        assert d.proc.wait(30) == 69
        assert "not a plain directory" in d.log_text()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@pytest.mark.parametrize("mode", [0o777, 0o770, 0o1777])
def test_socket_directory_parent_writable_by_others(mode: int) -> None:
    """In a parent others may write to, our 0700 directory could be renamed away and replaced:
    the daemon refuses to start there (69, naming the parent and its mode, creating nothing),
    unless the parent is sticky like /tmp, where only an entry's owner may rename it."""
    root = short_tmpdir()
    try:
        parent = root / "run"
        parent.mkdir()
        os.chmod(parent, mode)
        d = spawn_daemon(root, wait=False)
        if mode & stat.S_ISVTX:
            wait_connectable(d.socket, proc=d.proc)
            assert d.stop() == 0
            return
        assert d.proc.wait(30) == 69
        text = d.log_text()
        assert f"its parent {parent} has mode {mode:04o}" in text and "chmod go-w" in text
        assert not (parent / "deskhand").exists()
    finally:
        shutil.rmtree(root, ignore_errors=True)


@needs_root
def test_socket_directory_parent_of_another_user_refuses_start() -> None:
    """A parent owned by another user (not root) lets that user replace our directory, sticky
    or not: refused."""
    root = short_tmpdir()
    try:
        parent = root / "run"
        parent.mkdir()
        os.chown(parent, NOBODY, NOBODY)
        os.chmod(parent, 0o1755)
        d = spawn_daemon(root, wait=False)
        assert d.proc.wait(30) == 69
        assert f"its parent {parent} belongs to uid {NOBODY}" in d.log_text()
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_second_daemon_refuses_while_first_alive(daemon: DaemonProc) -> None:
    """A second daemon on the same socket exits 75 naming the live daemon's pid."""
    second = spawn_daemon(daemon.root, wait=False)
    assert second.proc.wait(30) == 75
    assert f"already running (pid {daemon.proc.pid})" in daemon.log_text()
    with SyncClient(daemon.socket) as c:  # the first one is untouched
        assert c.call("ping")["type"] == "result"


def test_stale_socket_from_killed_daemon_is_replaced() -> None:
    """After SIGKILL the socket file stays behind; the next daemon replaces it and serves."""
    root = short_tmpdir()
    try:
        first = spawn_daemon(root)
        first.proc.kill()
        first.proc.wait(10)
        assert stat.S_ISSOCK(os.lstat(first.socket).st_mode)  # left behind
        second = spawn_daemon(root)
        try:
            with SyncClient(second.socket) as c:
                status = c.call("status")["result"]
            assert status["pid"] == second.proc.pid
        finally:
            assert second.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_non_socket_file_in_the_way_refuses_start() -> None:
    """A regular file where the socket should be is not deleted; the daemon refuses."""
    root = short_tmpdir()
    try:
        sockdir = root / "run" / "deskhand"
        sockdir.mkdir(parents=True, mode=0o700)
        os.chmod(root / "run", 0o700)
        (sockdir / "deskhand.sock").write_text("precious")
        d = spawn_daemon(root, wait=False)
        assert d.proc.wait(30) == 69
        assert (sockdir / "deskhand.sock").read_text() == "precious"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_shutdown_unlinks_only_our_socket(daemon: DaemonProc) -> None:
    """If the socket file was replaced while we ran, a stop leaves the replacement alone."""
    os.rename(daemon.socket, daemon.socket.with_name("ours.sock"))
    other = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    other.bind(str(daemon.socket))
    other.listen(1)
    try:
        assert daemon.stop(signal.SIGTERM) == 0
        assert daemon.socket.exists()  # the stranger's socket survives
        assert daemon.socket.with_name("ours.sock").exists()  # moved away: not ours to find
    finally:
        other.close()


def test_clean_stop_unlinks_socket(daemon: DaemonProc) -> None:
    """A graceful stop removes the socket file we created."""
    wait_connectable(daemon.socket)
    assert daemon.stop(signal.SIGTERM) == 0
    assert not daemon.socket.exists()


def test_racing_daemons_leave_exactly_one_serving() -> None:
    """Five daemons started at once on one socket: one serves, the others exit 75, none unlinks."""
    root = short_tmpdir()
    try:
        procs = [spawn_daemon(root, wait=False) for _ in range(5)]
        wait_connectable(procs[0].socket)
        codes = []
        for p in procs:
            try:
                codes.append(p.proc.wait(3))
            except subprocess.TimeoutExpired:
                codes.append(None)
        assert codes.count(None) == 1, codes
        assert sorted(c for c in codes if c is not None) == [75, 75, 75, 75]
        winner = procs[codes.index(None)]
        with SyncClient(winner.socket) as c:
            assert c.call("status")["result"]["pid"] == winner.proc.pid
        assert winner.stop() == 0
    finally:
        for p in procs:
            if p.proc.poll() is None:
                p.proc.kill()
        shutil.rmtree(root, ignore_errors=True)
