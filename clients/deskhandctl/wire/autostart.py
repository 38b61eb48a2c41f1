"""Starting deskhand-d on demand when nobody listens on the socket.

Rules, in order:

1. If a service manager owns the daemon (a ``deskhand.socket`` or ``deskhand.service`` user
   unit in ``deskhand_d.paths.systemd_user_dir()``, or on macOS the LaunchAgent plist in
   ``launch_agents_dir()``) and that manager answers here, never spawn a second copy: raise
   :class:`NotRunning` saying which command starts it. Where no manager answers (no systemd
   user instance in a container or an ssh session, no GUI login on macOS), the files start
   nothing and their commands would fail, so say so on stderr and go on to rule 2.
2. Otherwise run ``<python> -P -m deskhand_d --socket <path>`` in a new session (so it outlives
   this process and the terminal's signals), with stdin from /dev/null and stdout/stderr
   appended to ``<state_dir>/daemon.log`` (directory 0700, file 0600), working directory ``/``.
   ``-P`` keeps the current directory off the daemon's ``sys.path``.
3. Retry connecting with a short backoff for up to :data:`START_WAIT_S`. If the child exits
   first, report its exit status and the end of its log, except for 75 (another daemon holds
   the socket's instance lock: one started by a concurrent deskhandctl won the race and is
   about to listen), after which we keep trying to connect until the deadline.

Imported only on this path: it needs ``subprocess`` and ``pathlib``, which the common commands
never pay for.
"""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from deskhand_d import paths
from deskhandctl.exitcodes import NotRunning, not_running_message

TYPE_CHECKING = False
if TYPE_CHECKING:
    import _socket
    from collections.abc import Callable, Mapping

START_WAIT_S = 5.0
_BACKOFF_S = (0.02, 0.05, 0.1, 0.1, 0.2, 0.2, 0.25)  # then 0.25 s until the wait is over
_EX_ALREADY_RUNNING = 75  # deskhand-d: another daemon holds this socket's instance lock
LOG_NAME = "daemon.log"


def installed_service(env: Mapping[str, str] = os.environ) -> Path | None:
    """The unit file or LaunchAgent plist that hands the daemon to a service manager, if any."""
    environ = dict(env)
    if paths.is_macos():
        plist = paths.launch_agents_dir(environ) / f"{paths.LAUNCHD_LABEL}.plist"
        return plist if plist.exists() else None
    unit_dir = paths.systemd_user_dir(environ)
    for unit in (paths.SYSTEMD_SOCKET, paths.SYSTEMD_SERVICE):
        if (unit_dir / unit).exists():
            return unit_dir / unit
    return None


def _start_hint(installed: Path) -> str:
    if paths.is_macos():
        domain = f"gui/{os.getuid()}"
        return (
            f"deskhand-d is installed as a LaunchAgent ({installed}) but is not running. "
            f"Start it with 'launchctl kickstart {domain}/{paths.LAUNCHD_LABEL}', or load "
            f"it first with 'launchctl bootstrap {domain} {installed}'."
        )
    return (
        f"deskhand-d is installed as a systemd user service ({installed}) but "
        f"is not running. Start it with 'systemctl --user start {installed.name}', and see "
        "why it stopped with 'journalctl --user -u deskhand'."
    )


def manager_unreachable(env: Mapping[str, str] = os.environ) -> str | None:
    """Why this user's service manager cannot be used from here, or None when it answers."""
    from deskhandctl.setup import units  # the templates come along; this path is rare

    return units.manager_unreachable(units.manager_probe(macos=paths.is_macos()), env)


def service_manager_hint(env: Mapping[str, str] = os.environ) -> str | None:
    """How to start the daemon through its service manager, or None if none runs it here.

    None also when the service is installed but its manager does not answer: then the
    installed files start nothing, and autostart has to.
    """
    installed = installed_service(env)
    if installed is None or manager_unreachable(env) is not None:
        return None
    return _start_hint(installed)


def log_path(env: Mapping[str, str] = os.environ) -> Path:
    """Where an autostarted daemon's output goes."""
    return paths.state_dir(dict(env)) / LOG_NAME


def _open_log(path: Path) -> int:
    """Create the state directory (0700) and the log (0600); return an append-only fd."""
    if not path.parent.is_dir():
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        path.parent.chmod(0o700)  # mkdir's mode is filtered by the umask
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_APPEND | os.O_CLOEXEC, 0o600)
    os.fchmod(fd, 0o600)
    return fd


def spawn_daemon(socket_path: str, log: Path) -> subprocess.Popen[bytes]:
    """Start deskhand-d in the background, detached from our session, logging to ``log``."""
    fd = _open_log(log)
    try:
        stamp = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        os.write(fd, f"--- {stamp} deskhandctl starting deskhand-d on {socket_path}\n".encode())
        return subprocess.Popen(
            [sys.executable, "-P", "-m", "deskhand_d", "--socket", socket_path],
            stdin=subprocess.DEVNULL,
            stdout=fd,
            stderr=fd,
            cwd="/",
            start_new_session=True,
        )
    finally:
        os.close(fd)


def _log_tail(log: Path, start: int, lines: int = 8) -> str:
    try:
        with log.open("rb") as handle:
            handle.seek(start)
            text = handle.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(text.strip().splitlines()[-lines:])


def start_and_connect(
    socket_path: str,
    connect: Callable[[], _socket.socket | None],
    *,
    env: Mapping[str, str] = os.environ,
    wait_s: float = START_WAIT_S,
) -> _socket.socket:
    """Start the daemon (unless a service manager owns it) and return a connected socket.

    ``connect`` tries once: a socket connected to our own daemon on ``socket_path``, None
    while nobody listens there, or a :class:`~deskhandctl.exitcodes.CliError` for anything
    else (:mod:`deskhandctl.wire.connect` passes it in, so that this module need not import it).
    """
    installed = installed_service(env)
    if installed is not None:
        reason = manager_unreachable(env)
        if reason is None:
            raise NotRunning(_start_hint(installed))
        print(
            f"deskhandctl: deskhand-d is installed as a service ({installed}), but no service "
            f"manager answers here ({reason}); starting it directly instead.",
            file=sys.stderr,
        )
    log = log_path(env)
    try:
        start = log.stat().st_size if log.exists() else 0
        child = spawn_daemon(socket_path, log)
    except OSError as exc:
        raise NotRunning(f"{not_running_message(socket_path)}\nStarting it failed: {exc}") from None
    deadline = time.monotonic() + wait_s
    attempt = 0
    while True:
        sock = connect()
        if sock is not None:
            print(
                f"deskhandctl: deskhand-d was not running; started it (pid {child.pid}, log {log})",
                file=sys.stderr,
            )
            return sock
        status = child.poll()
        if status is not None and status != _EX_ALREADY_RUNNING:
            raise NotRunning(_exited_message(status, log, start))
        if time.monotonic() >= deadline:
            if status is not None:
                raise NotRunning(_exited_message(status, log, start))
            raise NotRunning(
                f"started deskhand-d (pid {child.pid}) but it did not listen on {socket_path} "
                f"within {wait_s:g} s; its output is in {log}."
            )
        time.sleep(_BACKOFF_S[min(attempt, len(_BACKOFF_S) - 1)])
        attempt += 1


def _exited_message(status: int, log: Path, start: int) -> str:
    tail = _log_tail(log, start)
    return (
        f"deskhand-d exited with status {status} right after starting; its output is in {log}"
        + (f":\n{tail}" if tail else ".")
    )
