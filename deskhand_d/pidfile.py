"""The daemon's pid file beside its socket, and the checks a client makes before signalling it.

``deskhandctl stop`` must get through even when the socket cannot serve it (every connection
slot taken, descriptors exhausted, a daemon too slow to answer). Its fallback is SIGUSR1, which
the daemon treats as the emergency stop. A pid read from a file is only signalled after checks:

* the daemon writes ``<socket>.pid`` (mode 0600, replaced atomically) only into a socket
  directory that is its own and writable by nobody else, only once it handles SIGUSR1 (the
  default action of SIGUSR1 would kill it), and removes it on exit;
* :func:`signal_daemon` accepts the pid only if that directory and the file belong to this
  uid and are writable by nobody else, and if the process runs as this uid (real and
  effective) and its command line is deskhand-d (``deskhand-d`` or ``python -m deskhand_d``);
* on Linux it holds a pidfd from before the checks until the signal, so a pid reused in the
  meantime cannot be hit.

A signal carries no reply, so the daemon confirms it: once an emergency stop sent as a signal
has taken effect (the lock engaged), it writes ``<socket>.stops`` (same rules as the pid file)
with its pid and how many such stops it has carried out. The client reads the count before it
signals and reports success only when the count has grown (:func:`read_stops`).

Standard library only: the CLI imports it.
"""

from __future__ import annotations

import os
import signal
import stat
import subprocess
import sys

EMERGENCY_STOP_SIGNAL = signal.SIGUSR1
PID_SUFFIX = ".pid"
STOPS_SUFFIX = ".stops"


class NotVerified(Exception):
    """The pid file or the process failed a check; the message says which, in plain words."""


def pid_path(socket_path: str | os.PathLike[str]) -> str:
    return os.fspath(socket_path) + PID_SUFFIX


def stops_path(socket_path: str | os.PathLike[str]) -> str:
    return os.fspath(socket_path) + STOPS_SUFFIX


def _private_dir_problem(directory: str, uid: int) -> str:
    try:
        st = os.lstat(directory)
    except OSError as exc:
        return f"cannot inspect {directory}: {exc.strerror}"
    if not stat.S_ISDIR(st.st_mode):
        return f"{directory} is not a plain directory"
    if st.st_uid != uid:
        return f"{directory} belongs to uid {st.st_uid}, not to uid {uid}"
    if st.st_mode & 0o022:
        return f"{directory} is writable by others (mode {stat.S_IMODE(st.st_mode):04o})"
    return ""


def write(socket_path: str | os.PathLike[str]) -> str:
    """Write our pid beside the socket; the path, or OSError/ValueError saying why not."""
    return _write_private(pid_path(socket_path), f"{os.getpid()}\n")


class StopsRecord:
    """The daemon's ``<socket>.stops``: how many emergency stops sent as a signal have taken
    effect. Created once (same rules as the pid file) and then rewritten in place through the
    descriptor kept open, with a line of fixed width: a stop must be confirmable when the
    daemon has run out of descriptors, which is one of the times the signal is needed."""

    WIDTH = 20

    def __init__(self, socket_path: str | os.PathLike[str]) -> None:
        self.path = _write_private(stops_path(socket_path), self._line(0))
        self._fd = os.open(self.path, os.O_WRONLY | os.O_NOFOLLOW | os.O_CLOEXEC)

    def _line(self, count: int) -> str:
        return f"{os.getpid()} {count:0{self.WIDTH}d}\n"

    def record(self, count: int) -> None:
        """Write ``count``; OSError if the file system refuses (a full disk needs no new
        block: the line's length never changes)."""
        os.pwrite(self._fd, self._line(count).encode(), 0)

    def close(self) -> None:
        os.close(self._fd)
        remove(self.path)


def _write_private(path: str, text: str) -> str:
    problem = _private_dir_problem(os.path.dirname(path) or ".", os.getuid())
    if problem:
        raise ValueError(f"not writing {os.path.basename(path)}: {problem}")
    tmp = f"{path}.{os.getpid()}.tmp"
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
    fd = os.open(tmp, flags, 0o600)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)
    try:
        os.replace(tmp, path)
    except OSError:
        os.unlink(tmp)
        raise
    return path


def remove(path: str) -> None:
    """Remove a pid or stops file if it still names this process (a newer daemon's stays)."""
    try:
        with open(path, "rb") as handle:
            if handle.read(64).split()[:1] != [str(os.getpid()).encode()]:
                return
        os.unlink(path)
    except OSError:
        pass


def read_pid(socket_path: str, uid: int) -> int:
    """The pid in ``socket_path``'s pid file, after checking the directory and the file."""
    path = pid_path(socket_path)
    text = _read_private(path, uid)
    if text is None:
        raise NotVerified(f"there is no pid file {path} (the daemon is older, or gone)")
    if not text.isdigit() or int(text) <= 1:
        raise NotVerified(f"{path} does not hold a process id")
    return int(text)


def read_stops(socket_path: str, uid: int) -> tuple[int, int] | None:
    """(pid, count) from the stops file, or None if there is none or it cannot be trusted."""
    try:
        text = _read_private(stops_path(socket_path), uid)
    except NotVerified:
        return None
    fields = (text or "").split()
    if len(fields) != 2 or not all(field.isdigit() for field in fields):
        return None
    return int(fields[0]), int(fields[1])


def _read_private(path: str, uid: int) -> str | None:
    """The start of ``path`` if the directory and the file are ``uid``'s alone; None if the
    file does not exist; NotVerified saying why when a check fails."""
    problem = _private_dir_problem(os.path.dirname(path) or ".", uid)
    if problem:
        raise NotVerified(problem)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except FileNotFoundError:
        return None
    except OSError as exc:
        raise NotVerified(f"cannot open {path}: {exc.strerror}") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise NotVerified(f"{path} is not a regular file")
        if st.st_uid != uid:
            raise NotVerified(f"{path} belongs to uid {st.st_uid}, not to uid {uid}")
        if st.st_mode & 0o022:
            raise NotVerified(f"{path} is writable by others")
        return os.read(fd, 64).decode("ascii", errors="replace").strip()
    finally:
        os.close(fd)


def is_deskhand(argv: list[str]) -> bool:
    """Is this command line deskhand-d: the ``deskhand-d`` script (run by itself or by a
    ``python*`` interpreter), or ``python [options] -m deskhand_d``? Only the interpreter's own
    options count, so ``python other.py -m deskhand_d`` is not."""
    if not argv:
        return False
    program = os.path.basename(argv[0])
    if program == "deskhand-d":
        return True
    if not program.startswith("python"):
        return False
    rest = argv[1:]
    i = 0
    while i < len(rest):
        arg = rest[i]
        if arg == "-m":
            return rest[i + 1 : i + 2] == ["deskhand_d"]
        if arg == "-c":
            return False
        if arg in ("-X", "-W"):  # options that take a separate value
            i += 2
        elif arg.startswith("-"):
            i += 1
        else:
            return os.path.basename(arg) == "deskhand-d"  # the script the interpreter runs
    return False


def process_facts(pid: int) -> tuple[tuple[int, int], list[str]]:
    """(real uid, effective uid) and the command line of ``pid``; ProcessLookupError if gone."""
    if sys.platform.startswith("linux"):
        try:
            with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as handle:
                uids = next(line for line in handle if line.startswith("Uid:")).split()[1:3]
            with open(f"/proc/{pid}/cmdline", "rb") as handle:
                raw = handle.read()
        except (FileNotFoundError, ProcessLookupError, StopIteration):
            raise ProcessLookupError(pid) from None
        argv = [os.fsdecode(part) for part in raw.split(b"\0") if part]
        return (int(uids[0]), int(uids[1])), argv
    return _ps_facts(pid)


def _ps_facts(pid: int) -> tuple[tuple[int, int], list[str]]:
    # No /proc (macOS): ps prints the arguments joined by spaces, which is enough to find
    # "deskhand-d" or "-m deskhand_d" among them.
    out = subprocess.run(
        ["ps", "-ww", "-o", "ruid=", "-o", "uid=", "-o", "args=", "-p", str(pid)],
        capture_output=True,
        text=True,
        check=False,
    )
    fields = out.stdout.split(None, 2)
    if out.returncode != 0 or len(fields) < 3:
        raise ProcessLookupError(pid)
    return (int(fields[0]), int(fields[1])), fields[2].split()


def signal_daemon(socket_path: str, signum: int = EMERGENCY_STOP_SIGNAL) -> int:
    """Send ``signum`` to the deskhand-d serving ``socket_path``, after the checks above.

    Returns the pid; raises :class:`NotVerified` (nothing was sent) when a check fails.
    """
    uid = os.getuid()
    pid = read_pid(socket_path, uid)
    pidfd = None
    try:
        pidfd = os.pidfd_open(pid)
    except ProcessLookupError:
        raise NotVerified(f"process {pid} named by the pid file is gone") from None
    except (AttributeError, OSError):
        pidfd = None  # not Linux, or a kernel before 5.3: check and signal by pid
    try:
        try:
            uids, argv = process_facts(pid)
        except ProcessLookupError:
            raise NotVerified(f"process {pid} named by the pid file is gone") from None
        if uids != (uid, uid):
            raise NotVerified(f"process {pid} runs as uid {uids[1]}, not as uid {uid}")
        if not is_deskhand(argv):
            shown = " ".join(argv)[:120]
            raise NotVerified(f"process {pid} is not deskhand-d (it runs {shown!r})")
        try:
            if pidfd is not None:
                signal.pidfd_send_signal(pidfd, signum)
            else:
                os.kill(pid, signum)
        except ProcessLookupError:
            raise NotVerified(f"process {pid} exited before it could be signalled") from None
    finally:
        if pidfd is not None:
            os.close(pidfd)
    return pid
