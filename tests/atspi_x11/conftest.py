"""Fixtures for the X11 backend tests: one private Xvfb per session, fresh peers per test."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from x11peer import PeerWindow, need_xvfb, running_xvfb

from deskhand_d.programs.atspi.x11 import X11


@pytest.fixture(scope="session")
def display_name() -> Iterator[str]:
    """The name of a private 1280x900x24 Xvfb display, such as ':93'."""
    need_xvfb()
    with running_xvfb() as name:
        yield name


@pytest.fixture
def x11(display_name: str) -> Iterator[X11]:
    """The backend's connection to the private display."""
    with X11.open(display_name) as conn:
        yield conn


@pytest.fixture
def peer(display_name: str) -> Iterator[PeerWindow]:
    """A 400x300 window at (100, 120), focused, recording input events."""
    window = PeerWindow(display_name, 100, 120, 400, 300)
    window.start_recording()
    try:
        yield window
    finally:
        window.close()
