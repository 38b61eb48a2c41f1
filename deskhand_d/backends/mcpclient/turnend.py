"""Sky's end of turn, sent when Deskhand closes a Sky client.

Sky draws a cursor overlay while its client works, and a client that is closed (killed
mid-action, above all) can leave it on screen. Codex ends each turn by running
``SkyComputerUseClient turn-ended <payload>``, and bridges that keep their own client run
``turn-ended {}`` when they shut down, only to dismiss the overlay (Sky protocol notes §1.3,
§11). Deskhand does the same each time it closes a Sky client that finished its handshake:
the daemon's stop, the emergency stop, a revocation, a call that hung or a client that died.

How it is run: Sky's service judges every sender by its signed parent (§1.4), and Codex, whose
notify hook is the usual caller, is such a parent. So the command line is the one that started
the client, with its ``mcp`` subcommand replaced by ``turn-ended {}``: the same signed
``codex`` jump host and recipe, the same working directory and environment, spawned with
responsibility disclaimed like the client (:func:`argv_for`).

It runs after the client has been closed (so nothing draws the overlay again), in the
background (an emergency stop never waits for it), bounded by :data:`TIMEOUT_S` and then
killed; its output goes to debug logs and a failure is only logged. A new client is not
started until it has finished, so a late notification cannot end the next client's turn.
"""

from __future__ import annotations

import signal
from typing import Final

import structlog
import trio

from deskhand_d.backends.mcpclient.info import LaunchSpec
from deskhand_d.backends.mcpclient.transport import open_process, signal_group

log = structlog.get_logger("deskhand.backend")

TURN_ENDED: Final = ("turn-ended", "{}")
TIMEOUT_S: Final = 3.0
"""How long the notification may take before it is killed (a real one is an XPC message)."""


def argv_for(spec: LaunchSpec) -> tuple[str, ...] | None:
    """The command line that ends the turn of a client started by ``spec``, or None for a
    backend that is not Sky (or a Sky command line that does not end in its ``mcp``
    subcommand, which no recipe does)."""
    if spec.kind != "sky" or spec.argv[-1:] != ("mcp",):
        return None
    return (*spec.argv[:-1], *TURN_ENDED)


async def _discard(stream: trio.abc.ReceiveStream | None) -> None:
    if stream is None:
        return
    try:
        while await stream.receive_some(65536):
            pass
    except (trio.BrokenResourceError, trio.ClosedResourceError):
        return


async def run(spec: LaunchSpec, argv: tuple[str, ...], *, timeout_s: float = TIMEOUT_S) -> None:
    """Run ``argv`` the way ``spec`` started the client; never raises (shielded, bounded)."""
    with trio.CancelScope(shield=True):
        try:
            transport = await open_process(argv, env=spec.env, cwd=spec.cwd, disclaim=spec.disclaim)
        except OSError as exc:
            log.warning("backend.turn_end_failed", backend=spec.kind, error=str(exc.strerror))
            return
        proc = transport.process
        if proc.stdin is not None:
            await proc.stdin.aclose()  # it reads nothing
        async with trio.open_nursery() as nursery:
            nursery.start_soon(transport.run_stderr_drain)
            nursery.start_soon(_discard, proc.stdout)
            with trio.move_on_after(timeout_s):
                await proc.wait()
            killed = proc.returncode is None
            if killed:
                signal_group(proc, signal.SIGKILL)
                await proc.wait()
            # A grandchild may hold the pipes open: stop reading rather than wait for it.
            nursery.cancel_scope.cancel()
        for pipe in (proc.stdout, proc.stderr):
            if pipe is not None:
                await pipe.aclose()
    code = proc.returncode
    if killed:
        log.warning(
            "backend.turn_end_failed",
            backend=spec.kind,
            error=f"no answer within {timeout_s:g} s; stopped with SIGKILL",
        )
    elif code != 0:
        log.warning("backend.turn_end_failed", backend=spec.kind, returncode=code)
    else:
        log.info("backend.turn_ended", backend=spec.kind, pid=proc.pid)
