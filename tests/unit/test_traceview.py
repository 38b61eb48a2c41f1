"""Offline trace reading: the timeline, the first divergence on the three recorded traces and on
edited copies of them, and the ``deskhandctl trace`` commands on real files."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from deskhandctl.cli import tracecmd

from deskhand_d.jev.trace import METADATA_EVENTS
from deskhand_d.paths import state_dir
from deskhand_d.review import tracetimeline, traceview

TRACES = Path(__file__).resolve().parents[2] / "fixtures" / "traces"
EXPECTED = {
    "wrong-choice": (1, "model"),
    "policy-stop": (2, "policy"),
    "no-change": (3, "execution"),
}


def load(name: str) -> list[dict[str, Any]]:
    events, problems = traceview.load_lines((TRACES / f"{name}.jsonl").read_text())
    assert problems == []
    return events


def renumber(events: list[dict[str, Any]], mode: str | None = None) -> list[dict[str, Any]]:
    """The events with a gap-free seq, the first event's runId and mode (or ``mode``)."""
    run, mode = events[0]["runId"], mode or events[0]["mode"]
    return [dict(e, seq=i, runId=run, mode=mode) for i, e in enumerate(events, 1)]


def metadata(name: str) -> list[dict[str, Any]]:
    return renumber([e for e in load(name) if e["event"] in METADATA_EVENTS], "metadata")


def step_of(text: str, step: int) -> str:
    return text.split(f"\nStep {step}\n", 1)[1].split("\nStep ", 1)[0]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_the_recorded_traces_name_their_first_divergence(name: str) -> None:
    a = traceview.analyze(load(name))
    assert a.first_divergence is not None
    assert (a.first_divergence.step, a.first_divergence.kind) == EXPECTED[name]
    assert (a.complete, a.problems, a.unreturned_dispatches) == (True, [], [])
    assert f"step {EXPECTED[name][0]}, {EXPECTED[name][1]}" in a.summary
    decoded = json.loads(traceview.analysis_json(a))
    assert decoded["first_divergence"]["kind"] == EXPECTED[name][1]


def test_the_explanations_name_labels_and_reasons() -> None:
    wrong = traceview.analyze(load("wrong-choice")).first_divergence
    assert wrong is not None and '"Description: 7, ID: Seven"' in wrong.explanation
    assert (
        '"Description: 1, ID: One"' in wrong.explanation and "Calculate 1 + 2" in wrong.explanation
    )
    stop = traceview.analyze(load("policy-stop")).first_divergence
    assert stop is not None and "confirm (model_risk)" in stop.explanation
    assert '"Add"' in stop.explanation
    same = traceview.analyze(load("no-change")).first_divergence
    assert same is not None and "snapshot #7 = #6" in same.explanation
    assert "All Clear" in same.explanation


def test_a_missing_finish_and_a_seq_gap_make_the_trace_incomplete() -> None:
    events = [e for e in load("policy-stop") if e["event"] != "finish" and e["seq"] != 10]
    a = traceview.analyze(events)
    assert not a.complete
    assert any("seq 11 where 10 was expected" in p for p in a.problems)
    assert any("no finish event" in p for p in a.problems)
    assert "trace incomplete (2 problem(s))" in a.summary
    assert "Trace: INCOMPLETE" in tracetimeline.timeline(events)


def test_unparsable_lines_are_problems_and_count_against_completeness() -> None:
    text = (TRACES / "wrong-choice.jsonl").read_text().replace('{"event":"gate"', "{broken", 1)
    events, problems = traceview.load_lines(text)
    assert problems == ["line 11: not JSON"]
    a = traceview.analyze(events, problems)
    assert not a.complete and a.problems[0] == "line 11: not JSON"
    assert any("seq 12 where 11" in p for p in a.problems)
    assert traceview.load_lines('\n[1]\n{"event": 3}\n') == (
        [],
        [
            "line 2: not a trace event (an object with an event name)",
            "line 3: not a trace event (an object with an event name)",
        ],
    )


def test_a_dispatch_without_a_return_is_an_unknown_outcome() -> None:
    events = load("no-change")
    cut = next(i for i, e in enumerate(events) if e["event"] == "dispatch_start")
    result = {"status": "error", "reason": "outcome_unknown", "steps": 0, "outcome_unknown": True}
    tail = [
        {"event": "failure", "step": 0, "phase": "execute", "errorName": "outcome_unknown"},
        {"event": "outcome", "step": 0, "phase": "execute", "result": result},
        {"event": "finish", "status": "error", "reason": "outcome_unknown", "step": 0},
    ]
    events = renumber([*events[: cut + 1], *tail])
    a = traceview.analyze(events)
    assert a.complete and a.unreturned_dispatches == [1]
    assert a.first_divergence is not None
    assert (a.first_divergence.step, a.first_divergence.kind) == (1, "unknown_outcome")
    assert "no dispatch_return" in a.first_divergence.explanation
    text = tracetimeline.timeline(events)
    assert "NO dispatch_return: the outcome is unknown" in step_of(text, 1)
    assert "Failure in execute: outcome_unknown" in text
    assert "dispatch_start and no dispatch_return" in traceview.render_analysis(a)


def test_a_retried_jev_exchange_shows_every_attempt() -> None:
    events = load("policy-stop")
    at = next(i for i, e in enumerate(events) if e["event"] == "jev")
    busy = {"kind": "response", "attempt": 1, "status": 429, "elapsed_ms": 3}
    events[at + 1 : at + 1] = [
        {"event": "jev", "step": 1, "exchange": busy},
        {"event": "jev", "step": 1, "exchange": dict(events[at]["exchange"], attempt=2)},
    ]
    events[at + 3]["exchange"]["attempt"] = 2
    one = step_of(tracetimeline.timeline(renumber(events)), 1)
    assert "jev response attempt 1: HTTP 429 in 3 ms (no answers)\n  jev request attempt 2" in one
    assert "jev response attempt 2: HTTP 200 in 5 ms: target i17 (0.90)" in one


def test_normalisation_that_loses_jev_s_answer_is_named() -> None:
    events = load("wrong-choice")
    out = next(e for e in events if e["event"] == "decision_output")
    out["decision"] = dict(out["decision"], target_index=None)
    out["target"] = None
    d = traceview.analyze(events).first_divergence
    assert d is not None and (d.step, d.kind) == (1, "normalization")
    assert "target i9" in d.explanation


def test_a_goal_element_left_out_of_the_candidates_is_named() -> None:
    events = load("wrong-choice")
    sent = next(e for e in events if e["event"] == "decision_input")
    sent["input"]["candidates"] = [c for c in sent["input"]["candidates"] if c["label"] != "Add"]
    d = traceview.analyze(events).first_divergence
    assert d is not None and (d.step, d.kind) == (1, "candidates")
    assert 'i20 button "Add"' in d.explanation and "snapshot #1" in d.explanation


def test_the_right_choices_show_no_divergence() -> None:
    events = [e for e in load("policy-stop") if e["event"] not in ("outcome", "finish")]
    events = [e for e in events if e.get("step") != 2]
    finish = {
        "event": "finish",
        "status": "max_steps",
        "reason": "step_budget_exhausted",
        "step": 1,
    }
    a = traceview.analyze(renumber([*events, finish]))
    assert a.first_divergence is None and a.complete
    assert "The trace shows no divergence." in a.summary
    assert "divergence: none found" in traceview.render_analysis(a)


def test_a_metadata_trace_renders_and_is_analysed_with_what_it_holds() -> None:
    events = metadata("wrong-choice")
    text = tracetimeline.timeline(events)
    assert "(metadata trace, 8 events)" in text
    assert "decision: click_element on index 9 (confidence 0.90" in step_of(text, 1)
    assert "gate proceed (policy_passed); 25 candidates" in text
    assert "after: changed yes (24 ms)" in step_of(text, 1)
    assert "Ending: max_steps (step_budget_exhausted) after 3 action(s)" in text
    a = traceview.analyze(events)
    assert a.complete and a.first_divergence is None and a.mode == "metadata"
    assert "holds no labels, answers or trees" in a.summary
    stop = traceview.analyze(metadata("policy-stop")).first_divergence
    assert stop is not None and (stop.step, stop.kind) == (2, "policy")
    same = traceview.analyze(metadata("no-change")).first_divergence
    assert same is not None and (same.step, same.kind) == (3, "execution")


def test_the_policy_stop_timeline_shows_the_gate_reason_and_the_step_1_dispatch() -> None:
    text = tracetimeline.timeline(load("policy-stop"))
    one, two = step_of(text, 1), step_of(text, 2)
    assert 'dispatch: click_element {"kind": "click_element", "index": 17} on i17 button ' in one
    assert '"Description: 1, ID: One" (indices of snapshot #2)' in one
    assert "returned: True after 15 ms" in one
    assert 'texts "0" → "1"' in one
    assert "gate: confirm (model_risk)" in two and "dispatch" not in two
    assert "risk 0.60" in two
    assert 'Task: Calculator: "Calculate 1 + 2"; plan: –; max 4 steps; verify: text = "3"' in text
    assert "Ending: confirm (model_risk) after 1 action(s)" in text
    assert text.endswith("Trace: complete")


def test_the_timeline_shows_candidates_jev_and_the_after_state() -> None:
    text = tracetimeline.timeline(load("no-change"))
    first = step_of(text, 1)
    assert "snapshot #1 (42 lines): 25 candidates sent of 25 eligible" in first
    assert "i5 button: Description: Delete" in first and "… 20 more" in first
    assert "jev response attempt 1: HTTP 200 in 6 ms: target i17 (0.90)" in first
    assert 'decision: click_element on i17 button "Description: 1, ID: One"' in first
    assert "verification after_action (snapshot #3): not passed" in first
    three = step_of(text, 3)
    assert "after: changed NO (2 ms)" in three and "texts " not in three
    assert "last recent action:" in three and "All Clear" in three


# --- deskhandctl trace -------------------------------------------------------------------


def args(command: str, path: Path | str | None = None, as_json: bool = False) -> Any:
    return SimpleNamespace(command=command, params={"path": path and str(path)}, json=as_json)


def test_trace_show_prints_the_timeline(capsys: pytest.CaptureFixture[str]) -> None:
    assert tracecmd.run_trace(args("trace show", TRACES / "policy-stop.jsonl")) == 0
    out = capsys.readouterr().out
    assert "Step 2" in out and "gate: confirm (model_risk)" in out
    assert tracecmd.run_trace(args("trace show", TRACES / "policy-stop.jsonl", True)) == 0
    shown = json.loads(capsys.readouterr().out)
    assert shown["events"] == 29 and shown["mode"] == "full" and shown["problems"] == []
    assert "gate: confirm (model_risk)" in [line.strip() for line in shown["timeline"]]


def test_trace_analyze_prints_text_and_json(capsys: pytest.CaptureFixture[str]) -> None:
    assert tracecmd.run_trace(args("trace analyze", TRACES / "wrong-choice.jsonl")) == 0
    out = capsys.readouterr().out
    assert "divergence: step 1, model" in out and "trace:      complete" in out
    assert tracecmd.run_trace(args("trace analyze", TRACES / "no-change.jsonl", True)) == 0
    got = json.loads(capsys.readouterr().out)
    assert got["first_divergence"]["step"] == 3 and got["first_divergence"]["kind"] == "execution"
    assert got["complete"] is True and got["unreturned_dispatches"] == []


def test_trace_analyze_reports_problems_of_a_damaged_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = (TRACES / "policy-stop.jsonl").read_text().splitlines()
    damaged = tmp_path / "damaged.jsonl"
    damaged.write_bytes("\n".join([*lines[:5], "not json", *lines[6:-1]]).encode() + b"\n\xff\n")
    assert tracecmd.run_trace(args("trace analyze", damaged)) == 0
    out = capsys.readouterr().out
    assert "INCOMPLETE" in out and "line 6: not JSON" in out and "line 29: not UTF-8" in out
    assert "no finish event" in out


def test_trace_list_shows_the_traces_newest_first(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    monkeypatch.setenv("HOME", str(tmp_path))
    directory = state_dir(os.environ) / "traces"
    directory.mkdir(parents=True)
    for age, name in enumerate(["no-change", "policy-stop", "wrong-choice"]):
        copy = directory / f"{name}.jsonl"
        shutil.copy(TRACES / f"{name}.jsonl", copy)
        os.utime(copy, (1_700_000_000 - age * 60, 1_700_000_000 - age * 60))
    (directory / "cut.jsonl").write_text((TRACES / "wrong-choice.jsonl").read_text()[:2000])
    os.utime(directory / "cut.jsonl", (1_600_000_000, 1_600_000_000))
    (directory / "link.jsonl").symlink_to(TRACES / "no-change.jsonl")
    (directory / "notes.txt").write_text("not a trace")
    assert tracecmd.run_trace(args("trace list")) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [Path(line.split()[0]).name for line in lines] == [
        "no-change.jsonl",
        "policy-stop.jsonl",
        "wrong-choice.jsonl",
        "cut.jsonl",
    ]
    assert "full  59ae9f40be9a49f7a3897921507b3f0c  50 events" in lines[2]
    assert lines[1].endswith("confirm (model_risk)  complete")
    assert lines[3].endswith("no finish  INCOMPLETE")
    assert tracecmd.run_trace(args("trace list", as_json=True)) == 0
    listed = json.loads(capsys.readouterr().out)
    assert listed["directory"] == str(directory)
    first = listed["traces"][0]
    assert first["status"] == "max_steps" and first["events"] == 50 and first["complete"] is True
    assert [t["complete"] for t in listed["traces"]] == [True, True, True, False]


def test_trace_list_without_a_traces_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    monkeypatch.setenv("HOME", str(tmp_path))
    assert tracecmd.run_trace(args("trace list")) == 0
    assert capsys.readouterr().out.startswith("no traces in ")


def test_a_symlinked_trace_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    link = tmp_path / "link.jsonl"
    link.symlink_to(TRACES / "wrong-choice.jsonl")
    for command in ("trace show", "trace analyze"):
        assert tracecmd.run_trace(args(command, link)) == 1
        captured = capsys.readouterr()
        assert captured.out == "" and "is a symbolic link" in captured.err


def test_unreadable_traces_exit_1(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "garbage.jsonl").write_text("nothing here\n")
    (tmp_path / "empty.jsonl").write_text("")
    os.mkfifo(tmp_path / "fifo")
    cases = {
        "missing.jsonl": "cannot open",
        "garbage.jsonl": "holds no trace events (line 1: not JSON)",
        "empty.jsonl": "holds no trace events",
        "fifo": "is not a regular file",
        "": "cannot open",
    }
    for name, message in cases.items():
        path = tmp_path / name if name else ""
        assert tracecmd.run_trace(args("trace analyze", path)) == 1, name
        assert message in capsys.readouterr().err
    monkeypatch.setattr(tracecmd, "MAX_BYTES", 1000)
    assert tracecmd.run_trace(args("trace show", TRACES / "wrong-choice.jsonl")) == 1
    assert "larger than" in capsys.readouterr().err


ODD_VALUES: list[Any] = [None, [], {}, "x", 7, 0.5, True, {"choice": {}}, [{"index": []}]]


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_odd_values_in_any_field_never_break_the_reading(name: str) -> None:
    """A hand-edited or foreign trace is explained as far as it goes, never a traceback."""
    events = load(name)
    keys = sorted({k for e in events for k in e} - {"event"})
    for key in keys:
        for value in ODD_VALUES:
            odd = [dict(e, **{key: value}) if key in e else e for e in events]
            tracetimeline.timeline(odd)
            traceview.render_analysis(traceview.analyze(odd))
    answers = next(e for e in events if e["event"] == "jev" and "body" in e["exchange"])
    for value in ODD_VALUES:  # inside Jev's answer, the candidates and the task
        for e in events:
            if e["event"] == "jev" and e["exchange"]["kind"] == "response":
                e["exchange"]["body"]["answers"]["target"]["choice"] = value
                e["exchange"]["body"]["answers"]["done"] = value
            if e["event"] == "decision_input":
                e["input"]["candidates"][0] = value
                e["input"]["recentActions"] = value
            if e["event"] == "task":
                e["verification"] = {"specification": value}
        tracetimeline.timeline(events)
        traceview.analyze(events)
    assert answers
