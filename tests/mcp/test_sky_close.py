"""How a backend's start and close go, with the fake Sky client run as a real process: lines
that are not JSON-RPC before the handshake, a start Deskhand gives up on (and who killed it),
and Sky's ``turn-ended`` when a client is closed.

The fake client (``tests/fakes/sky/SkyComputerUseClient``) is started directly, without the
fake ``codex``: these tests are about the connection, the jump host's recipes are
``tests/daemon/test_doctor_sky.py``'s.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
import trio

from deskhand_d.backends.mcpclient import turnend
from deskhand_d.backends.mcpclient.connection import LaunchSpec, open_backend
from deskhand_d.backends.mcpclient.prelude import Prelude
from deskhand_d.errors import BackendTimeout, BackendUnavailable

CLIENT = Path(__file__).resolve().parents[1] / "fakes" / "sky" / "SkyComputerUseClient"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def turns(tmp_path: Path) -> Iterator[Path]:
    yield tmp_path / "turns.jsonl"


def _sky(tmp_path: Path, mode: str, turns: Path) -> LaunchSpec:
    env = {
        "PATH": "/usr/bin:/bin",
        "PYTHONPATH": str(ROOT),
        "FAKE_SKY_MODE": mode,
        "FAKE_SKY_TURNS": str(turns),
    }
    return LaunchSpec(
        kind="sky", argv=(sys.executable, str(CLIENT), "mcp"), env=env, cwd=str(tmp_path)
    )


def _turns(path: Path) -> list[dict[str, object]]:
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


# ----- before the handshake ------------------------------------------------------------------


def test_the_prelude_is_bounded_by_lines_and_bytes() -> None:
    """Lines are skipped up to the bounds; past either, the failure quotes the first lines."""
    lines = Prelude(max_lines=3, max_bytes=1000)
    assert [lines.skip(b"warning %d" % n) for n in range(3)] == ["", "", ""]
    failure = lines.skip(b"warning 3")
    assert failure.startswith("it printed 4 lines (40 bytes) that are not JSON-RPC")
    assert "more than the 3 lines or 0 KiB allowed" in failure
    assert failure.endswith("beginning with 'warning 0' / 'warning 1' / 'warning 2'")
    size = Prelude(max_lines=100, max_bytes=2048)
    assert size.skip(b"x" * 2000) == ""
    assert size.skip(b"y" * 100).startswith("it printed 2 lines (2102 bytes)")
    assert size.lines == ["x" * 200, "y" * 100]  # kept for doctor, cut to 200 characters


async def test_a_warning_before_the_handshake_is_skipped(tmp_path: Path, turns: Path) -> None:
    """One line that is not JSON before anything else: skipped, the handshake and a call
    work, and the line is kept for doctor."""
    async with open_backend(_sky(tmp_path, "warns", turns)) as conn:
        info = await conn.handshake()
        assert info.name == "Computer Use"
        result = await conn.call_tool("list_apps", {})
        assert "Calculator" in result.output.text
        await conn.aclose()
        assert conn.last_prelude == ["warning: the fake Sky client is chatty (0)"]


async def test_too_much_before_the_handshake_fails_and_says_what(
    tmp_path: Path, turns: Path
) -> None:
    """Fifty such lines are past the bounds: the start fails as a protocol error whose message
    quotes what the backend printed."""
    async with open_backend(_sky(tmp_path, "chatter", turns)) as conn:
        with pytest.raises(BackendUnavailable) as caught:
            await conn.handshake()
    message = caught.value.message
    assert message.startswith("the backend did not speak MCP during initialize: it printed 21")
    assert "'warning: the fake Sky client is chatty (0)'" in message
    assert caught.value.data == {"phase": "initialize", "cause": "protocol_error"}
    assert _turns(turns) == []  # no handshake, no turn to end


# ----- a start Deskhand gives up on ----------------------------------------------------------


async def test_deskhands_own_kill_after_a_start_timeout_is_recorded(tmp_path: Path) -> None:
    """A backend that ignores SIGTERM and never answers: after the start deadline Deskhand
    sends SIGTERM, then SIGKILL. The -9 is recorded as Deskhand's, and the error says that
    Deskhand stopped it."""
    stuck = LaunchSpec(
        kind="sky", argv=("/bin/sh", "-c", "trap '' TERM; exec sleep 60"), env={}, cwd=None
    )
    async with open_backend(stuck, start_timeout_s=0.5) as conn:
        with pytest.raises(BackendTimeout) as caught:
            await conn.handshake()
        assert conn.last_returncode == -9
        assert conn.last_signals == ("SIGTERM", "SIGKILL")
        assert conn.last_timeout == ("initialize", 0.5)
    assert caught.value.message == (
        "the backend did not answer initialize within 0.5 s; Deskhand stopped it (with "
        "SIGKILL, after SIGTERM did not end it)"
    )
    assert caught.value.data == {"phase": "initialize"}


# ----- Sky's turn-ended ----------------------------------------------------------------------


def test_turn_ended_runs_the_client_the_way_it_was_started() -> None:
    """The recipe's command line with ``mcp`` replaced; nothing for other backends."""
    sky = LaunchSpec(
        kind="sky", argv=("/codex", "sandbox", "-P", ":x", "--", "/client", "mcp"), env={}
    )
    ended = ("/codex", "sandbox", "-P", ":x", "--", "/client", "turn-ended", "{}")
    assert turnend.argv_for(sky) == ended
    assert turnend.argv_for(LaunchSpec(kind="sim", argv=("python", "mcp"), env={})) is None
    assert turnend.argv_for(LaunchSpec(kind="sky", argv=("/client", "other"), env={})) is None


async def test_closing_a_sky_client_ends_its_turn_once(tmp_path: Path, turns: Path) -> None:
    """Closing the client runs ``turn-ended {}`` once, in the client's working directory;
    the block's end waits for it."""
    async with open_backend(_sky(tmp_path, "ok", turns)) as conn:
        await conn.handshake()
        await conn.aclose()
        await conn.aclose()  # nothing left to close: no second notification
    assert _turns(turns) == [{"argv": ["turn-ended", "{}"], "cwd": str(tmp_path)}]


async def test_a_client_that_never_finished_its_handshake_has_no_turn(
    tmp_path: Path, turns: Path
) -> None:
    async with open_backend(_sky(tmp_path, "mute", turns), start_timeout_s=0.5) as conn:
        with pytest.raises(BackendTimeout):
            await conn.handshake()
        assert conn.turn_ends_pending == 0
    assert _turns(turns) == []


async def test_a_hanging_turn_end_blocks_neither_the_close_nor_long_the_next_start(
    tmp_path: Path, turns: Path
) -> None:
    """``turn-ended`` that never returns: closing the client does not wait for it; the next
    start does (so it cannot end the new client's turn), until its deadline kills it."""
    async with open_backend(_sky(tmp_path, "turn_end_hangs", turns)) as conn:
        conn.turn_end_timeout_s = 0.5
        await conn.handshake()
        await conn.aclose()
        assert conn.turn_ends_pending == 1  # still running in the background
        with trio.fail_after(30):
            await conn.handshake()  # a fresh client, once the old turn-ended is gone
        assert conn.turn_ends_pending == 0
    assert len(_turns(turns)) == 2  # the first (killed) and the second client's
