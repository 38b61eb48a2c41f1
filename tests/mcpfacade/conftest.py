"""The fixtures the ``deskhandctl mcp`` tests share: daemons on the simulator (``desks``) and
raw stdio hosts of the facade (``hosts``), each ended after the test."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest
from dhtest.clidaemon import CliDaemon, cli_daemons
from facade_rig import RawHost


@pytest.fixture
def desks() -> Iterator[Callable[..., CliDaemon]]:
    with cli_daemons() as make:
        yield make


@pytest.fixture
def hosts() -> Iterator[Callable[[CliDaemon], RawHost]]:
    made: list[RawHost] = []

    def make(desk: CliDaemon) -> RawHost:
        made.append(RawHost(desk))
        return made[-1]

    yield make
    for host in made:
        host.shut()
