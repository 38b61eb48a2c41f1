"""More native-mode rules through the real daemon and simulator."""

from __future__ import annotations

import json
import os
import stat
import threading
import time
from typing import Any

from dhtest.desk import wait_status


def test_user_changed_app_puts_the_session_in_recovery(desk_factory: Any) -> None:
    """After "The user changed ..." every op is refused until a fresh observation of that app."""
    desk = desk_factory(
        {
            "preapproved": ["Calculator"],
            "inject": [{"tool": "press_key", "error": "userChangedApp"}],
        }
    )
    c = desk.client("r")
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    r = c.call("press_key", app="Calculator", state_id=sid, key="1")
    assert r["error"]["code"] == "state_changed" and r["error"]["data"]["delivery"] == "dispatched"
    assert c.call("list_apps")["error"]["code"] == "recovery_pending"
    before = len(desk.calls())
    assert (
        c.call("press_key", app="Calculator", state_id=sid, key="1")["error"]["code"]
        == "recovery_pending"
    )
    assert len(desk.calls()) == before
    assert c.call("get_app_state", app="Calculator")["type"] == "result"
    assert c.call("list_apps")["type"] == "result"


def test_receipt_replies_mint_no_state(desk_factory: Any) -> None:
    """An action answered with a receipt (no full tree) returns no new stateId."""
    desk = desk_factory({"preapproved": ["Calculator"], "receipts": True})
    c = desk.client()
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    r = c.call("press_key", app="Calculator", state_id=sid, key="1")["result"]
    assert r["delivery"] == "dispatched" and r["state_id"] is None


def test_cancel_op_cancels_a_queued_request(desk_factory: Any) -> None:
    """A queued request cancelled by its client never reaches the backend."""
    desk = desk_factory({"preapproved": ["Calculator"], "delay_ms": {"press_key": 1200}})
    a, b = desk.client("a"), desk.client("b")
    sid_a = a.call("get_app_state", app="Calculator")["result"]["state_id"]
    sid_b = b.call("get_app_state", app="Calculator")["result"]["state_id"]
    a.send_obj({"op": "press_key", "id": 80, "app": "Calculator", "state_id": sid_a, "key": "1"})
    wait_status(b, lambda s: "press_key" in s["desktop_holder"])
    b.send_obj({"op": "press_key", "id": 81, "app": "Calculator", "state_id": sid_b, "key": "2"})
    wait_status(b, lambda s: s["queue_depth"] == 1)
    done = b.call("cancel", request_id=81)
    assert done["result"]["kind"] == "done"
    replies = []
    while len(replies) < 1:
        msg = b.recv_obj()
        if msg.get("id") == 81:
            replies.append(msg)
    assert replies[0]["error"]["code"] == "cancelled"
    assert a.recv_obj()["result"]["delivery"] == "dispatched"
    keys = [c["arguments"].get("key") for c in desk.calls() if c["tool"] == "press_key"]
    assert keys == ["1"]


def test_queue_full_is_refused(desk_factory: Any) -> None:
    """With queue_depth 1, a request beyond the waiting one is refused with queue_full."""
    desk = desk_factory(
        {"preapproved": ["Calculator"], "delay_ms": {"get_app_state": 800}},
        config="[native]\nqueue_depth = 1\n",
    )
    clients = [desk.client(f"q{i}") for i in range(3)]
    results: list[dict[str, Any]] = [{} for _ in clients]

    def run(i: int) -> None:
        results[i] = clients[i].call("get_app_state", app="Calculator")

    admin = desk.client("admin")
    threads = [threading.Thread(target=run, args=(i,)) for i in range(3)]
    threads[0].start()
    wait_status(admin, lambda s: "get_app_state" in s["desktop_holder"])  # the first one runs
    threads[1].start()
    wait_status(admin, lambda s: s["queue_depth"] == 1)  # the second one waits
    threads[2].start()
    for t in threads:
        t.join(30)
    codes = sorted(r.get("error", {}).get("code", "ok") for r in results)
    assert codes == ["ok", "ok", "queue_full"]
    refused = next(r["error"] for r in results if "error" in r)
    # how long to wait: about the jobs ahead (one running, one waiting) times a job's time
    assert 50 <= refused["data"]["retry_after_ms"] <= 5000
    assert refused["data"]["delivery"] == "refused"


def test_queue_full_keeps_the_state_id_and_the_cli_waits_its_turn(desk_factory: Any) -> None:
    """An action refused for a full queue has not spent its stateId; deskhandctl waits the
    time the refusal names and tries again, so both clients' presses land."""
    import subprocess
    import sys

    from dhtest.daemon import daemon_env

    desk = desk_factory(
        {"preapproved": ["Calculator"], "delay_ms": {"press_key": 600}},
        config="[native]\nqueue_depth = 1\n",
    )
    env = {**daemon_env(desk.root), "DESKHAND_NO_AUTOSTART": "1"}
    base = [sys.executable, "-m", "deskhandctl", "--socket", str(desk.d.socket)]
    states = []
    for name in ("a", "b", "c"):
        out = subprocess.run([*base, "--session", name, "--json", "observe", "Calculator"],
                             env=env, capture_output=True, text=True, timeout=60)  # fmt: skip
        states.append(json.loads(out.stdout)["state_id"])
    admin = desk.client("admin")
    ready = (
        lambda s: "press_key" in s["desktop_holder"],  # a's press runs
        lambda s: s["queue_depth"] == 1,  # b's waits: the queue is full for c
        lambda s: True,
    )
    procs = []
    for name, sid, until in zip(("a", "b", "c"), states, ready, strict=True):
        procs.append(
            subprocess.Popen(
                [*base, "--session", name, "press", "--app", "Calculator", "--state", sid, "1"],
                env=env,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                text=True,
            )
        )
        wait_status(admin, until)
    for proc in procs:
        out, err = proc.communicate(timeout=60)
        assert proc.returncode == 0, err  # the third one was refused at first, then waited


def test_named_session_survives_reconnect_until_grace_ends(desk_factory: Any) -> None:
    """A named session keeps its state across connections, and ends after the grace period."""
    desk = desk_factory({"preapproved": ["Calculator"]}, config="[native]\nsession_grace_s = 1.0\n")
    watcher = desk.client("watcher")
    c = desk.client("keep")
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    c.close()
    again = desk.client("keep")
    assert again.call("press_key", app="Calculator", state_id=sid, key="1")["type"] == "result"
    sid2 = again.call("get_app_state", app="Calculator")["result"]["state_id"]
    again.close()
    # the grace period ends the session: only the watcher's own session is left
    wait_status(watcher, lambda s: s["sessions"] == 1)
    later = desk.client("keep")
    r = later.call("press_key", app="Calculator", state_id=sid2, key="1")
    assert r["error"]["code"] == "state_unknown"  # a new session: the old state is gone


def test_jev_without_key_falls_back_to_native(desk_factory: Any) -> None:
    """jev without TYPESAFE_API_KEY is native with reason missing_jev_key; switching never calls out."""
    desk = desk_factory({"preapproved": ["Calculator"]}, DESKHAND_MODE="jev")
    c = desk.client("m")
    got = c.call("mode_get")["result"]
    assert {k: got[k] for k in ("kind", "mode", "reason")} == {
        "kind": "mode",
        "mode": "native",
        "reason": "missing_jev_key",
    }
    # The detail names the variable and, for a protocol client, the op that switches.
    assert "TYPESAFE_API_KEY" in got["detail"] and "`mode_set` with mode jev" in got["detail"]
    assert c.call("mode_set", mode="jev")["result"]["reason"] == "missing_jev_key"
    assert desk.calls() == []
    keyed = desk_factory(
        {"preapproved": ["Calculator"]}, DESKHAND_MODE="jev", TYPESAFE_API_KEY="sk-test-0000"
    )
    k = keyed.client("m")
    assert k.call("mode_get")["result"]["mode"] == "jev"
    sid = k.call("get_app_state", app="Calculator")["result"]["state_id"]
    assert (
        k.call("press_key", app="Calculator", state_id=sid, key="1")["error"]["code"]
        == "handoff_required"
    )
    assert k.call("mode_set", mode="native")["result"]["mode"] == "native"


def test_launch_app_and_its_ban(desk_factory: Any) -> None:
    """launch_app on the simulator is a no-op success; after a declined approval it is banned."""
    desk = desk_factory()
    c = desk.client("l", answers=False)
    assert c.call("launch_app", app="Calculator")["result"]["kind"] == "action"
    desk2 = desk_factory()
    q = desk2.client("l2", answers=True)
    q.send_obj({"op": "get_app_state", "id": 90, "app": "Calculator"})
    while True:
        msg = q.recv_obj()
        if msg["type"] == "event" and msg["event"]["kind"] == "question":
            q.send_obj(
                {"op": "answer", "id": 91, "question_id": msg["event"]["id"], "choice": "decline"}
            )
        elif msg.get("id") == 90:
            assert msg["error"]["code"] == "approval_declined"
            break
    assert q.call("launch_app", app="Calculator")["error"]["code"] == "launch_banned"
    assert q.call("turn_begin")["type"] == "result"
    assert q.call("launch_app", app="Calculator")["type"] == "result"


def test_audit_log_records_metadata_only(desk_factory: Any) -> None:
    """Every dispatch is audited (0600 file, 0700 dir) without typed text or tree text."""
    desk = desk_factory({"preapproved": ["Calculator"]})
    c = desk.client("audit")
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    c.call("type_text", app="Calculator", state_id=sid, text="secret-typed-words")
    path = desk.root / "state" / "deskhand" / "audit" / "audit.jsonl"
    deadline = time.monotonic() + 10  # the reply can overtake the end record's write
    while not (path.exists() and len(path.read_text().splitlines()) >= 4):
        assert time.monotonic() < deadline, "the audit log never got four lines"
        time.sleep(0.05)
    text = path.read_text()
    rows = [json.loads(x) for x in text.splitlines()]
    # each dispatch: a start record written before the call, then its outcome
    assert [(r["tool"], r["phase"]) for r in rows] == [
        ("get_app_state", "start"),
        ("get_app_state", "end"),
        ("type_text", "start"),
        ("type_text", "end"),
    ]
    assert rows[2]["dispatch"] == rows[3]["dispatch"] != rows[0]["dispatch"]
    assert rows[2]["delivery"] == "unknown"  # what a start alone means
    assert (
        rows[3]["text_length"] == len("secret-typed-words") and rows[3]["delivery"] == "dispatched"
    )
    assert "secret-typed-words" not in text and "standard window" not in text
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    assert stat.S_IMODE(os.stat(path.parent).st_mode) == 0o700


def test_session_close_ends_it_now(desk_factory: Any) -> None:
    """session_close retires the session's states at once; the connection must reconnect."""
    desk = desk_factory({"preapproved": ["Calculator"]})
    c = desk.client("closing")
    sid = c.call("get_app_state", app="Calculator")["result"]["state_id"]
    assert c.call("session_close")["result"]["kind"] == "done"
    assert c.call("get_app_state", app="Calculator")["error"]["code"] == "bad_request"
    again = desk.client("closing")
    assert (
        again.call("press_key", app="Calculator", state_id=sid, key="1")["error"]["code"]
        == "state_unknown"
    )
