"""Per-op counters and latency percentiles for ``status``. Pure; no clock of its own.

Latencies are kept in a fixed-size ring per op (the most recent samples), so memory stays
bounded however long the daemon runs and the percentiles describe recent behaviour.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field

from deskhand_d.protocol import OpStats

RING_SIZE = 2048


@dataclass(slots=True)
class _OpRecord:
    count: int = 0
    errors: int = 0
    ring: list[float] = field(default_factory=list)
    next_slot: int = 0

    def add(self, seconds: float, ok: bool) -> None:
        self.count += 1
        if not ok:
            self.errors += 1
        if len(self.ring) < RING_SIZE:
            self.ring.append(seconds)
        else:
            self.ring[self.next_slot] = seconds
            self.next_slot = (self.next_slot + 1) % RING_SIZE


def percentile(sorted_values: list[float], q: float) -> float:
    """Nearest-rank percentile of already sorted values (0 for an empty list)."""
    if not sorted_values:
        return 0.0
    rank = max(1, math.ceil(q / 100 * len(sorted_values)))
    return sorted_values[min(rank, len(sorted_values)) - 1]


class OpCounters:
    def __init__(self) -> None:
        self._ops: dict[str, _OpRecord] = {}

    def record(self, op: str, seconds: float, *, ok: bool) -> None:
        self._ops.setdefault(op, _OpRecord()).add(seconds, ok)

    def snapshot(self) -> dict[str, OpStats]:
        out: dict[str, OpStats] = {}
        for op, rec in sorted(self._ops.items()):
            values = sorted(rec.ring)
            out[op] = OpStats(
                count=rec.count,
                errors=rec.errors,
                p50_ms=round(percentile(values, 50) * 1000, 3),
                p90_ms=round(percentile(values, 90) * 1000, 3),
                p99_ms=round(percentile(values, 99) * 1000, 3),
            )
        return out
