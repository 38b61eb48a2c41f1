"""Sky through a real daemon, at its end: the daemon's stop and the emergency stop each end the
Sky client's turn once (``turn-ended {}`` through the same jump host), and a start the daemon
gave up on is reported as its own stop, not as a launch constraint.

The fake ``codex`` and fake ``SkyComputerUseClient`` (``tests/fakes/sky``) are real processes
started by the daemon's own launcher code; the fake client appends each ``turn-ended`` it runs
to ``FAKE_SKY_TURNS``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest import skyfake
from dhtest.daemon import DaemonProc, daemon_env, spawn_tracked, tracked_root


@pytest.fixture
def root() -> Iterator[Path]:
    with tracked_root() as path:
        yield path


def _start(root: Path, fake: skyfake.SkyFake, **extra: str) -> DaemonProc:
    env = {**fake.env, "FAKE_SKY_TURNS": str(root / "turns.jsonl"), **extra}
    return spawn_tracked(root, env)


def _ctl(d: DaemonProc, *args: str) -> subprocess.CompletedProcess[str]:
    argv = [sys.executable, "-m", "deskhandctl", "--socket", str(d.socket), "--no-autostart"]
    return subprocess.run(
        [*argv, *args], capture_output=True, text=True, timeout=90, env=daemon_env(d.root)
    )


def _turns(root: Path) -> list[dict[str, object]]:
    path = root / "turns.jsonl"
    if not path.exists():
        return []
    return [json.loads(line) for line in path.read_text().splitlines()]


def _sky_running(d: DaemonProc) -> None:
    """Start the daemon's own Sky client (doctor's read-only probe) and check it works."""
    out = _ctl(d, "doctor", "--json")
    assert out.returncode == 0, out.stdout + out.stderr
    assert json.loads(out.stdout)["probe"]["status"] == "ok"


def _through_the_jump_host(fake: skyfake.SkyFake) -> None:
    """The turn was ended the way the client was started: by the signed codex's recipe."""
    started, ended = fake.codex_calls()[0]["argv"], fake.codex_calls()[-1]["argv"]
    assert isinstance(started, list) and isinstance(ended, list)
    assert started[-2:] == [str(fake.client), "mcp"]
    assert ended == [*started[:-1], "turn-ended", "{}"]


def test_a_daemon_stop_ends_skys_turn_once(root: Path) -> None:
    """SIGTERM to a daemon whose Sky client ran: one turn-ended, in the client's working
    directory, through the jump host, finished before the daemon exits."""
    fake = skyfake.install(root)
    d = _start(root, fake, DESKHAND_BACKEND="sky")
    _sky_running(d)
    assert _turns(root) == []  # nothing while the client serves
    assert d.stop() == 0
    turns = _turns(root)
    assert [t["argv"] for t in turns] == [["turn-ended", "{}"]]
    assert turns[0]["cwd"] == fake.codex_calls()[0]["cwd"]
    _through_the_jump_host(fake)
    assert '"event": "backend.turn_ended"' in d.log_text()


def test_an_emergency_stop_ends_skys_turn_once(root: Path) -> None:
    """`deskhandctl stop` closes the Sky client and ends its turn; the daemon's own stop
    afterwards has no client left, so there is still one turn-ended."""
    fake = skyfake.install(root)
    d = _start(root, fake, DESKHAND_BACKEND="sky")
    _sky_running(d)
    stopped = _ctl(d, "stop")
    assert stopped.returncode == 0, stopped.stdout + stopped.stderr
    # The notification runs in the background (the stop never waits for it): wait for it.
    deadline = time.monotonic() + 30
    while not _turns(root) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert [t["argv"] for t in _turns(root)] == [["turn-ended", "{}"]]
    _through_the_jump_host(fake)
    assert d.stop() == 0
    assert len(_turns(root)) == 1


def test_a_start_deskhand_gave_up_on_is_not_a_launch_constraint(root: Path) -> None:
    """A client that never answers initialize: after backend.start_timeout_s Deskhand stops
    the jump host itself. Doctor says so (start_hung), with what to do, and never reads the
    end as a launch constraint; no turn was begun, so none is ended."""
    fake = skyfake.install(root)
    fake.mode("mute")
    config = root / "config" / "deskhand"
    config.mkdir(parents=True)
    (config / "config.toml").write_text("[backend]\nstart_timeout_s = 1\n")
    d = _start(root, fake, DESKHAND_BACKEND="sim")
    out = _ctl(d, "doctor", "--backend", "sky", "--json")
    assert out.returncode == 1, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["handshake_ok"] is False
    assert result["error"]["code"] == "backend_timeout"
    message = result["error"]["message"]
    assert "did not answer initialize within 1 s; Deskhand stopped it (with SIGTERM)" in message
    assert [f["code"] for f in result["findings"]] == ["start_hung"]
    assert result["findings"][0]["evidence"] == (
        "the Sky client did not answer initialize within 1 s; Deskhand stopped it with SIGTERM"
    )
    assert d.stop() == 0
    assert _turns(root) == []
