"""A squatter: another user's process listening where a client expects its own daemon.

``Squatter.start(path)`` runs a small stdlib program as uid/gid 65534 (``setpriv --reuid
--regid --clear-groups``) that binds ``path``, accepts every connection and records every byte
it receives without ever answering. ``report()`` makes it drain whatever is still queued
(pending connections included) and returns what it saw, so "nothing was sent" is a count read
from the other user's side, not an inference.

Needs root (to switch uid) and setpriv; :func:`require_squatting` skips with the reason
elsewhere, and fails instead under ``CI=true``, where these tests must run.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from dataclasses import dataclass
from pathlib import Path

import pytest

NOBODY = 65534

_PROGRAM = textwrap.dedent(
    """
    import json, os, select, socket, sys
    path = sys.argv[1]
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    os.chmod(path, 0o777)  # so that only the client's own checks can stand in the way
    listener.listen(64)
    print(json.dumps({"listening": path, "uid": os.getuid()}), flush=True)
    conns, received, count = [], bytearray(), 0

    def drain():
        global count
        listener.setblocking(False)
        while True:
            try:
                conn, _ = listener.accept()
            except BlockingIOError:
                break
            conns.append(conn)
            count += 1
        for conn in conns:
            conn.setblocking(False)
            while True:
                try:
                    data = conn.recv(65536)
                except (BlockingIOError, ConnectionResetError):
                    break
                if not data:
                    break
                received.extend(data)

    while True:
        ready, _, _ = select.select([listener, sys.stdin, *conns], [], [], 1.0)
        if sys.stdin in ready:  # the test closed our stdin: drain, report, leave
            sys.stdin.read()
            drain()
            print(json.dumps({"connections": count, "bytes": len(received),
                              "data": received[:2000].decode("latin-1")}), flush=True)
            break
        if listener in ready:
            conns.append(listener.accept()[0])
            count += 1
        for conn in [c for c in conns if c in ready]:
            try:
                data = conn.recv(65536)
            except ConnectionResetError:
                data = b""
            if data:
                received.extend(data)
            else:
                conns.remove(conn)
                conn.close()
    """
)


def require_squatting() -> str:
    """The setpriv binary, or skip (fail under CI) saying why these tests cannot run here."""
    why = None
    setpriv = shutil.which("setpriv")
    if os.geteuid() != 0:
        why = "running a squatter as another uid (setpriv --reuid=65534) needs root"
    elif setpriv is None:
        why = "setpriv (util-linux) is not installed; it runs the squatter as another uid"
    if why is None and setpriv is not None:
        return setpriv
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail(f"{why}; CI must run these tests")
    pytest.skip(why or "")


def traversable_tree(root: Path) -> None:
    """Let uid 65534 walk down to ``root`` (mkdtemp makes it 0700)."""
    os.chmod(root, 0o755)


def owned_by_nobody(path: Path, mode: int) -> None:
    os.chown(path, NOBODY, NOBODY)
    os.chmod(path, mode)


@dataclass
class Squatter:
    proc: subprocess.Popen[str]
    path: Path

    @classmethod
    def start(cls, path: Path) -> Squatter:
        setpriv = require_squatting()
        cmd = [
            setpriv,
            f"--reuid={NOBODY}",
            f"--regid={NOBODY}",
            "--clear-groups",
            os.path.realpath(sys.executable),
            "-I",
            "-c",
            _PROGRAM,
            str(path),
        ]
        proc = subprocess.Popen(
            cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        assert proc.stdout is not None
        first = proc.stdout.readline()
        if not first:
            _, err = proc.communicate(timeout=10)
            raise AssertionError(f"the squatter did not start: {err}")
        hello = json.loads(first)
        assert hello == {"listening": str(path), "uid": NOBODY}, hello
        assert os.lstat(path).st_uid == NOBODY  # the socket file is really the other user's
        return cls(proc=proc, path=path)

    def report(self) -> dict[str, object]:
        """Everything it received (drained first), as ``{"connections", "bytes", "data"}``."""
        out, err = self.proc.communicate(timeout=30)
        assert self.proc.returncode == 0, err
        result: dict[str, object] = json.loads(out.splitlines()[-1])
        return result

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.communicate(timeout=10)
