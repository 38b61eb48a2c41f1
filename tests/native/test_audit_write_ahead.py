"""Every dispatch is audited, even across kill -9 of the daemon and a full disk.

* kill -9 at random points of a dispatch (20 rounds): every call the backend received has a
  durable ``start`` record; after a restart each such dispatch reads as ``unknown`` or as its
  recorded outcome (``deskhandctl audit``), never as missing or refused, and ``status`` counts
  the ones the restart found unfinished.
* A full disk under the state directory (a small tmpfs; root only): while the audit cannot be
  written nothing is dispatched (``audit_unavailable``, with the path and the cause); an action
  either has its records or never reached the backend; when space returns, the torn line a
  full disk left is ended before the next record, so every line parses.
"""

from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, save_grants

pytestmark = pytest.mark.slow


class Rig:
    """A daemon on the simulator (restartable), its CLI and the simulator's traffic record."""

    def __init__(self, root: Path, scenario: dict[str, Any]) -> None:
        self.root = root
        self.record = root / "sim.jsonl"
        self.extra = {
            "DESKHAND_BACKEND": "sim",
            "DESKHAND_SIM_SCENARIO": json.dumps(scenario),
            "DESKHAND_SIM_RECORD": str(self.record),
            "DESKHAND_ALLOWED_APPS": "Calculator",
        }
        save_grants(root / "config", SIM_APPS)
        self.daemon: DaemonProc = spawn_daemon(root, extra_env=self.extra)

    def restart(self) -> None:
        self.daemon = spawn_daemon(self.root, extra_env=self.extra)

    def ctl(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "deskhandctl", "--socket", str(self.daemon.socket), *argv],
            env={**daemon_env(self.root), "DESKHAND_NO_AUTOSTART": "1"},  # only our daemon
            capture_output=True,
            text=True,
            timeout=timeout,
        )

    def start_ctl(self, *argv: str) -> subprocess.Popen[str]:
        return subprocess.Popen(
            [sys.executable, "-m", "deskhandctl", "--socket", str(self.daemon.socket), *argv],
            env={**daemon_env(self.root), "DESKHAND_NO_AUTOSTART": "1"},
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )

    def received(self, tool: str) -> int:
        """How many calls of ``tool`` the simulator received (over every backend process)."""
        if not self.record.exists():
            return 0
        n = 0
        for line in self.record.read_text().splitlines():
            try:
                event = json.loads(line)
            except ValueError:
                continue  # a process killed mid-line
            n += event.get("event") == "call_start" and event.get("tool") == tool
        return n

    def audit_lines(self) -> list[str]:
        return (self.root / "state" / "deskhand" / "audit" / "audit.jsonl").read_text().splitlines()

    def audit_view(self) -> list[dict[str, Any]]:
        done = self.ctl("--json", "audit", "--last", "1000")
        assert done.returncode == 0, done.stderr
        rows: list[dict[str, Any]] = json.loads(done.stdout)["dispatches"]
        return rows

    def close(self) -> None:
        if self.daemon.proc.poll() is None:
            self.daemon.proc.kill()
            self.daemon.proc.wait(10)


@pytest.fixture
def rig() -> Iterator[Any]:
    made: list[Rig] = []

    def make(scenario: dict[str, Any], root: Path | None = None) -> Rig:
        made.append(Rig(root or short_tmpdir(), scenario))
        return made[-1]

    make.made = made  # type: ignore[attr-defined]
    yield make
    for r in made:
        r.close()
        shutil.rmtree(r.root, ignore_errors=True)


def test_kill_9_at_random_points_leaves_no_dispatch_unaudited(rig: Any) -> None:
    rng = random.Random(1505)
    r = rig({"preapproved": ["Calculator"], "delay_ms": {"click": 40}})
    unfinished_seen = 0
    for _ in range(20):
        state = r.ctl("--json", "observe", "Calculator")
        assert state.returncode == 0, state.stderr
        sid = json.loads(state.stdout)["state_id"]
        clicking = r.start_ctl("click", "--app", "Calculator", "--state", sid, "--index", "11")
        time.sleep(rng.uniform(0.0, 0.12))
        r.daemon.proc.send_signal(signal.SIGKILL)
        r.daemon.proc.wait(10)
        clicking.communicate(timeout=30)
        r.restart()
        status = r.ctl("--json", "status")
        assert status.returncode == 0, status.stderr
        unfinished_seen += json.loads(status.stdout)["audit"]["unfinished_at_start"]
        clicks = [d for d in r.audit_view() if d["tool"] == "click"]
        # every click the backend received has its record, and none of them says refused
        assert len(clicks) >= r.received("click"), (clicks, r.received("click"))
        assert all(c["delivery"] in ("dispatched", "unknown") for c in clicks), clicks
    # the random points did land inside dispatches now and then
    assert unfinished_seen >= 1
    for line in r.audit_lines():
        json.loads(line)


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def _mount_tmpfs(path: Path, size: str) -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        if os.environ.get("CI"):
            pytest.fail("a tmpfs needs root and mount(8); CI runs as root")
        pytest.skip("needs root to mount a small tmpfs for the full-disk case")
    path.mkdir(parents=True, mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)],
                   check=True)  # fmt: skip


def _fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` to the last byte; return the filler file."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 1):  # down to the last byte
            try:
                while f.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler


def test_full_disk_refuses_to_dispatch_unaudited_and_repairs_the_torn_line(rig: Any) -> None:
    root = short_tmpdir()
    state = root / "state"
    _mount_tmpfs(state, "512k")
    try:
        r = rig({"preapproved": ["Calculator"]}, root=root)
        sid = json.loads(r.ctl("--json", "observe", "Calculator").stdout)["state_id"]
        filler = _fill(state)
        outcomes = []
        for _ in range(25):
            done = r.ctl("--json", "press", "--app", "Calculator", "--state", sid, "1")
            reply = json.loads(done.stdout)
            if "error" in reply:
                outcomes.append(reply["error"]["code"])
                if reply["error"]["code"] == "audit_unavailable":
                    data = reply["error"]["data"]
                    assert data["delivery"] == "refused", data
                    assert data["path"].endswith("audit.jsonl") and data["cause"], data
                    assert "audit log" in reply["error"]["message"]
            else:
                outcomes.append("dispatched")
                sid = reply["state_id"] or json.loads(
                    r.ctl("--json", "observe", "Calculator").stdout
                ).get("state_id", sid)
            if "error" in reply:
                again = r.ctl("--json", "observe", "Calculator")
                got = json.loads(again.stdout)
                sid = got.get("state_id", sid)
        assert "audit_unavailable" in outcomes, outcomes
        # every key the backend pressed has its durable start record
        starts = [json.loads(x) for x in r.audit_lines() if x.startswith("{") and '"start"' in x]
        pressed = r.received("press_key")
        recorded = sum(1 for s in starts if s.get("tool") == "press_key")
        assert recorded >= pressed, (recorded, pressed)
        filler.unlink()  # space returns
        sid = json.loads(r.ctl("--json", "observe", "Calculator").stdout)["state_id"]
        done = r.ctl("--json", "press", "--app", "Calculator", "--state", sid, "2")
        assert done.returncode == 0, done.stdout + done.stderr
        lines = r.audit_lines()
        # a record a full disk cut short stays as it is, but ended: nothing is glued to it
        assert all(line.count('{"time"') == 1 for line in lines), lines
        torn = [line for line in lines if not _parses(line)]
        assert len(torn) <= 2, torn
        assert [json.loads(x)["phase"] for x in lines[-2:]] == ["start", "end"]
        view = json.loads(r.ctl("--json", "audit").stdout)
        assert view["unreadable_lines"] == len(torn)
    finally:
        for made in rig.made:
            made.close()  # the daemon holds files on the tmpfs
        subprocess.run(["umount", "-l", str(state)], check=False)
