"""Running the platform's inspection tools, and hashing executables: shared by the platforms.

Tools run without a shell or stdin, under a time limit, in the C locale so their output stays
parseable. Paths are bytes to the OS: output is decoded with ``surrogateescape`` so a path we
read back compares equal to the one we hold.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
from collections.abc import Callable

from deskhand_d.childenv import child_env
from deskhand_d.consent.identity import IdentityUnavailable

Runner = Callable[[list[str]], tuple[int, str]]
"""Runs argv without a shell and returns (exit status, stdout and stderr together)."""

COMMAND_TIMEOUT = 10.0
TIMED_OUT = 124
"""The status :func:`run_command` gives a tool that ran out of time (as timeout(1) does), so
that callers can tell "no answer in time" from the tool's own failures."""


def run_command(argv: list[str]) -> tuple[int, str]:
    """The default runner: no stdin, no shell, a 10 s limit, C locale for parseable output."""
    try:
        done = subprocess.run(
            argv,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            errors="surrogateescape",
            timeout=COMMAND_TIMEOUT,
            env={**child_env(os.environ), "LC_ALL": "C"},
            check=False,
        )
    except subprocess.TimeoutExpired:
        return TIMED_OUT, f"{argv[0]} did not finish within {COMMAND_TIMEOUT:g} s"
    except OSError as exc:
        return 127, f"{argv[0]} could not be run: {exc}"
    return done.returncode, done.stdout


def sha256_file(path: str) -> str:
    """The content identity of an executable."""
    h = hashlib.sha256()
    try:
        with open(path, "rb") as f:
            while chunk := f.read(1 << 20):
                h.update(chunk)
    except OSError as exc:
        raise IdentityUnavailable(
            f"cannot read {path} ({exc.strerror}); check that you may read the file"
        ) from exc
    return h.hexdigest()
