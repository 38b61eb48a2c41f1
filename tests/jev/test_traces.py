"""Run traces through the real daemon on the simulator, with the fake Jev over real HTTP:
the documented event order, metadata-only content, redaction that cannot corrupt JSON, the
byte budget and a directory pulled away mid-run (both stop the run before its next dispatch),
and a privacy scan of every file the daemon wrote."""

from __future__ import annotations

import base64
import json
import os
import time
from pathlib import Path
from typing import Any

from dhtest.jev_rig import BUTTON, KEY, JevDesk, pick, run_request, run_traced

ENVELOPE = ["schemaVersion", "runId", "mode", "seq", "ts", "sinceStartMs"]
STEP = [
    "verification",
    "decision_input",
    "jev",
    "jev",
    "decision_output",
    "action_prepared",
    "action_prepared",
    "gate",
    "decision",
    "snapshot",
    "dispatch_start",
    "dispatch_return",
    "snapshot",
    "action",
    "verification",
]


def events(path: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


def test_a_full_trace_has_the_documented_order_and_numbering(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON[k]) for k in ["1", "+", "2", "="]])
    c = desk.client(answers=True)
    reply = run_traced(
        c,
        1,
        app="Calculator",
        goal="Calculate 1 + 2",
        max_steps=6,
        verify={"role": "text", "label_equals": "3"},
    )
    result = reply["result"]
    assert (result["status"], result["steps"], result["trace_incomplete"]) == ("done", 4, False)
    path = result["trace_path"]
    assert Path(path).parent == desk.root / "state" / "deskhand" / "traces"
    assert oct(os.stat(path).st_mode & 0o777) == "0o600"
    assert oct(os.stat(Path(path).parent).st_mode & 0o777) == "0o700"
    lines = events(path)
    names = [e["event"] for e in lines]
    assert names == ["start", "task", "snapshot", *STEP * 4, "outcome", "finish"]
    assert [e["seq"] for e in lines] == list(range(1, len(lines) + 1))
    assert {e["runId"] for e in lines} == {Path(path).stem} and {e["mode"] for e in lines} == {
        "full"
    }
    for e in lines:
        assert list(e)[-6:] == ENVELOPE and next(iter(e)) == "event"
    snaps = [(e["snapshotId"], e["at"]) for e in lines if e["event"] == "snapshot"]
    assert snaps == [(1, "initial")] + [
        (n, at)
        for k in range(1, 5)
        for n, at in ((2 * k, "preflight"), (2 * k + 1, "after_action"))
    ]
    jev = [e["exchange"]["kind"] for e in lines if e["event"] == "jev"]
    assert jev == ["request", "response"] * 4
    start = next(i for i, e in enumerate(lines) if e["event"] == "dispatch_start")
    assert lines[start + 1]["event"] == "dispatch_return"
    # The audit log links each dispatch to the run.
    audit = (desk.root / "state" / "deskhand" / "audit").glob("*.jsonl")
    rows = [json.loads(x) for f in audit for x in f.read_text().splitlines()]
    assert {r["run_id"] for r in rows if r["tool"] == "click"} == {Path(path).stem}


def test_a_dry_run_metadata_trace_is_exactly_start_decision_finish(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["1"])], config='[jev]\ntrace = "metadata"\n')
    reply, _ = run_request(desk.client(), 1, app="Calculator", goal="Enter 1", dry_run=True)
    lines = events(reply["result"]["trace_path"])
    assert [e["event"] for e in lines] == ["start", "decision", "finish"]
    assert lines[1]["index"] == 17 and lines[1]["status"] == "proceed"
    assert "goal" not in json.dumps(lines) and "Description" not in json.dumps(lines)


def test_declining_the_full_trace_writes_nothing_and_reads_nothing(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["1"])])
    c = desk.client(answers=True)
    c.send_obj({"op": "run", "id": 1, "app": "Calculator", "goal": "Enter 1", "full_trace": True})
    while True:
        msg = c.recv_obj()
        if msg["type"] == "event" and msg["event"]["kind"] == "question":
            assert "every accessibility tree" in msg["event"]["text"]
            c.send_obj(
                {"op": "answer", "id": 2, "question_id": msg["event"]["id"], "choice": "decline"}
            )
        elif msg.get("id") == 1:
            break
    assert (msg["result"]["status"], msg["result"]["reason"]) == ("stop", "consent_declined")
    assert msg["result"]["trace_path"] is None
    assert desk.calls() == [] and desk.jev_requests() == []
    assert not (desk.root / "state" / "deskhand" / "traces").exists()
    deaf, _ = run_request(desk.client("deaf"), 3, app="Calculator", goal="Enter 1", full_trace=True)
    assert deaf["result"]["reason"] == "consent_declined"


def test_short_and_key_shaped_secrets_do_not_corrupt_the_trace(jev_factory: Any) -> None:
    config = '[secrets]\nredact_env = ["TYPESAFE_API_KEY", "ONE_LETTER", "KEY_SHAPED"]\n'
    env = {"ONE_LETTER": "a", "KEY_SHAPED": '"seq":'}
    desk: JevDesk = jev_factory([pick(BUTTON["1"])], config=config, env=env)
    reply = run_traced(
        desk.client(answers=True), 1, app="Calculator", goal='Calculate a "seq": 1', max_steps=1
    )
    lines = events(reply["result"]["trace_path"])  # every line still parses
    for e in lines:
        assert list(e)[-6:] == ENVELOPE  # keys intact, though "a" is in "schemaVersion"
    task = next(e for e in lines if e["event"] == "task")
    assert task["goal"] == "C[REDACTED]lcul[REDACTED]te [REDACTED] [REDACTED] 1"
    assert task["appName"] == "C[REDACTED]lcul[REDACTED]tor"
    assert KEY not in Path(reply["result"]["trace_path"]).read_text()


def test_a_tiny_budget_stops_the_run_before_any_dispatch(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["1"])], config="[jev]\ntrace_budget_bytes = 2048\n")
    reply = run_traced(desk.client(answers=True), 1, app="Calculator", goal="Enter 1")
    result = reply["result"]
    assert (result["status"], result["reason"], result["trace_incomplete"]) == (
        "error",
        "trace_incomplete",
        True,
    )
    assert result["trace_path"] and desk.calls("click") == []
    assert len(desk.calls("get_app_state")) == 1 and desk.jev_requests() == []


def test_a_trace_directory_pulled_away_mid_run_stops_further_dispatch(jev_factory: Any) -> None:
    slow = pick(BUTTON["2"])
    slow["delay_s"] = 3
    desk: JevDesk = jev_factory([pick(BUTTON["1"]), slow])
    c = desk.client(answers=True)
    traces = desk.root / "state" / "deskhand" / "traces"
    c.send_obj(
        {
            "op": "run",
            "id": 1,
            "app": "Calculator",
            "goal": "Enter 12",
            "full_trace": True,
            "max_steps": 3,
        }
    )
    reply = None
    deadline = time.monotonic() + 20
    swapped = False
    while reply is None:
        assert time.monotonic() < deadline
        msg = c.recv_obj()
        if msg["type"] == "event" and msg["event"]["kind"] == "question":
            c.send_obj(
                {"op": "answer", "id": 2, "question_id": msg["event"]["id"], "choice": "accept"}
            )
        elif msg["type"] == "event" and msg["event"]["kind"] == "progress" and not swapped:
            if msg["event"]["phase"] == "dispatched":
                while len(desk.jev_requests()) < 2:  # step 2's question is with Jev now
                    time.sleep(0.02)
                traces.rename(traces.with_name("traces.moved"))
                traces.mkdir(mode=0o500)  # an empty directory we cannot write: the file is gone
                swapped = True
        elif msg.get("id") == 1:
            reply = msg
    result = reply["result"]
    assert swapped and result["trace_incomplete"] is True and result["reason"] == "trace_incomplete"
    assert result["steps"] == 1 and len(desk.calls("click")) == 1  # nothing after the failure


def test_privacy_scan_of_everything_the_daemon_wrote(jev_factory: Any) -> None:
    typed = "TYPED-Secret-7319"
    desk: JevDesk = jev_factory([pick(BUTTON["1"])], config='[jev]\ntrace = "metadata"\n')
    c = desk.client()
    shot = c.call("get_app_state", app="Calculator")["result"]["screenshot"]
    assert isinstance(shot, str) and len(shot) > 200
    reply, _ = run_request(c, 1, app="Calculator", goal="Enter 1", max_steps=2, text=typed)
    assert reply["result"]["trace_path"]
    needles = {
        "the API key": KEY.encode(),
        "typed text": typed.encode(),
        "screenshot base64": shot[:120].encode(),
        "screenshot bytes": base64.b64decode(shot)[:64],
    }
    scanned = 0
    for path in desk.root.rglob("*"):
        if path.is_file() and path.name not in ("script.json", "jev.jsonl", "record.jsonl"):
            data = path.read_bytes()
            scanned += 1
            for what, needle in needles.items():
                assert needle not in data, f"{what} found in {path}"
    assert scanned >= 4  # daemon log, audit, trace, grants at least
