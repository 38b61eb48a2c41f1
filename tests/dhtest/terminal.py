"""Drive ``deskhandctl`` on a pseudo-terminal: stdin and stderr on a pty, stdout on a pipe.

That is how a person runs it with its output captured: it counts as attached to a terminal, so
it declares ``can_answer_questions`` and prompts on the pty, where the test reads the prompt and
types the answer. ``typed_ahead`` is typed before the CLI starts, so it waits in the terminal's
input queue as keys pressed too early do (a test of the discard before every prompt).
:func:`as_the_person` runs a step only the person takes (``unlock``, ``apps add``, ``grants
restore``) and confirms it at its prompt.
"""

from __future__ import annotations

import os
import select
import subprocess
import sys
import time
from collections.abc import Mapping, Sequence

CONFIRM_PROMPT = b"Go ahead? [y/N] "


class Terminal:
    """The CLI as a subprocess with stdin and stderr on a pty; stdout on a pipe."""

    def __init__(
        self, *argv: str, env: Mapping[str, str] | None = None, typed_ahead: bytes = b""
    ) -> None:
        self.master, slave = os.openpty()
        self.seen = b""
        if typed_ahead:
            # Once the terminal has echoed the keys they sit in its input queue, not in flight.
            os.write(self.master, typed_ahead)
            self.read_until(typed_ahead.replace(b"\n", b"\r\n"))
        if env is None:
            env = {k: v for k, v in os.environ.items() if not k.startswith("DESKHAND_")}
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "deskhandctl", *argv],
            stdin=slave,
            stdout=subprocess.PIPE,
            stderr=slave,
            env=env,
        )
        os.close(slave)

    def read_until(self, needle: bytes, timeout: float = 15.0) -> bytes:
        """Everything the terminal showed up to and including ``needle``."""
        deadline = time.monotonic() + timeout
        while needle not in self.seen:
            left = deadline - time.monotonic()
            assert left > 0, f"never saw {needle!r}; the terminal showed {self.seen!r}"
            ready, _, _ = select.select([self.master], [], [], left)
            if ready:
                try:
                    chunk = os.read(self.master, 4096)
                except OSError:  # EIO: every slave side is closed
                    chunk = b""
                assert chunk, f"terminal closed before {needle!r}; it showed {self.seen!r}"
                self.seen += chunk
        return self.seen

    def type(self, text: bytes) -> None:
        os.write(self.master, text)

    def finish(self, timeout: float = 15.0) -> tuple[int, str]:
        """Wait for the exit; return the code and stdout. Drains the terminal meanwhile."""
        deadline = time.monotonic() + timeout
        while self.proc.poll() is None and time.monotonic() < deadline:
            if select.select([self.master], [], [], 0.05)[0]:
                try:
                    self.seen += os.read(self.master, 4096)
                except OSError:
                    pass
        assert self.proc.stdout is not None
        out = self.proc.stdout.read().decode()
        return self.proc.wait(timeout=1), out

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        assert self.proc.stdout is not None
        self.proc.stdout.close()
        os.close(self.master)


def as_the_person(
    argv: Sequence[str], env: Mapping[str, str], answer: bytes = b"y\n"
) -> subprocess.CompletedProcess[str]:
    """``deskhandctl argv`` at a terminal, with ``answer`` typed once its confirmation prompt
    shows; ``stderr`` is everything the terminal showed."""
    term = Terminal(*argv, env=env)
    try:
        term.read_until(CONFIRM_PROMPT)
        term.type(answer)
        code, out = term.finish()
    finally:
        term.close()
    return subprocess.CompletedProcess(list(argv), code, out, term.seen.decode(errors="replace"))
