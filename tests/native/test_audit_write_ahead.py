"""Every dispatch is audited, even across kill -9 of the daemon and a full disk.

* kill -9 at random points of a dispatch (20 rounds): every call the backend received has a
  durable ``start`` record; after a restart each such dispatch reads as ``unknown`` or as its
  recorded outcome (``deskhandctl audit``), never as missing or refused, and ``status`` counts
  the ones the restart found unfinished.
* A full disk under the state directory (a small tmpfs; root only): while the audit cannot be
  written nothing is dispatched (``audit_unavailable``, with the path and the cause); an action
  either has its records or never reached the backend; when space returns, the torn line a
  full disk left is ended before the next record, so every line parses.
* The disk filled just when an observation's ``start`` record fit and its ``end`` did not: the
  reply is the observation, the ``end`` is on the disk while the daemon still runs (from the
  room the audit log holds in reserve), and a restart finds nothing unfinished.
"""

from __future__ import annotations

import json
import os
import random
import signal
import time
from collections.abc import Iterator
from typing import Any

import pytest
from dhtest.clidaemon import CliDaemon, cli_daemons
from dhtest.daemon import short_tmpdir
from dhtest.fulldisk import fill, mount_tmpfs, unmount

pytestmark = pytest.mark.slow


@pytest.fixture
def rig() -> Iterator[Any]:
    with cli_daemons() as make:
        yield lambda scenario, root=None: make(
            scenario, root=root, DESKHAND_ALLOWED_APPS="Calculator"
        )


def audit_view(r: CliDaemon) -> list[dict[str, Any]]:
    """What `deskhandctl audit` makes of the files: one row per dispatch."""
    rows: list[dict[str, Any]] = r.json("audit", "--last", "1000")["dispatches"]
    return rows


def _parses(line: str) -> bool:
    try:
        json.loads(line)
    except ValueError:
        return False
    return True


def test_kill_9_at_random_points_leaves_no_dispatch_unaudited(rig: Any) -> None:
    rng = random.Random(1505)
    r = rig({"preapproved": ["Calculator"], "delay_ms": {"click": 40}})
    unfinished_seen = 0
    for _ in range(20):
        state = r.run("--json", "observe", "Calculator")
        assert state.returncode == 0, state.stderr
        sid = json.loads(state.stdout)["state_id"]
        clicking = r.start("click", "--app", "Calculator", "--state", sid, "--index", "11")
        time.sleep(rng.uniform(0.0, 0.12))
        r.daemon.proc.send_signal(signal.SIGKILL)
        r.daemon.proc.wait(10)
        clicking.communicate(timeout=30)
        r.restart()
        status = r.run("--json", "status")
        assert status.returncode == 0, status.stderr
        unfinished_seen += json.loads(status.stdout)["audit"]["unfinished_at_start"]
        clicks = [d for d in audit_view(r) if d["tool"] == "click"]
        # every click the backend received has its record, and none of them says refused
        assert len(clicks) >= r.received("click"), (clicks, r.received("click"))
        assert all(c["delivery"] in ("dispatched", "unknown") for c in clicks), clicks
    # the random points did land inside dispatches now and then
    assert unfinished_seen >= 1
    for line in r.audit_path.read_text().splitlines():
        json.loads(line)


def test_full_disk_refuses_to_dispatch_unaudited_and_repairs_the_torn_line(rig: Any) -> None:
    root = short_tmpdir()
    state = root / "state"
    mount_tmpfs(state, "512k")
    r = None
    try:
        r = rig({"preapproved": ["Calculator"]}, root=root)
        sid = json.loads(r.run("--json", "observe", "Calculator").stdout)["state_id"]
        filler = fill(state)
        outcomes = []
        for _ in range(25):
            done = r.run("--json", "press", "--app", "Calculator", "--state", sid, "1")
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
                    r.run("--json", "observe", "Calculator").stdout
                ).get("state_id", sid)
            if "error" in reply:
                again = r.run("--json", "observe", "Calculator")
                got = json.loads(again.stdout)
                sid = got.get("state_id", sid)
        assert "audit_unavailable" in outcomes, outcomes
        # every key the backend pressed has its durable start record
        starts = [
            json.loads(x)
            for x in r.audit_path.read_text().splitlines()
            if x.startswith("{") and '"start"' in x
        ]
        pressed = r.received("press_key")
        recorded = sum(1 for s in starts if s.get("tool") == "press_key")
        assert recorded >= pressed, (recorded, pressed)
        filler.unlink()  # space returns
        sid = json.loads(r.run("--json", "observe", "Calculator").stdout)["state_id"]
        done = r.run("--json", "press", "--app", "Calculator", "--state", sid, "2")
        assert done.returncode == 0, done.stdout + done.stderr
        lines = r.audit_path.read_text().splitlines()
        # a record a full disk cut short stays as it is, but ended: nothing is glued to it
        assert all(line.count('{"time"') == 1 for line in lines), lines
        torn = [line for line in lines if not _parses(line)]
        assert len(torn) <= 2, torn
        assert [json.loads(x)["phase"] for x in lines[-2:]] == ["start", "end"]
        view = json.loads(r.run("--json", "audit").stdout)
        assert view["unreadable_lines"] == len(torn)
    finally:
        if r is not None:
            r.close()  # the daemon holds files on the tmpfs
        unmount(state)


def _slack(path: Any) -> int:
    """Bytes left in the last page of ``path`` on a tmpfs (which hands out whole pages)."""
    return int((-path.stat().st_size) % os.sysconf("SC_PAGE_SIZE"))


def test_full_disk_between_start_and_end_still_records_the_end(rig: Any) -> None:
    """The disk fills when the file has room for an observation's start but not its end:
    the reply is the observation, the end is on the disk while the daemon runs, the next
    dispatch waits for room, and a restart finds nothing unfinished."""
    root = short_tmpdir()
    state = root / "state"
    mount_tmpfs(state, "512k")
    r = None
    try:
        r = rig({"preapproved": ["Calculator"]}, root=root)
        # Observe until the file's last page has room for one more start but not its end.
        for _ in range(60):
            r.observe("Calculator")
            lines = r.audit_path.read_bytes().splitlines()
            start = max(len(x) for x in lines if b'"phase":"start"' in x) + 1
            end = max(len(x) for x in lines if b'"phase":"end"' in x) + 1
            if start + 16 <= _slack(r.audit_path) < start + end - 16:
                break
        else:
            pytest.fail("the audit file never had room for a start but not an end")
        filler = fill(state)
        observed = r.json("observe", "Calculator")
        assert observed["state_id"] and observed["app"] == "Calculator"
        records = [json.loads(x) for x in r.audit_path.read_text().splitlines() if _parses(x)]
        starts = {x["dispatch"] for x in records if x["phase"] == "start"}
        ends = {x["dispatch"] for x in records if x["phase"] == "end" and x["dispatch"]}
        assert starts <= ends, "a dispatch has no end though the daemon never stopped"
        assert not any(x["late"] for x in records)  # written when it finished, not after
        assert "audit.reserve_used" in r.daemon.log_text()
        # the reserve's room went to that end: the next dispatch waits until it is back
        refused = json.loads(r.run("--json", "observe", "Calculator").stdout)["error"]
        assert (refused["code"], refused["data"]["delivery"]) == ("audit_unavailable", "refused")
        filler.unlink()
        r.daemon.stop()
        r.restart()
        assert r.json("status")["audit"]["unfinished_at_start"] == 0
        observes = [d for d in audit_view(r) if d["tool"] == "get_app_state"]
        assert observes and all(d["outcome_recorded"] for d in observes), observes
        assert not [d for d in audit_view(r) if d["code"] == "daemon_stopped"]
        r.observe("Calculator")  # room is held again: dispatches go on
    finally:
        if r is not None:
            r.close()
        unmount(state)
