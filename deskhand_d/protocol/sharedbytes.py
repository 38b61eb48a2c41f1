"""Byte budgets shared by every connection, so that many clients together cost a fixed amount. Pure.

Limits per connection (``max_message_bytes``, the outbox's bounds) cap what one client costs;
at 256 clients that is still far too much. A :class:`Budget` is the second bound, counted across
all connections: the daemon holds one for partly received messages and one for replies waiting
to be written. A connection takes bytes from it as it holds them and gives them back as soon as
it stops holding them (message complete, reply written, connection gone); a take that does not
fit is refused, and the caller closes that one connection. Nothing here knows about sockets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

KiB: Final = 1024
MiB: Final = 1024 * KiB

PARTIAL_MESSAGES_BYTES: Final = 128 * MiB
"""Partly received messages, all connections together (raised to twice ``max_message_bytes``
when that is configured larger, so one largest message always fits)."""
QUEUED_REPLIES_BYTES: Final = 256 * MiB
"""Replies and events not yet written, all connections together."""


@dataclass(slots=True)
class Budget:
    """``limit`` bytes to share out; ``used`` is what is taken now."""

    limit: int
    used: int = 0

    def fits(self, size: int) -> bool:
        return self.used + size <= self.limit

    def take(self, size: int) -> bool:
        """Take ``size`` bytes if they fit; False (and nothing taken) if not."""
        if not self.fits(size):
            return False
        self.used += size
        return True

    def give(self, size: int) -> None:
        self.used = max(0, self.used - size)


def partial_messages_budget(max_message_bytes: int) -> Budget:
    return Budget(max(PARTIAL_MESSAGES_BYTES, 2 * max_message_bytes))


def queued_replies_budget() -> Budget:
    return Budget(QUEUED_REPLIES_BYTES)
