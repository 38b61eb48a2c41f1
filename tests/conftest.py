"""Fixtures shared by the whole suite."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from dhtest.daemon import DaemonProc, running_daemon


@pytest.fixture
def daemon() -> Iterator[DaemonProc]:
    """A real daemon process on a private socket, killed after the test."""
    with running_daemon() as d:
        yield d
