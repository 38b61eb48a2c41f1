"""Process limits the daemon sets for itself at start: the open-files soft limit.

Every connection costs a file descriptor, and a soft limit of 1024 (systemd's default, and many
shells') is reached by fewer silent clients than one might expect. The hard limit is the ceiling
an unprivileged process may raise itself to, so the daemon raises its soft limit toward it,
capped at ``NOFILE_CAP``: enough for the largest ``max_clients`` with room for the backend and
files, while children (the backend, launched apps) inherit a limit that is still ordinary.
Should descriptors run out anyway, the accept loop waits instead of failing
(``rpc/server.py``).
"""

from __future__ import annotations

import resource
import sys
from dataclasses import dataclass

NOFILE_CAP = 65536
# macOS refuses a soft limit above OPEN_MAX even when the hard limit is "unlimited".
_DARWIN_OPEN_MAX = 10240


@dataclass(frozen=True, slots=True)
class NofileChange:
    before: int
    after: int
    hard: int | None  # None: unlimited
    error: str = ""  # why the raise failed, if it did


def raise_open_files(cap: int = NOFILE_CAP) -> NofileChange:
    """Raise the soft RLIMIT_NOFILE toward the hard limit (never lower it)."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    unlimited = hard == resource.RLIM_INFINITY
    shown = None if unlimited else hard
    target = cap if unlimited else min(hard, cap)
    if soft == resource.RLIM_INFINITY or soft >= target:
        return NofileChange(before=soft, after=soft, hard=shown)
    candidates = [target]
    if sys.platform == "darwin" and target > _DARWIN_OPEN_MAX:
        candidates.append(_DARWIN_OPEN_MAX)
    error = ""
    for value in candidates:
        if value <= soft:
            break
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (value, hard))
        except (OSError, ValueError) as exc:
            error = str(exc)
            continue
        return NofileChange(before=soft, after=value, hard=shown)
    return NofileChange(before=soft, after=soft, hard=shown, error=error)
