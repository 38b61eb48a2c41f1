"""When the accept loop logs running out of descriptors (deskhand_d/rpc/server.py, pure part)."""

from __future__ import annotations

from deskhand_d.rpc.server import AcceptTrouble


def test_first_failure_at_once_then_one_line_per_period_then_the_recovery() -> None:
    trouble = AcceptTrouble(every_s=10.0)
    assert trouble.accepted(0.0) is None  # no trouble, nothing to say
    assert trouble.failed(1.0) == 1
    assert [trouble.failed(1.0 + i / 10) for i in range(1, 90)] == [None] * 89
    assert trouble.failed(11.0) == 90  # everything since the last line
    assert trouble.failed(11.1) is None
    assert trouble.accepted(12.0) == (92, 11.0)
    assert trouble.accepted(12.1) is None
    assert trouble.failed(13.0) == 1  # a new spell is reported at once again
