"""Fixtures for the simulator tests: simulator child processes that are always reaped.

Starting a simulator costs about 0.3 s of interpreter and trio import time, so a small
session-wide pool keeps one default-scenario process already started in the background; a test
that asks for the default scenario takes it and a replacement starts while the test runs.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from simclient import MakeSim, Sim

APPROVED: dict[str, Any] = {"preapproved": ["*"]}
_POOLED = ("{}", json.dumps(APPROVED, sort_keys=True))


class _Pool:
    """A couple of spare, already started simulators per common scenario."""

    depth = 1

    def __init__(self) -> None:
        self.spares: dict[str, list[Sim]] = {}

    def take(self, scenario: dict[str, Any] | None) -> Sim:
        key = json.dumps(scenario or {}, sort_keys=True)
        if key not in _POOLED:
            return Sim(scenario)
        spares = self.spares.setdefault(key, [])
        sim = spares.pop(0) if spares else Sim(scenario)
        while len(spares) < self.depth:
            spares.append(Sim(scenario))
        return sim

    def close(self) -> None:
        for spares in self.spares.values():
            for spare in spares:
                spare.proc.kill()
                spare.close()


@pytest.fixture(scope="session")
def _pool() -> Iterator[_Pool]:
    pool = _Pool()
    yield pool
    pool.close()


@pytest.fixture
def make_sim(_pool: _Pool) -> Iterator[MakeSim]:
    """Start simulators with a scenario (initialized unless ``init=False``); all killed after."""
    started: list[Sim] = []

    def make(scenario: dict[str, Any] | None = None, *, init: bool = True, **kw: Any) -> Sim:
        sim = Sim(scenario, **kw) if kw else _pool.take(scenario)
        started.append(sim)
        if init:
            sim.initialize()
        return sim

    yield make
    for sim in started:
        if sim.proc.poll() is None:
            sim.proc.kill()
        sim.close()


@pytest.fixture(scope="module")
def _module_sim() -> Iterator[Sim]:
    sim = Sim()
    sim.initialize()
    yield sim
    sim.proc.kill()
    sim.close()


@pytest.fixture
def shared_sim(_module_sim: Sim) -> Sim:
    """One default simulator shared by a module's stateless protocol tests (drained first)."""
    assert _module_sim.proc.poll() is None
    _module_sim.quiet(0)
    return _module_sim


@pytest.fixture
def sim(make_sim: MakeSim) -> Sim:
    """A default simulator (today = 2026-09-18 11:50), initialized."""
    return make_sim()
