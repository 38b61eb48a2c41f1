"""Start the real daemon as a child process on a short private socket path."""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path


def short_tmpdir() -> Path:
    """A fresh directory with a short path (AF_UNIX paths are limited to ~107 bytes)."""
    return Path(tempfile.mkdtemp(prefix="dh", dir="/tmp"))


def wait_connectable(
    path: Path, timeout: float = 10.0, proc: subprocess.Popen[bytes] | None = None
) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            raise RuntimeError(f"daemon exited early with {proc.returncode}")
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            s.connect(os.fspath(path))
            return
        except OSError:
            time.sleep(0.02)
        finally:
            s.close()
    raise TimeoutError(f"nothing listens on {path} after {timeout}s")


@dataclass
class DaemonProc:
    proc: subprocess.Popen[bytes]
    socket: Path
    root: Path
    log_path: Path

    def log_text(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM, timeout: float = 10.0) -> int:
        if self.proc.poll() is None:
            self.proc.send_signal(sig)
        return self.proc.wait(timeout)


def daemon_env(root: Path, extra: Mapping[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DESKHAND_", "LISTEN_"))}
    env.pop("NOTIFY_SOCKET", None)
    env["XDG_RUNTIME_DIR"] = str(root / "run")
    env["XDG_CONFIG_HOME"] = str(root / "config")
    env["XDG_STATE_HOME"] = str(root / "state")
    env["HOME"] = str(root / "home")
    for d in ("run", "config", "state", "home"):
        (root / d).mkdir(exist_ok=True, mode=0o700)
    if extra:
        env.update(extra)
    return env


def spawn_daemon(
    root: Path,
    *,
    extra_env: Mapping[str, str] | None = None,
    args: list[str] | None = None,
    wait: bool = True,
) -> DaemonProc:
    sock = root / "run" / "deskhand" / "deskhand.sock"
    env = daemon_env(root, extra_env)
    log_path = root / "daemon.log"
    with open(log_path, "ab") as log:
        proc = subprocess.Popen(
            [sys.executable, "-m", "deskhand_d", *(args or [])],
            env=env,
            stdin=subprocess.DEVNULL,
            stdout=log,
            stderr=log,
        )
    d = DaemonProc(proc=proc, socket=sock, root=root, log_path=log_path)
    if wait:
        wait_connectable(sock, proc=proc)
    return d


@contextmanager
def running_daemon(extra_env: Mapping[str, str] | None = None) -> Iterator[DaemonProc]:
    root = short_tmpdir()
    d = spawn_daemon(root, extra_env=extra_env)
    try:
        yield d
    finally:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)
        shutil.rmtree(root, ignore_errors=True)


@contextmanager
def unresponsive_socket() -> Iterator[tuple[str, socket.socket]]:
    """A private socket that accepts connections into its backlog and never answers."""
    root = short_tmpdir()
    os.chmod(root, 0o700)
    path = str(root / "deskhand.sock")
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(8)
    try:
        yield path, listener
    finally:
        listener.close()
        for name in os.listdir(root):
            os.unlink(root / name)
        root.rmdir()


_tracked: dict[Path, list[DaemonProc]] = {}


@contextmanager
def tracked_root() -> Iterator[Path]:
    """A fresh short root whose daemons started by :func:`spawn_tracked` are killed when it
    ends: a test that fails before its own stop must not leave one running (it would surface
    later, in another test, as a ResourceWarning)."""
    path = short_tmpdir()
    _tracked[path] = []
    try:
        yield path
    finally:
        for d in _tracked.pop(path, []):
            if d.proc.poll() is None:
                d.proc.kill()
                d.proc.wait(10)
        shutil.rmtree(path, ignore_errors=True)


def spawn_tracked(root: Path, extra_env: Mapping[str, str]) -> DaemonProc:
    """:func:`spawn_daemon` under a :func:`tracked_root`."""
    return track(root, spawn_daemon(root, extra_env=extra_env))


def track(root: Path, d: DaemonProc) -> DaemonProc:
    """Have ``root``'s :func:`tracked_root` kill ``d`` if it is still running at the end."""
    _tracked.setdefault(root, []).append(d)
    return d
