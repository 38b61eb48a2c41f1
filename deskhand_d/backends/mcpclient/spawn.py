"""Starting a backend with ``posix_spawn`` through ctypes, so that macOS can be told that the
child is responsible for itself.

Why: started by a LaunchAgent, Deskhand's Python is the *responsible process* of everything it
starts, so macOS judges the children's privacy checks, and Sky its sender check, by Python
rather than by the signed ``codex`` jump host. The private spawn attribute
``responsibility_spawnattrs_setdisclaim`` (libSystem, macOS 10.14 and later; Chromium, LLDB and
Qt Creator use it for helpers that need their own identity) makes the child its own
responsible process. It has no header, so it is looked up at run time: where it is missing
(older macOS, or not macOS at all) the child is spawned the same way without it, and
:attr:`Spawned.responsibility` says so.

The setter returning 0 only says the attribute was accepted, not that macOS honoured it. So
right after the spawn the child's responsible process is asked for with the private
``responsibility_get_pid_responsible_for_pid`` (looked up the same way) and the answer is
judged by :func:`judge_responsibility`: the child itself means disclaimed, Deskhand (or the
process responsible for Deskhand) means not. Where the lookup is missing, the text says that
the result could not be checked.

Everything else repeats what :mod:`subprocess` does for the other backends: three pipes, the
working directory (``posix_spawn_file_actions_addchdir_np``), a new session
(``POSIX_SPAWN_SETSID``), default dispositions for the signals Python ignores (SIGPIPE,
SIGXFSZ; an ignored signal stays ignored across exec), an empty signal mask, and no other
descriptor (``POSIX_SPAWN_CLOEXEC_DEFAULT`` on macOS, ``addclosefrom_np`` on glibc; Python's
own descriptors are close-on-exec as well).

:data:`SIGNATURES` holds the C prototype of every function used, spelled as the headers spell
it; the ctypes declarations are derived from it, and ``tests/unit/test_spawn_ctypes.py`` reads
them back against the platform's ``<spawn.h>`` and ``<signal.h>`` (and the constants and
sizes below against a compiled probe) wherever a C compiler is there.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import signal
import sys
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

import trio

DISCLAIM_SYMBOL: Final = "responsibility_spawnattrs_setdisclaim"
RESPONSIBLE_SYMBOL: Final = "responsibility_get_pid_responsible_for_pid"

# C prototypes: name -> (return type, parameter types). The two private responsibility
# functions have no header; LLDB and Chromium pass the disclaim setter the attribute object by
# address, like every setter, and the lookup takes and returns a plain pid.
SIGNATURES: Final[dict[str, tuple[str, tuple[str, ...]]]] = {
    "posix_spawn": (
        "int",
        (
            "pid_t *",
            "const char *",
            "const posix_spawn_file_actions_t *",
            "const posix_spawnattr_t *",
            "char *const []",
            "char *const []",
        ),
    ),
    "posix_spawnattr_init": ("int", ("posix_spawnattr_t *",)),
    "posix_spawnattr_destroy": ("int", ("posix_spawnattr_t *",)),
    "posix_spawnattr_setflags": ("int", ("posix_spawnattr_t *", "short")),
    "posix_spawnattr_setsigdefault": ("int", ("posix_spawnattr_t *", "const sigset_t *")),
    "posix_spawnattr_setsigmask": ("int", ("posix_spawnattr_t *", "const sigset_t *")),
    "posix_spawn_file_actions_init": ("int", ("posix_spawn_file_actions_t *",)),
    "posix_spawn_file_actions_destroy": ("int", ("posix_spawn_file_actions_t *",)),
    "posix_spawn_file_actions_adddup2": ("int", ("posix_spawn_file_actions_t *", "int", "int")),
    "posix_spawn_file_actions_addchdir_np": (
        "int",
        ("posix_spawn_file_actions_t *", "const char *"),
    ),
    "posix_spawn_file_actions_addclosefrom_np": ("int", ("posix_spawn_file_actions_t *", "int")),
    "sigemptyset": ("int", ("sigset_t *",)),
    "sigaddset": ("int", ("sigset_t *", "int")),
    DISCLAIM_SYMBOL: ("int", ("posix_spawnattr_t *", "int")),
    RESPONSIBLE_SYMBOL: ("pid_t", ("pid_t",)),
}
PRIVATE: Final = frozenset({DISCLAIM_SYMBOL, RESPONSIBLE_SYMBOL})
"""The private functions: no header declares them, so no test can read their prototypes back."""
OPTIONAL: Final = frozenset({"posix_spawn_file_actions_addclosefrom_np", *PRIVATE})
"""Functions that may be missing: glibc before 2.34 has no addclosefrom_np, and only macOS has
the responsibility functions. Every other one is required."""

# Flag values from <spawn.h> (macOS: <sys/spawn.h>), checked by the test against the headers.
if sys.platform == "darwin":
    POSIX_SPAWN_SETSIGDEF: Final = 0x0004
    POSIX_SPAWN_SETSIGMASK: Final = 0x0008
    POSIX_SPAWN_SETSID: Final = 0x0400
    POSIX_SPAWN_CLOEXEC_DEFAULT: Final = 0x4000
else:  # glibc
    POSIX_SPAWN_SETSIGDEF = 0x04
    POSIX_SPAWN_SETSIGMASK = 0x08
    POSIX_SPAWN_SETSID = 0x80
    POSIX_SPAWN_CLOEXEC_DEFAULT = 0  # no such flag: addclosefrom_np does the same

OPAQUE_BYTES: Final = 1024
"""Room for ``posix_spawnattr_t``, ``posix_spawn_file_actions_t`` and ``sigset_t``: a pointer
on macOS, structs of 336, 80 and 128 bytes in glibc. The test checks the real sizes fit."""


class _Opaque(ctypes.Structure):
    _fields_ = [("words", ctypes.c_uint64 * (OPAQUE_BYTES // 8))]


def ctype(c_type: str) -> Any:
    """The ctypes type for one C type of :data:`SIGNATURES`."""
    if c_type == "int":
        return ctypes.c_int
    if c_type == "short":
        return ctypes.c_short
    if c_type == "const char *":
        return ctypes.c_char_p
    if c_type == "char *const []":
        return ctypes.POINTER(ctypes.c_char_p)
    if c_type == "pid_t":
        return ctypes.c_int32  # pid_t is a 32-bit int on macOS and Linux
    if c_type == "pid_t *":
        return ctypes.POINTER(ctypes.c_int32)
    if c_type.endswith("*"):
        return ctypes.c_void_p  # the opaque objects, passed by address
    raise ValueError(f"no ctypes type for {c_type!r}")


def supported(platform: str = sys.platform) -> bool:
    """Whether this module knows the platform's flag values (macOS and glibc Linux)."""
    return platform == "darwin" or platform.startswith("linux")


class _Libc:
    """The C library's functions, declared from :data:`SIGNATURES`; missing optional ones are
    None."""

    def __init__(self) -> None:
        lib = ctypes.CDLL(None, use_errno=True)
        self.functions: dict[str, Any] = {}
        for name, (ret, params) in SIGNATURES.items():
            try:
                fn = getattr(lib, name)
            except AttributeError:
                if name in OPTIONAL:
                    self.functions[name] = None
                    continue
                raise OSError(f"the C library has no {name}") from None
            fn.restype = ctype(ret)
            fn.argtypes = [ctype(p) for p in params]
            self.functions[name] = fn

    def __call__(self, name: str, *args: Any) -> None:
        """Call ``name``; a non-zero result is the errno of the failure (posix_spawn style)."""
        err = self.functions[name](*args)
        if err != 0:
            # sigemptyset and friends return -1 and set errno instead.
            code = ctypes.get_errno() if err == -1 else err
            raise OSError(code, f"{name}: {os.strerror(code)}")


_LIBC: _Libc | None = None


def _libc() -> _Libc:
    global _LIBC
    if _LIBC is None:
        _LIBC = _Libc()
    return _LIBC


def disclaim_available() -> bool:
    """Whether this system's C library has the disclaim attribute (macOS 10.14 and later)."""
    return supported() and _libc().functions[DISCLAIM_SYMBOL] is not None


def responsible_pid(pid: int) -> int | None:
    """The pid macOS counts as responsible for ``pid``, as its private lookup answers it (a
    value of 0 or less: it could not say), or None where there is no such lookup (every
    system but macOS)."""
    if not supported():
        return None
    lookup = _libc().functions[RESPONSIBLE_SYMBOL]
    return None if lookup is None else int(lookup(pid))


@dataclass(frozen=True, slots=True)
class Judgement:
    """What macOS's answer about a child's responsible process means: ``disclaimed`` is None
    when there was no answer to judge."""

    disclaimed: bool | None
    detail: str


def judge_responsibility(
    answer: int | None,
    *,
    child: int,
    daemon: int,
    daemon_responsible: int | None = None,
    platform: str = sys.platform,
) -> Judgement:
    """Judge ``answer`` (:func:`responsible_pid` of ``child``). Pure.

    The child itself: disclaimed. Deskhand (``daemon``), or whoever is responsible for
    Deskhand (a terminal it was started from): not disclaimed, macOS still judges the child
    by them.
    """
    if answer is None:
        where = "this macOS" if platform == "darwin" else f"this system ({platform})"
        return Judgement(None, f"not checked: {where} has no {RESPONSIBLE_SYMBOL}")
    if answer <= 0:
        return Judgement(
            None,
            "not checked: macOS did not say which process is responsible for the jump host "
            f"(pid {child}; it answered {answer})",
        )
    if answer == child:
        return Judgement(
            True, f"macOS counts the jump host (pid {child}) as its own responsible process"
        )
    if answer == daemon:
        who = f"Deskhand (pid {daemon})"
    elif answer == daemon_responsible:
        who = f"the process responsible for Deskhand (pid {answer})"
    else:
        who = f"another process (pid {answer})"
    return Judgement(False, f"macOS counts {who} as responsible for the jump host (pid {child})")


def responsibility_text(refused: str, judgement: Judgement) -> str:
    """The line doctor shows: what the disclaim setter did (``refused``: why it could not be
    asked, or ``""`` when it accepted) and what macOS said afterwards. Pure."""
    if refused:
        return f"not disclaimed: {refused}; {judgement.detail}"
    if judgement.disclaimed is True:
        return f"disclaimed: {judgement.detail}"
    if judgement.disclaimed is False:
        return f"not disclaimed: the spawn attribute was accepted, but {judgement.detail}"
    return f"unconfirmed: the spawn attribute was accepted; {judgement.detail}"


def _check_responsibility(refused: str, pid: int) -> str:
    me = os.getpid()
    judgement = judge_responsibility(
        responsible_pid(pid), child=pid, daemon=me, daemon_responsible=responsible_pid(me)
    )
    return responsibility_text(refused, judgement)


def _high_fd(fd: int) -> int:
    """``fd`` moved above the standard three, so that dup2 onto 0-2 never meets itself."""
    if fd > 2:
        return fd
    moved = fcntl.fcntl(fd, fcntl.F_DUPFD_CLOEXEC, 3)
    os.close(fd)
    return moved


def _cstrings(items: Sequence[bytes]) -> Any:
    array = (ctypes.c_char_p * (len(items) + 1))()
    array[:-1] = list(items)
    array[len(items)] = None
    return array


def spawn_raw(
    argv: Sequence[str],
    env: Mapping[str, str],
    cwd: str | None,
    stdio: tuple[int, int, int],
    *,
    disclaim: bool,
) -> tuple[int, str]:
    """posix_spawn ``argv[0]`` (an absolute path) with ``stdio`` as fds 0-2, in a new session.

    Returns (pid, what became of responsibility). Raises OSError when the spawn fails (an
    executable that is missing or not executable included).
    """
    c = _libc()
    attr, actions = _Opaque(), _Opaque()
    ref_attr, ref_actions = ctypes.byref(attr), ctypes.byref(actions)
    c("posix_spawnattr_init", ref_attr)
    try:
        c("posix_spawn_file_actions_init", ref_actions)
        try:
            flags = (
                POSIX_SPAWN_SETSID
                | POSIX_SPAWN_SETSIGDEF
                | POSIX_SPAWN_SETSIGMASK
                | POSIX_SPAWN_CLOEXEC_DEFAULT
            )
            c("posix_spawnattr_setflags", ref_attr, flags)
            defaults, empty = _Opaque(), _Opaque()
            c("sigemptyset", ctypes.byref(defaults))
            for name in ("SIGPIPE", "SIGXFSZ"):
                number = getattr(signal, name, None)
                if number is not None:
                    c("sigaddset", ctypes.byref(defaults), int(number))
            c("posix_spawnattr_setsigdefault", ref_attr, ctypes.byref(defaults))
            c("sigemptyset", ctypes.byref(empty))
            c("posix_spawnattr_setsigmask", ref_attr, ctypes.byref(empty))
            refused = _disclaim(c, ref_attr) if disclaim else ""
            for target, fd in enumerate(stdio):
                c("posix_spawn_file_actions_adddup2", ref_actions, fd, target)
            if cwd is not None:
                c("posix_spawn_file_actions_addchdir_np", ref_actions, os.fsencode(cwd))
            closefrom = c.functions["posix_spawn_file_actions_addclosefrom_np"]
            if not POSIX_SPAWN_CLOEXEC_DEFAULT and closefrom is not None:
                c("posix_spawn_file_actions_addclosefrom_np", ref_actions, 3)
            pid = ctypes.c_int32(0)
            args = _cstrings([os.fsencode(a) for a in argv])
            envp = _cstrings([os.fsencode(k) + b"=" + os.fsencode(v) for k, v in env.items()])
            c(
                "posix_spawn",
                ctypes.byref(pid),
                os.fsencode(argv[0]),
                ref_actions,
                ref_attr,
                args,
                envp,
            )
            if not disclaim:
                return pid.value, "not asked"
            # Asked at once, while the child is surely alive (a jump host stays until its
            # client ends): the setter's 0 says nothing about whether macOS honoured it.
            return pid.value, _check_responsibility(refused, pid.value)
        finally:
            c("posix_spawn_file_actions_destroy", ref_actions)
    finally:
        c("posix_spawnattr_destroy", ref_attr)


def _disclaim(c: _Libc, ref_attr: Any) -> str:
    """Set the disclaim attribute: ``""`` when the setter accepted it, else why not."""
    if c.functions[DISCLAIM_SYMBOL] is None:
        where = "this macOS" if sys.platform == "darwin" else f"this system ({sys.platform})"
        return f"{where} has no {DISCLAIM_SYMBOL}"
    try:
        c(DISCLAIM_SYMBOL, ref_attr, 1)
    except OSError as exc:
        return f"{DISCLAIM_SYMBOL} refused: {exc.strerror}"
    return ""


@dataclass(frozen=True, slots=True)
class Spawned:
    process: SpawnedProcess
    responsibility: str


class SpawnedProcess:
    """A child started by :func:`spawn`, with the part of ``trio.Process``'s interface that the
    backend transport uses. Waiting polls ``waitpid``: it only happens while stopping."""

    def __init__(
        self,
        pid: int,
        stdin: trio.lowlevel.FdStream,
        stdout: trio.lowlevel.FdStream,
        stderr: trio.lowlevel.FdStream,
    ) -> None:
        self.pid = pid
        self.stdin: trio.abc.SendStream | None = stdin
        self.stdout: trio.abc.ReceiveStream | None = stdout
        self.stderr: trio.abc.ReceiveStream | None = stderr
        self._returncode: int | None = None

    @property
    def returncode(self) -> int | None:
        if self._returncode is None:
            try:
                pid, status = os.waitpid(self.pid, os.WNOHANG)
            except ChildProcessError:  # reaped elsewhere: the status is lost
                self._returncode = -255
            else:
                if pid != 0:
                    self._returncode = os.waitstatus_to_exitcode(status)
        return self._returncode

    async def wait(self) -> int:
        delay = 0.005
        while True:
            code = self.returncode
            if code is not None:
                return code
            await trio.sleep(delay)
            delay = min(delay * 2, 0.05)

    def send_signal(self, sig: int) -> None:
        if self.returncode is None:  # never signal a pid that may belong to someone else now
            os.kill(self.pid, sig)


def spawn(
    argv: Sequence[str], env: Mapping[str, str], cwd: str | None, *, disclaim: bool
) -> Spawned:
    """Start ``argv`` with pipes on its standard streams (see the module notes)."""
    ours: list[int] = []
    theirs: list[int] = []
    try:
        for child_reads in (True, False, False):
            r, w = os.pipe()
            r, w = _high_fd(r), _high_fd(w)
            ours.append(w if child_reads else r)
            theirs.append(r if child_reads else w)
        pid, responsibility = spawn_raw(
            argv, env, cwd, (theirs[0], theirs[1], theirs[2]), disclaim=disclaim
        )
    except BaseException:
        for fd in ours:
            os.close(fd)
        raise
    finally:
        for fd in theirs:
            os.close(fd)
    streams = [trio.lowlevel.FdStream(fd) for fd in ours]
    return Spawned(SpawnedProcess(pid, *streams), responsibility)
