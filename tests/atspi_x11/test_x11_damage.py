"""The damage watcher against a private Xvfb: what another client draws, ordered by fences.

The peer window draws through its own connection, as an app would. "Drawn after the fence"
must mean drawn after we set it, whatever our reader task was doing meanwhile.
"""

from __future__ import annotations

import trio
from x11peer import PeerWindow

from deskhand_d.programs.atspi.damage import Damage

WINDOW = (100, 120, 400, 300)  # the peer fixture's rectangle on the screen
ELSEWHERE = (700, 500, 100, 100)


async def test_drawing_after_a_fence_is_seen_in_its_rectangle_only(
    display_name: str, peer: PeerWindow
) -> None:
    damage = await Damage.open(display_name)
    try:
        async with trio.open_nursery() as nursery:
            await nursery.start(damage.run)
            first = await damage.fence(trio.current_time() + 2)
            assert first is not None
            await trio.to_thread.run_sync(peer.fill, 10, 10, 50, 40, 0xFF0000)
            soon = trio.current_time() + 2
            assert await damage.drawn_after(WINDOW, first, soon)
            assert not await damage.drawn_after(ELSEWHERE, first, trio.current_time() + 0.1)

            # Nothing is drawn after a second fence: a wait for a new frame ends empty.
            second = await damage.fence(trio.current_time() + 2)
            assert second is not None and second >= damage.last_in(WINDOW)
            assert not await damage.drawn_after(WINDOW, second, trio.current_time() + 0.2)
            assert trio.current_time() - damage.drawn_at(WINDOW) >= 0.2

            # What was drawn before a fence never counts as after it.
            await trio.to_thread.run_sync(peer.fill, 70, 10, 50, 40, 0x00FF00)
            third = await damage.fence(trio.current_time() + 2)
            assert third is not None and third >= damage.last_in(WINDOW) > second
            assert not await damage.drawn_after(WINDOW, third, trio.current_time() + 0.2)
            nursery.cancel_scope.cancel()
    finally:
        damage.close()


async def test_a_lost_display_ends_the_watch(display_name: str) -> None:
    damage = await Damage.open(display_name)
    async with trio.open_nursery() as nursery:
        await nursery.start(damage.run)
        damage.close()
        with trio.fail_after(2):
            while damage.alive:
                await trio.sleep(0.01)
        assert await damage.fence(trio.current_time() + 0.2) is None
        nursery.cancel_scope.cancel()
