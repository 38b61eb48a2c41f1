"""Benchmark: what the write-ahead audit adds to each dispatch.

A dispatch now writes a ``start`` record and waits for the disk (``fdatasync``) before the
call goes to the backend, then the ``end`` record; before write-ahead it wrote one record with
no flush. Both are timed in-process on the same file system as the daemon's state directory
(``$XDG_STATE_HOME``, else ``~/.local/state``; a temporary directory there), alternating, 300
dispatches each; the difference is the write-ahead cost per dispatch, reported beside the
native click it is part of.

Run alone: ``.venv/bin/python bench/audit_cost.py`` (JSON on stdout).
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from deskhand_d.audit import AuditLog  # noqa: E402

N = 300
FIELDS: dict[str, Any] = {
    "session": "bench",
    "client": "bench",
    "client_pid": 1,
    "tool": "click",
    "app": "Calculator",
    "arguments": {"app": "Calculator", "element_index": 11},
}


def measure_audit_cost() -> dict[str, Any]:
    base = Path(os.environ.get("XDG_STATE_HOME") or Path.home() / ".local" / "state")
    base.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(dir=base, prefix="deskhand-bench-") as tmp:
        log = AuditLog(Path(tmp) / "audit")
        try:
            old: list[float] = []
            new: list[float] = []
            for _ in range(N):
                start = time.perf_counter()
                log.dispatch(**FIELDS, delivery="dispatched", latency_ms=1.0)
                old.append((time.perf_counter() - start) * 1000)
                start = time.perf_counter()
                dispatch_id = log.begin(**FIELDS)
                log.dispatch(**FIELDS, delivery="dispatched", latency_ms=1.0, dispatch=dispatch_id)
                new.append((time.perf_counter() - start) * 1000)
        finally:
            log.close()
    one, two = statistics.median(old), statistics.median(new)
    return {
        "one_record_ms": round(one, 3),
        "write_ahead_ms": round(two, 3),
        "added_ms": round(two - one, 3),
        "write_ahead_p95_ms": round(sorted(new)[int(0.95 * N)], 3),
        "file_system_of": str(base),
    }


if __name__ == "__main__":
    print(json.dumps(measure_audit_cost()))
