"""The private desktop for tests: ``deskhand_d.programs.xsession`` plus the pytest rules.

Tests that need real apps (gnome-calculator, galculator) under Xvfb take a desktop through
:func:`desktop_or_skip`: it skips when a binary is missing and ``CI`` is unset, and fails under
``CI=true``, where ``.ci/setup-desktop.sh`` must have installed everything.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager

from deskhand_d.programs.xsession import (
    APPS,
    MARKER,
    Desktop,
    DesktopUnavailable,
    marked_pids,
    missing_binaries,
    private_desktop,
    start_desktop,
)

__all__ = [
    "APPS",
    "MARKER",
    "Desktop",
    "DesktopUnavailable",
    "desktop_or_skip",
    "marked_pids",
    "private_desktop",
    "require_binaries",
    "start_desktop",
]


def _under_ci() -> bool:
    return os.environ.get("CI", "").lower() not in ("", "0", "false", "no")


def require_binaries(*extra: str, session: str = "x11") -> None:
    """Skip the test when binaries are missing, unless ``CI`` is set: then fail it."""
    import pytest

    missing = missing_binaries(extra, session=session)
    if not missing:
        return
    why = f"private desktop needs {', '.join(missing)} (run .ci/setup-desktop.sh)"
    if _under_ci():
        pytest.fail(why, pytrace=False)
    pytest.skip(why)


@contextmanager
def desktop_or_skip(
    *apps: str, require: tuple[str, ...] = (), session: str = "x11"
) -> Iterator[Desktop]:
    """:func:`private_desktop` (with ``apps`` started) for a pytest fixture, after
    :func:`require_binaries` for the desktop, ``apps`` and the programs in ``require``.
    ``session``: ``x11`` (Xvfb) or ``wayland`` (headless Mutter)."""
    require_binaries(*(APPS.get(a, a) for a in (*apps, *require)), session=session)
    with private_desktop(apps=apps, session=session) as desk:
        yield desk
