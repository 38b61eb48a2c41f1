"""The processes this server starts, and how each one ended.

What this owns: starting an app detached from us (:func:`spawn`), making this process the
subreaper of everything it starts (an app that forks and lets its launcher exit, as
LibreOffice's ``oosplash`` and Firefox's wrapper do, is adopted by us instead of by init), and
reaping every such child as soon as it ends, so that none stays a zombie, while remembering
its wait status for the words of a reply ("exited (signal 11 (SIGSEGV))").

Why a subreaper: the process that answers on the accessibility bus is often a grandchild of
what was started. Without adoption its exit status goes to init and a crash can only be
reported as "it is gone". The server starts no other children, so reaping any child that ends
takes nothing from anyone.
"""

from __future__ import annotations

import ctypes
import ctypes.util
import os
import subprocess
from collections.abc import Mapping, Sequence
from typing import Final

import trio

_PR_SET_CHILD_SUBREAPER: Final = 36
_POLL: Final = 0.5
_KEPT: Final = 256  # exit statuses remembered, newest kept


def become_subreaper() -> bool:
    """Adopt orphaned descendants (Linux 3.4+); False where the system does not allow it."""
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c"), use_errno=True)
        return int(libc.prctl(_PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0)) == 0
    except (OSError, AttributeError):
        return False


class Reaper:
    """Reaps every child of this process and keeps the last statuses by pid."""

    def __init__(self) -> None:
        self.statuses: dict[int, int] = {}
        self.started: list[int] = []

    def spawn(self, argv: Sequence[str], env: Mapping[str, str], cwd: str) -> int:
        """Start ``argv`` in a session of its own with no stdio; returns its pid."""
        proc = subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
            env=dict(env),
            cwd=cwd,
        )
        # The reaper, not Popen, collects its status: tell Popen it has nothing to wait for.
        proc.returncode = 0
        self.started.append(proc.pid)
        return proc.pid

    def reap(self) -> None:
        """Collect every child that has ended, without blocking."""
        while True:
            try:
                pid, status = os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                return
            if pid == 0:
                return
            self.statuses[pid] = status
            if len(self.statuses) > _KEPT:
                del self.statuses[next(iter(self.statuses))]

    def status_of(self, pid: int) -> int | None:
        """How ``pid`` ended, if it was ours and has ended (reaping first)."""
        self.reap()
        return self.statuses.get(pid)

    async def serve(self, *, task_status: trio.TaskStatus[None] = trio.TASK_STATUS_IGNORED) -> None:
        """Reap twice a second for as long as the server runs."""
        task_status.started()
        while True:
            self.reap()
            await trio.sleep(_POLL)
