"""Launching an app is an action like any other (issue 24 §4): it waits its turn in the one
queue, it is audited before it happens (a durable ``start`` record, then an ``end`` record
with its delivery), a launch the audit log cannot record never happens (``audit_unavailable``),
and its reply states its delivery.

The queue and the audit records are seen on the simulator (``sim``, where a launch starts
nothing). Whether a launcher ran is seen with the same simulator started as a ``command``
backend, where a launch runs the system's launcher: a stand-in ``gtk-launch``
(:mod:`dhtest.launcher`) that records each run.
"""

from __future__ import annotations

import json
import shutil
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, open_client, save_grants, wait_status
from dhtest.launcher import FakeLauncher
from dhtest.wsclient import SyncClient

ALLOWED = {"DESKHAND_ALLOWED_APPS": ",".join(SIM_APPS)}
linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="the stand-in launcher is Linux's gtk-launch"
)


def audit_records(root: Path, until: Any = None) -> list[dict[str, Any]]:
    """The audit file's records (waiting, when ``until`` is given, for it to hold of them)."""
    path = root / "state" / "deskhand" / "audit" / "audit.jsonl"
    deadline = time.monotonic() + 10
    while True:
        records = [json.loads(x) for x in path.read_text().splitlines()] if path.exists() else []
        if until is None or until(records) or time.monotonic() > deadline:
            return records
        time.sleep(0.01)  # a reply can reach the client before the end record is read back


def launch_records(records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    return [r for r in records if r["tool"] == "launch_app"]


def reply_to(c: SyncClient, request_id: int) -> dict[str, Any]:
    while True:
        msg: dict[str, Any] = c.recv_obj()
        if msg.get("id") == request_id:
            return msg


@pytest.fixture
def launcher() -> Iterator[FakeLauncher]:
    fake = FakeLauncher()
    yield fake
    fake.close()


def test_a_launch_waits_its_turn_behind_a_queued_action(desk_factory: Any) -> None:
    """An observation holds the queue (its backend approval is open); a launch from another
    session waits behind it, unstarted and unaudited, and runs once the observation ends."""
    desk = desk_factory(**ALLOWED)  # the simulated backend asks before it shows an app first
    observer = desk.client("observer", answers=True)
    other = desk.client("other")
    admin = desk.client("admin")
    observer.send_obj({"op": "get_app_state", "id": 90, "app": "Calculator"})
    while (msg := observer.recv_obj())["type"] != "event" or msg["event"]["kind"] != "question":
        pass
    other.send_obj({"op": "launch_app", "id": 91, "app": "TextEdit"})
    held = wait_status(
        admin, lambda s: s["queue_depth"] == 1 and "get_app_state" in s["desktop_holder"], 10
    )
    assert "get_app_state" in held["desktop_holder"]
    # Behind the observation: no start record yet, so it has not begun.
    assert [r["tool"] for r in audit_records(desk.root)] == ["get_app_state"]
    observer.send_obj(
        {"op": "answer", "id": 92, "question_id": msg["event"]["id"], "choice": "accept"}
    )
    assert reply_to(observer, 90)["type"] == "result"
    launched = reply_to(other, 91)
    assert launched["result"]["kind"] == "action", launched
    records = audit_records(desk.root, lambda rs: len(launch_records(rs)) == 2)
    order = [(r["tool"], r["phase"]) for r in records]
    assert order.index(("get_app_state", "start")) < order.index(("launch_app", "start"))
    assert order.index(("launch_app", "start")) < order.index(("launch_app", "end"))


def test_a_launch_is_audited_before_it_happens_and_states_its_delivery(
    desk_factory: Any,
) -> None:
    """The reply is an action's (``delivery: dispatched``); the audit file has the launch's
    durable start record and its end record with the same delivery, paired by dispatch id."""
    desk = desk_factory()
    c = desk.client("launch")
    reply = c.call("launch_app", app="Calculator")["result"]
    assert reply["kind"] == "action" and reply["tool"] == "launch_app", reply
    assert reply["app"] == "Calculator" and reply["delivery"] == "dispatched" and reply["ok"]
    assert reply["state_id"] is None  # observe once it is open
    start, end = launch_records(audit_records(desk.root, lambda rs: len(launch_records(rs)) == 2))
    assert (start["phase"], end["phase"]) == ("start", "end")
    assert start["dispatch"] and start["dispatch"] == end["dispatch"]
    assert start["delivery"] == "unknown" and end["delivery"] == "dispatched"
    assert end["app"] == "Calculator" and end["session"] == "launch" and end["code"] == ""


@linux_only
def test_a_failed_launcher_is_refused_in_the_reply_and_the_audit(
    desk_factory: Any, launcher: FakeLauncher
) -> None:
    """A real launcher: one that succeeds is ``dispatched``, one that exits non-zero is an
    error with ``delivery: refused``; both ran after their start record, and the end records
    say the same deliveries."""
    desk = desk_factory(**launcher.daemon_env(), **ALLOWED)
    c = desk.client("launch")
    assert c.call("launch_app", app="Calculator")["result"]["delivery"] == "dispatched"
    launcher.set_status(1)
    failed = c.call("launch_app", app="Calendar")["error"]
    assert failed["code"] == "backend_error" and failed["data"]["delivery"] == "refused", failed
    assert "exited 1" in failed["message"]
    assert launcher.launches() == ["calculator", "calendar"]
    records = launch_records(audit_records(desk.root, lambda rs: len(launch_records(rs)) == 4))
    ends = [(r["app"], r["delivery"], r["code"]) for r in records if r["phase"] == "end"]
    assert ends == [("Calculator", "dispatched", ""), ("Calendar", "refused", "backend_error")]


@linux_only
def test_a_launch_the_audit_cannot_record_never_happens(launcher: FakeLauncher) -> None:
    """With no audit log to write to (its directory is open to others, so the daemon will not
    use it), a launch is refused with ``audit_unavailable`` and the launcher never runs."""
    root = short_tmpdir()
    try:
        audit_dir = root / "state" / "deskhand" / "audit"
        audit_dir.mkdir(parents=True)
        audit_dir.chmod(0o777)
        save_grants(root / "config", SIM_APPS)
        d = spawn_daemon(root, extra_env=launcher.daemon_env())
        try:
            c = open_client(d.socket, "launch", answers=False, name="test")
            refused = c.call("launch_app", app="Calculator")["error"]
            assert refused["code"] == "audit_unavailable", refused
            assert refused["data"]["delivery"] == "refused"
            assert "audit log" in refused["message"]
            assert launcher.launches() == []
            c.close()
        finally:
            d.stop()
    finally:
        shutil.rmtree(root, ignore_errors=True)
