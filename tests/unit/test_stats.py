"""Per-op counters and nearest-rank percentiles."""

from __future__ import annotations

from deskhand_d.stats import RING_SIZE, OpCounters, percentile


def test_percentiles_nearest_rank() -> None:
    """Nearest-rank percentiles on a known list."""
    values = [float(i) for i in range(1, 101)]
    assert percentile(values, 50) == 50.0
    assert percentile(values, 99) == 99.0
    assert percentile([], 50) == 0.0


def test_counters_and_ring_bound() -> None:
    """Counts keep growing while the sample ring stays bounded."""
    c = OpCounters()
    for i in range(RING_SIZE + 10):
        c.record("ping", 0.001 * (i % 10), ok=i % 2 == 0)
    snap = c.snapshot()["ping"]
    assert snap.count == RING_SIZE + 10
    assert snap.errors == (RING_SIZE + 10) // 2
    assert 0 <= snap.p50_ms <= snap.p90_ms <= snap.p99_ms <= 9.0
