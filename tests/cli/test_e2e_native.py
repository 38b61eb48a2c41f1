"""``python -m deskhandctl`` native commands against the real daemon and the simulated desktop.

Every CLI call is its own process, so these also show that the named session carries state ids
from one invocation to the next.
"""

from __future__ import annotations

import json
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, save_grants
from dhtest.terminal import as_the_person
from terminal import Terminal

pytestmark = pytest.mark.slow


class Desk:
    """A daemon on the simulator, and the CLI pointed at it."""

    def __init__(self, daemon: DaemonProc) -> None:
        self.daemon = daemon
        self.env = daemon_env(daemon.root)

    def argv(self, *argv: str) -> list[str]:
        return ["--socket", str(self.daemon.socket), *argv]

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "deskhandctl", *self.argv(*argv)],
            env=self.env,
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def at_terminal(self, *argv: str) -> subprocess.CompletedProcess[str]:
        """A step only the person takes, run and confirmed at a terminal."""
        return as_the_person(self.argv(*argv), self.env)

    def json(self, *argv: str, code: int = 0, at_terminal: bool = False) -> dict[str, Any]:
        done = self.at_terminal("--json", *argv) if at_terminal else self.run("--json", *argv)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout)
        return value


@pytest.fixture
def desk() -> Iterator[Any]:
    """A factory: ``desk(scenario, **env)`` starts a daemon with the simulator backend."""
    started: list[DaemonProc] = []

    def make(
        scenario: dict[str, Any] | None = None, *, grants: tuple[str, ...] = SIM_APPS, **env: str
    ) -> Desk:
        extra = {"DESKHAND_BACKEND": "sim", **env}
        if scenario is not None:
            extra["DESKHAND_SIM_SCENARIO"] = json.dumps(scenario)
        root = short_tmpdir()
        if grants:
            save_grants(root / "config", grants)
        started.append(spawn_daemon(root, extra_env=extra))
        return Desk(started[-1])

    yield make
    for d in started:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)
        shutil.rmtree(d.root, ignore_errors=True)


def display(text: str) -> str:
    """The Calculator's result: the last static text before the keypad buttons."""
    texts = [x.split(" text ", 1)[1] for x in text.splitlines() if re.match(r"^\t*\d+ text ", x)]
    return texts[-1].strip("\u200e ")


def test_six_plus_seven_is_thirteen(desk: Any) -> None:
    """observe Calculator, press 6 + 7 = in four more processes, observe: the display shows 13."""
    d = desk({"preapproved": ["Calculator"]})
    sid = d.json("observe", "Calculator")["state_id"]
    for key in ("6", "plus", "7", "Return"):
        result = d.json("press", "--app", "Calculator", "--state", sid, key)
        assert (result["delivery"], result["ok"]) == ("dispatched", True)
        sid = result["state_id"]  # a complete tree came back: the next step needs no read
    seen = d.json("observe", "Calculator")
    assert display(seen["text"]) == "13"
    assert seen["screenshot"] is None and seen["app"] == "Calculator"


def test_human_observe_and_screenshot(desk: Any, tmp_path: Path) -> None:
    """The human form ends with the state id; --screenshot writes the JPEG with mode 0600."""
    d = desk({"preapproved": ["Calculator"]})
    shot = tmp_path / "calc.jpg"
    done = d.run("observe", "Calculator", "--screenshot", str(shot))
    assert done.returncode == 0, done.stderr
    *_, saved, last = done.stdout.splitlines()
    assert re.fullmatch(r"state: [0-9a-f]{32} \(single use, valid 60 s\)", last)
    assert saved.startswith(f"screenshot: saved to {shot} (image/jpeg, ")
    assert shot.read_bytes()[:3] == b"\xff\xd8\xff"
    assert stat.S_IMODE(shot.stat().st_mode) == 0o600
    state = last.split()[1]
    clicked = d.run("click", "--app", "Calculator", "--state", state, "--x", "20", "--y", "300")
    assert clicked.returncode == 0, clicked.stderr
    assert "delivery: dispatched" in clicked.stdout


def test_refusals_exit_1_with_their_codes(desk: Any) -> None:
    """A replayed state id and an app off the allowlist are refused; apps add lets the app in."""
    d = desk({"preapproved": ["Calculator", "TextEdit"]})
    sid = d.json("observe", "Calculator")["state_id"]
    d.json("press", "--app", "Calculator", "--state", sid, "5")
    replay = d.run("press", "--app", "Calculator", "--state", sid, "5")
    assert replay.returncode == 1
    assert replay.stderr.startswith("deskhandctl: state_consumed: ")
    assert (
        d.json("press", "--app", "Calculator", "--state", sid, "5", code=1)["error"]["code"]
        == "state_consumed"
    )
    refused = d.run("observe", "TextEdit")
    assert refused.returncode == 1 and "app_not_allowed" in refused.stderr
    added = d.json("apps", "add", "TextEdit", at_terminal=True)
    assert added["added"] is True and "TextEdit" in added["apps"]
    assert Path(added["file"]).is_file()
    assert d.json("observe", "TextEdit")["app"] == "TextEdit"
    assert d.json("apps", "list")["in_apps_file"] == ["TextEdit"]


def test_sessions_keep_their_state_ids_apart(desk: Any) -> None:
    """A state id observed in one named session is unknown in another; turn end retires it."""
    d = desk({"preapproved": ["Calculator"]})
    sid = d.json("--session", "one", "observe", "Calculator")["state_id"]
    other = d.json("--session", "two", "press", "--app", "Calculator", "--state", sid, "1", code=1)
    assert other["error"]["code"] == "state_unknown"
    sid = d.json("--session", "one", "observe", "Calculator")["state_id"]
    assert d.json("--session", "one", "turn", "end")["kind"] == "done"
    late = d.json("--session", "one", "press", "--app", "Calculator", "--state", sid, "1", code=1)
    assert late["error"]["code"].startswith("state_")
    assert d.json("--session", "one", "mode") == {
        "kind": "mode",
        "mode": "native",
        "reason": "",
        "detail": "",
    }


def test_stop_locks_until_unlock(desk: Any) -> None:
    """stop locks the daemon (status says so, observe is refused) until unlock."""
    d = desk({"preapproved": ["Calculator"]})
    locked = d.json("stop")
    assert locked["locked"] is True and "deskhandctl" in locked["by"]
    status = d.run("status")
    assert "LOCKED    emergency stop by deskhandctl" in status.stdout
    assert d.json("observe", "Calculator", code=1)["error"]["code"] == "locked"
    assert d.json("unlock", at_terminal=True)["locked"] is False
    assert d.json("observe", "Calculator")["state_id"]


@pytest.mark.parametrize(("typed", "code"), [(b"y\n", 0), (b"n\n", 1)])
def test_backend_approval_answered_at_the_terminal(desk: Any, typed: bytes, code: int) -> None:
    """The simulator's approval prompt reaches the terminal; y observes, n is approval_declined."""
    d = desk()
    terminal = Terminal(*d.argv("observe", "Calculator"), env=d.env)
    try:
        shown = terminal.read_until(b"[y/N] ").decode()
        assert "the computer-use backend asks for approval to use Calculator." in shown
        assert "  > Allow ChatGPT to use Calculator?" in shown
        terminal.type(typed)
        exit_code, out = terminal.finish()
    finally:
        terminal.close()
    assert exit_code == code, terminal.seen
    if code == 0:
        assert out.splitlines()[-1].startswith("state: ")
    else:
        assert b"approval_declined" in terminal.seen
        assert b"refused: nothing was sent to the desktop" in terminal.seen


def test_without_a_terminal_the_approval_is_cancelled(desk: Any) -> None:
    """Non-interactive runs declare they cannot answer; the daemon cancels, nothing is accepted."""
    d = desk()
    done = d.run("observe", "Calculator")
    assert done.returncode == 1
    assert "approval_cancelled" in done.stderr


@pytest.mark.parametrize(
    ("typed", "code", "saved"),
    [(b"a\n", 0, 1), (b"o\n", 0, 0), (b"d\n", 1, 0), (b"\n", 1, 0), (b"yes\n", 1, 0)],
)
def test_consent_answered_at_the_terminal(desk: Any, typed: bytes, code: int, saved: int) -> None:
    """Deskhand's own consent question: [o]nce / [a]lways / [d]eny, anything else denies."""
    d = desk({"preapproved": ["*"]}, grants=())
    terminal = Terminal(*d.argv("observe", "Calculator"), env=d.env)
    try:
        shown = terminal.read_until(b"(default deny) ").decode()
        assert "[o]nce / [a]lways / [d]eny" in shown
        assert "/System/Applications/Calculator.app/Contents/MacOS/Calculator" in shown
        assert "signed by Apple" in shown
        terminal.type(typed)
        exit_code, out = terminal.finish()
    finally:
        terminal.close()
    assert exit_code == code, terminal.seen
    if code == 0:
        assert out.splitlines()[-1].startswith("state: ")
    listed = d.json("grants", "list")["grants"]
    assert len(listed) == saved
    if code:
        assert b"consent_denied" in terminal.seen


def test_without_a_terminal_consent_is_denied(desk: Any) -> None:
    d = desk({"preapproved": ["*"]}, grants=())
    done = d.json("observe", "Calculator", code=1)
    assert done["error"]["code"] == "consent_denied"
    assert done["error"]["data"]["reason"] == "no_one_to_ask"


def test_grants_list_revoke_restore(desk: Any) -> None:
    d = desk({"preapproved": ["*"]})  # Calculator, TextEdit and Calendar have saved grants
    state = d.json("observe", "Calculator")["state_id"]
    listed = d.json("grants", "list")
    assert sorted(g["app"] for g in listed["grants"]) == ["Calculator", "Calendar", "TextEdit"]
    text = d.run("grants", "list").stdout
    assert "Calculator: active" in text and "program: /System/Applications/Calculator.app" in text
    revoked = d.json("grants", "revoke", "calculator")
    assert revoked["cancelled"] == 0 and revoked["grants"][0]["revoked_at"]
    assert "restored 1 grant(s)" in d.at_terminal("grants", "restore", "Calculator").stdout
    again = d.json("click", "--app", "Calculator", "--state", state, "--index", "1", code=1)
    assert again["error"]["code"] == "state_invalidated"
    # Listing and revoking work even while the emergency stop is engaged; restoring does not.
    assert d.json("stop")["locked"] is True
    assert d.json("grants", "revoke", "TextEdit")["grants"][0]["app"] == "TextEdit"
    restore = d.json("grants", "restore", "TextEdit", code=1, at_terminal=True)
    assert restore["error"]["code"] == "locked"
    assert d.json("unlock", at_terminal=True)["locked"] is False
    missing = d.json("grants", "revoke", "Safari", code=1)
    assert missing["error"]["code"] == "grant_not_found"
    assert "grants list" in missing["error"]["message"]
