"""Fixtures for the AT-SPI backend tests: a private desktop and the server as a child process.

The desktop (session bus, Xvfb, accessibility bus) is shared by a module's tests and torn down
by PID afterwards; see :mod:`dhtest.desktop`. Without the binaries the tests are skipped,
unless ``CI`` is set, where that is a failure.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

from dhtest.desktop import Desktop, desktop_or_skip
from mcpclient import Server, serving


@pytest.fixture(scope="module")
def desktop() -> Iterator[Desktop]:
    """A private session with no app started (the server launches what it is asked for)."""
    with desktop_or_skip(require=("gnome-calculator", "galculator")) as desk:
        yield desk


@pytest.fixture(scope="module")
def server(desktop: Desktop) -> Iterator[Server]:
    """The backend server on that desktop, initialised; closed after the module."""
    with serving(desktop.env, desktop.root) as s:
        yield s
