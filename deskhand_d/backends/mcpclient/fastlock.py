"""A minimal async lock for hot paths where it is almost never contended.

``trio.Lock`` does careful bookkeeping on every acquire (owner task, parking-lot breakers for
deadlock detection), which costs several microseconds even when the lock is free; the backend
client takes three locks per tool call, each against its own contender: the call lock (another
caller of the same connection), the read lock (the idle watcher, reading between calls) and the
write lock (the watcher answering a ping while the call sends). This lock is a flag plus a
ParkingLot used only under contention. It is not reentrant, has no owner checks and is not
strictly fair: a woken waiter re-checks the flag and parks again if another task took the lock
first.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import trio


class FastLock:
    __slots__ = ("_held", "_lot")

    def __init__(self) -> None:
        self._held = False
        self._lot = trio.lowlevel.ParkingLot()

    def locked(self) -> bool:
        return self._held

    def try_acquire(self) -> bool:
        """Take the lock if it is free, without a checkpoint."""
        if self._held:
            return False
        self._held = True
        return True

    async def acquire(self) -> None:
        """Take the lock, waiting for it if needed (a checkpoint only when waiting)."""
        while self._held:
            await self._lot.park()
        self._held = True

    def release(self) -> None:
        self._held = False
        if self._lot:
            self._lot.unpark()

    @asynccontextmanager
    async def hold(self) -> AsyncIterator[None]:
        if not self.try_acquire():
            await self.acquire()
        try:
            yield
        finally:
            self.release()
