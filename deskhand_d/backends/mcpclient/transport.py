"""The backend child process and its pipes: the only I/O of the MCP client.

:meth:`ProcessTransport.read_chunk` turns stdout into lines (via :class:`LineSplitter`) for
whichever task is the reader at the moment; a task drains stderr into debug logs only (a
backend's stderr may contain anything, so it never reaches info logs or clients). Writes are
serialised. :meth:`ProcessTransport.aclose` follows the MCP stdio shutdown order: close stdin,
wait, SIGTERM, wait, SIGKILL, each step bounded and shielded so a stuck child cannot hold the
daemon up; it records the signals it sent (:attr:`ProcessTransport.signals_sent`), so that a
SIGKILL of Deskhand's own is never mistaken for one macOS sent.

Most backends are started with trio's ``open_process``; one asked to disclaim responsibility
(Sky's jump host) goes through :mod:`.spawn`, whose process object offers the
same small interface (:class:`ChildProcess`).
"""

from __future__ import annotations

import collections
import os
import signal
import subprocess
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

import structlog
import trio

from deskhand_d.backends.mcpclient import spawn
from deskhand_d.backends.mcpclient.fastlock import FastLock
from deskhand_d.backends.mcpclient.framing import DEFAULT_MAX_LINE, FramingError, LineSplitter

log = structlog.get_logger("deskhand.backend")

READ_CHUNK = 256 * 1024
STDIN_CLOSE_WAIT_S = 1.0
TERM_WAIT_S = 2.0
STDERR_TAIL_LINES = 20
STDERR_FINISH_S = 0.5


class ChildProcess(Protocol):
    """What the transport needs of a child: ``trio.Process`` and ``spawn.SpawnedProcess``."""

    @property
    def pid(self) -> int: ...

    @property
    def returncode(self) -> int | None: ...

    stdin: trio.abc.SendStream | None
    stdout: trio.abc.ReceiveStream | None
    stderr: trio.abc.ReceiveStream | None

    async def wait(self) -> int: ...

    def send_signal(self, sig: int) -> None: ...


@dataclass(frozen=True, slots=True)
class Eof:
    """stdout ended; ``reason`` says whether it was a clean EOF or a framing failure."""

    reason: str


class ProcessTransport:
    def __init__(
        self, process: ChildProcess, *, max_line: int = DEFAULT_MAX_LINE, responsibility: str = ""
    ) -> None:
        self.process = process
        # Whether macOS counts the child as its own responsible process (Sky's jump host).
        self.responsibility = responsibility
        self._stderr_done = trio.Event()
        self._max_line = max_line
        self._write_lock = FastLock()
        self._splitter = LineSplitter(max_line)
        # The last stderr lines, kept for `doctor` (never logged above debug).
        self.stderr_tail: collections.deque[str] = collections.deque(maxlen=STDERR_TAIL_LINES)
        # The signals aclose sent the process group, in order ("SIGTERM", "SIGKILL").
        self.signals_sent: list[str] = []

    @property
    def pid(self) -> int:
        return self.process.pid

    async def send(self, data: bytes) -> None:
        """Write one framed message. Raises ``trio.BrokenResourceError`` if the pipe broke."""
        stdin = self.process.stdin
        if stdin is None:
            raise trio.BrokenResourceError("the backend has no stdin")
        if not self._write_lock.try_acquire():
            await self._write_lock.acquire()
        try:
            await stdin.send_all(data)
        except trio.ClosedResourceError:
            raise trio.BrokenResourceError("the backend's stdin is closed") from None
        finally:
            self._write_lock.release()

    @property
    def stdout_fd(self) -> int:
        stdout = self.process.stdout
        assert isinstance(stdout, trio.lowlevel.FdStream)
        return stdout.fileno()

    async def read_chunk(self) -> list[bytes] | Eof:
        """Read once from stdout: the complete lines that arrived (maybe none), or Eof.

        Cancellation is safe: ``receive_some`` either returns data or consumes nothing, and the
        partial line stays in the splitter for the next reader.
        """
        stdout = self.process.stdout
        if stdout is None:
            return Eof("the backend has no stdout")
        try:
            chunk = await stdout.receive_some(READ_CHUNK)
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return Eof("the backend's output pipe broke")
        if not chunk:
            return Eof("the backend closed its output")
        try:
            return self._splitter.feed(chunk)
        except FramingError as exc:
            return Eof(str(exc))

    async def run_stderr_drain(self) -> None:
        try:
            await self._drain_stderr()
        finally:
            self._stderr_done.set()

    async def _drain_stderr(self) -> None:
        stderr = self.process.stderr
        splitter = LineSplitter(1 << 20)
        try:
            while stderr is not None:
                chunk = await stderr.receive_some(READ_CHUNK)
                if not chunk:
                    return
                try:
                    lines = splitter.feed(chunk)
                except FramingError:
                    splitter = LineSplitter(1 << 20)
                    continue
                for line in lines:
                    self.stderr_tail.append(line[:2000].decode("utf-8", "replace"))
                    log.debug(
                        "backend.stderr", pid=self.pid, line=line[:2000].decode("utf-8", "replace")
                    )
        except (trio.BrokenResourceError, trio.ClosedResourceError):
            return

    async def aclose(self) -> None:
        """Stop the child: close stdin, then SIGTERM, then SIGKILL. Bounded and shielded."""
        proc = self.process
        with trio.CancelScope(shield=True):
            if proc.stdin is not None:
                try:
                    await proc.stdin.aclose()
                except (trio.BrokenResourceError, trio.ClosedResourceError):
                    pass
            with trio.move_on_after(STDIN_CLOSE_WAIT_S):
                await proc.wait()
            if proc.returncode is None:
                self.signals_sent.append(signal.SIGTERM.name)
                signal_group(proc, signal.SIGTERM)
                with trio.move_on_after(TERM_WAIT_S):
                    await proc.wait()
            if proc.returncode is None:
                self.signals_sent.append(signal.SIGKILL.name)
                signal_group(proc, signal.SIGKILL)
                await proc.wait()
            # What a child said just before it died is the best clue doctor gets: let the
            # drain read it to the end before its pipe is closed (bounded: a grandchild may
            # still hold the pipe open).
            with trio.move_on_after(STDERR_FINISH_S):
                await self._stderr_done.wait()
            for pipe in (proc.stdout, proc.stderr):
                if pipe is not None:
                    await pipe.aclose()
        log.info("backend.stopped", pid=proc.pid, returncode=proc.returncode)


def signal_group(proc: ChildProcess, sig: int) -> None:
    """Signal the child's process group (falling back to the child alone)."""
    # The backend runs in its own session, so its helpers (e.g. a jump host) go with it.
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        try:
            proc.send_signal(sig)
        except ProcessLookupError:
            pass


async def open_process(
    argv: Sequence[str],
    *,
    env: Mapping[str, str],
    cwd: str | None,
    max_line: int = DEFAULT_MAX_LINE,
    disclaim: bool = False,
) -> ProcessTransport:
    """Spawn the backend with pipes on all three standard streams, in its own session;
    ``disclaim``: as its own responsible process where macOS allows it (:mod:`.spawn`)."""
    if disclaim and spawn.supported():
        started = spawn.spawn(argv, env, cwd, disclaim=True)
        return ProcessTransport(
            started.process, max_line=max_line, responsibility=started.responsibility
        )
    process = await trio.lowlevel.open_process(
        list(argv),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=dict(env),
        cwd=cwd,
        start_new_session=True,
    )
    note = "not disclaimed: no posix_spawn support for this platform" if disclaim else ""
    return ProcessTransport(process, max_line=max_line, responsibility=note)
