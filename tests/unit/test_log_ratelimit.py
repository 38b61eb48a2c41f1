"""Repeated log lines: the first of each window written, the rest counted and summarised.

The rule (:class:`deskhand_d.log.RateLimiter`) on a fake clock, table-driven; then the whole
pipeline (:func:`deskhand_d.log.configure`) into a buffer: summaries are JSON lines like any
other, and secrets are redacted from them too.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass, field
from typing import Any

import pytest
import structlog

from deskhand_d import log
from deskhand_d.log import EventKey, RateLimiter, event_key


class FakeClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def key(name: str, **fields: Any) -> EventKey:
    return event_key("warning", {"event": name, **fields})


A = key("peer.refused", uid=65534)
B = key("peer.refused", uid=1001)
C = key("client.idle")


@dataclass
class Case:
    name: str
    steps: list[tuple[float, EventKey]]
    """(seconds since the start, the event's key), in order."""
    written: list[bool]
    summaries: dict[int, list[tuple[EventKey, int]]] = field(default_factory=dict)
    """Step index -> the summaries (key, count) handed back with that step."""
    drained: list[tuple[EventKey, int]] = field(default_factory=list)
    burst: int = 3
    window_s: float = 10.0
    max_keys: int = 1024


CASES = [
    Case(
        "the first of a burst are written, the rest only counted",
        steps=[(0, A)] * 5,
        written=[True, True, True, False, False],
        drained=[(A, 2)],
    ),
    Case(
        "a key's next window begins with a written event and its summary",
        steps=[(0, A), (1, A), (2, A), (3, A), (9.9, A), (10, A), (11, A)],
        written=[True, True, True, False, False, True, True],
        summaries={5: [(A, 2)]},
    ),
    Case(
        "events differing in a key field are limited apart; pids do not matter",
        steps=[(0, A), (0, B), (0, A), (0, key("peer.refused", uid=65534, pid=7)), (0, B)],
        written=[True, True, False, False, False],
        drained=[(A, 2), (B, 1)],
        burst=1,
    ),
    Case(
        "a window that held nothing back ends without a summary",
        steps=[(0, A), (1, A), (20, A)],
        written=[True, True, True],
    ),
    Case(
        "another key's event brings the summary of a window that is over",
        steps=[(0, A), (1, A), (2, A), (15, C)],
        written=[True, False, False, True],
        summaries={3: [(A, 2)]},
        burst=1,
    ),
    Case(
        "with the table full, new keys are folded into level and event name",
        steps=[(0, A), (0, B), (0, key("peer.refused", uid=3)), (0, key("peer.refused", uid=4))],
        written=[True, True, True, False],
        drained=[(key("peer.refused"), 1)],
        burst=1,
        max_keys=2,
    ),
]


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_rate_limiter(case: Case) -> None:
    """Each case: which events are written, which summaries come with which step, and what
    is still pending at the end (reported once)."""
    clock = FakeClock()
    start = clock.now
    limiter = RateLimiter(
        burst=case.burst, window_s=case.window_s, clock=clock, max_keys=case.max_keys
    )
    written = []
    for i, (at, k) in enumerate(case.steps):
        clock.now = start + at
        ok, summaries = limiter.admit(k)
        written.append(ok)
        assert [(s.key, s.count) for s in summaries] == case.summaries.get(i, []), i
    assert written == case.written
    drained = sorted((s.key, s.count) for s in limiter.drain())
    assert drained == sorted(case.drained)
    assert limiter.drain() == []  # reported once


def test_due_reports_only_windows_that_are_over() -> None:
    """The tick's question: a window is summarised once it is over, not before."""
    clock = FakeClock()
    limiter = RateLimiter(burst=1, window_s=10, clock=clock)
    for k in (A, A, A):
        limiter.admit(k)
    clock.now += 5
    limiter.admit(C)
    limiter.admit(C)
    assert limiter.due() == []
    clock.now += 5
    [s] = limiter.due()
    assert (s.key, s.count, s.over_s) == (A, 2, 10)
    clock.now += 5
    assert [(s.key, s.count) for s in limiter.due()] == [(C, 1)]


def _configure(secrets: tuple[str, ...] = ()) -> tuple[io.StringIO, FakeClock, Any]:
    buf = io.StringIO()
    clock = FakeClock()
    log.configure(level="info", secrets=secrets, stream=buf, limiter=RateLimiter(clock=clock))
    return buf, clock, structlog.get_logger("t")


def _lines(buf: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(x) for x in buf.getvalue().splitlines()]


def test_a_flood_becomes_a_burst_and_one_summary() -> None:
    """200 refusals of one uid from ever new pids: BURST lines, then one summary line
    (same level, the event, its uid, the count) once the window is over; another uid's
    first refusal is written in the middle of the flood."""
    buf, clock, logger = _configure()
    for pid in range(200):
        logger.warning("peer.refused", uid=65534, pid=pid)
        if pid == 100:
            logger.warning("peer.refused", uid=1001, pid=pid)
    clock.now += log.WINDOW_S
    log.summarise_due()
    lines = _lines(buf)
    refused = [x for x in lines if x["event"] == "peer.refused"]
    assert [x["pid"] for x in refused if x["uid"] == 65534] == list(range(log.BURST))
    assert [x["uid"] for x in refused if x["uid"] != 65534] == [1001]
    [summary] = [x for x in lines if x["event"] == log.SUMMARY_EVENT]
    assert summary["of"] == "peer.refused" and summary["uid"] == 65534
    assert summary["count"] == 200 - log.BURST
    assert summary["level"] == "warning" and "timestamp" in summary
    assert lines[-1] == summary


def test_flush_writes_what_is_pending() -> None:
    """At exit every window that held something back is summarised, over or not."""
    buf, _, logger = _configure()
    for _ in range(log.BURST + 7):
        logger.info("client.idle", conn=1)
    log.flush()
    summary = _lines(buf)[-1]
    assert (summary["event"], summary["of"], summary["count"]) == (
        log.SUMMARY_EVENT,
        "client.idle",
        7,
    )


def test_summaries_are_redacted() -> None:
    """A secret in a key field is scrubbed from the summary as from every line."""
    secret = "sk-live-0123456789"
    buf, _, logger = _configure((secret,))
    for _ in range(log.BURST + 1):
        logger.warning("backend.failed", error=f"bad key {secret}")
    log.flush()
    out = buf.getvalue()
    assert secret not in out
    assert _lines(buf)[-1]["error"] == f"bad key {log.REDACTED}"
