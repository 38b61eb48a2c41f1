"""``deskhandctl run``, ``ax parse`` and ``eval`` as separate processes: the real CLI against
the real daemon on the simulator, the fake Jev over real HTTP, and offline parsing."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import daemon_env
from dhtest.jev_rig import BUTTON, KEY, JevDesk, pick

pytestmark = pytest.mark.slow
FIXTURES = Path(__file__).parents[2] / "fixtures"


def ctl(
    env: dict[str, str], *argv: str, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", *argv],
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
        input=stdin,
    )


def desk_env(desk: JevDesk) -> dict[str, str]:
    env = daemon_env(desk.root)
    env["DESKHAND_SOCKET"] = str(desk.daemon.socket)
    env["DESKHAND_SESSION"] = "agent"
    return env


def test_run_json_and_the_live_step_display(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON[k]) for k in ["1", "+", "2", "="]])
    env = desk_env(desk)
    done = ctl(
        env,
        "--json",
        "run",
        "--app",
        "Calculator",
        "Calculate 1 + 2",
        "--max-steps",
        "6",
        "--verify-role",
        "text",
        "--verify-label",
        "3",
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    for key in ("status", "reason", "steps", "verified", "trace_path"):
        assert key in result
    assert (result["status"], result["verified"], result["steps"]) == ("done", True, 4)
    human = ctl(env, "run", "--app", "Calculator", "Enter 7", "--dry-run")
    assert human.returncode == 0, human.stderr
    assert "dry_run: preview_only" in human.stdout
    assert "step 1:" in human.stderr and "-> proceed" in human.stderr


def test_run_handoff_and_native_actions_with_the_token(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["1"], confidence=0.35)])
    env = desk_env(desk)
    done = ctl(env, "--json", "run", "--app", "Calculator", "Enter 1")
    assert done.returncode == 0, done.stderr
    handoff = json.loads(done.stdout)["handoff"]
    assert handoff["app"] == "Calculator" and handoff["remaining_steps"] == 5
    state = json.loads(ctl(env, "--json", "observe", "Calculator").stdout)["state_id"]
    refused = ctl(env, "--json", "click", "--app", "Calculator", "--state", state, "--index", "17")
    assert (
        refused.returncode == 1
        and json.loads(refused.stdout)["error"]["code"] == "handoff_required"
    )
    state = json.loads(ctl(env, "--json", "observe", "Calculator").stdout)["state_id"]
    ok = ctl(
        env,
        "--json",
        "click",
        "--app",
        "Calculator",
        "--state",
        state,
        "--index",
        "17",
        "--handoff",
        handoff["token"],
    )
    assert ok.returncode == 0, ok.stdout + ok.stderr
    assert json.loads(ok.stdout)["delivery"] == "dispatched"


def test_run_refusals_exit_1_with_codes(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["1"])])
    env = desk_env(desk)
    ctl(env, "mode", "native")
    done = ctl(env, "--json", "run", "--app", "Calculator", "Enter 1")
    assert done.returncode == 1
    assert json.loads(done.stdout)["error"]["code"] == "jev_mode_required"
    bad = ctl(env, "run", "--app", "Calculator", "x", "--verify-role", "text")
    assert bad.returncode == 2 and "--verify-label" in bad.stderr


def test_ax_parse_offline() -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("DESKHAND_")}
    env["DESKHAND_SOCKET"] = "/nonexistent/never-used.sock"
    calc = FIXTURES / "ax" / "calculator-wangdada-1.txt"
    done = ctl(env, "--json", "ax", "parse", str(calc), "--goal", "press 7")
    assert done.returncode == 0, done.stderr
    report = json.loads(done.stdout)
    assert report["elements"] and report["candidates"]
    human = ctl(
        env,
        "ax",
        "parse",
        "-",
        "--goal",
        "Enter digit 6",
        stdin=json.loads((FIXTURES / "cases.json").read_text())[1]["ax"],
    )
    assert human.returncode == 0 and "11" in human.stdout
    broken = ctl(env, "ax", "parse", "-", stdin="Updated elements:\n3 button x\n")
    assert broken.returncode == 1 and broken.stderr


def test_eval_refuses_without_live_and_runs_the_cases_with_it(jev_factory: Any) -> None:
    env = {k: v for k, v in __import__("os").environ.items() if not k.startswith("DESKHAND_")}
    refused = ctl(env, "eval")
    assert refused.returncode == 2 and "--live" in refused.stderr
    cases = json.loads((FIXTURES / "cases.json").read_text())
    desk: JevDesk = jev_factory([pick(c["expectedIndex"]) for c in cases])
    env.update({"TYPESAFE_API_KEY": KEY, "DESKHAND_JEV_URL": desk.jev_url})
    done = ctl(env, "eval", "--live")
    assert done.returncode == 0, done.stdout + done.stderr
    assert "3/3 cases passed" in done.stdout
    assert len(desk.jev_requests()) == 3  # straight to the API, not through the daemon


def test_trace_commands_read_a_real_run(jev_factory: Any) -> None:
    desk: JevDesk = jev_factory([pick(BUTTON["7"])], config='[jev]\ntrace = "metadata"\n')
    env = desk_env(desk)
    done = ctl(env, "--json", "run", "--app", "Calculator", "Calculate 1 + 2", "--max-steps", "2")
    path = json.loads(done.stdout)["trace_path"]
    assert path and Path(path).exists()
    listed = ctl(env, "trace", "list")
    assert listed.returncode == 0 and Path(path).name in listed.stdout
    shown = ctl(env, "trace", "show", path)
    assert shown.returncode == 0 and "step 1" in shown.stdout.lower()
    analyzed = ctl(env, "--json", "trace", "analyze", path)
    assert analyzed.returncode == 0, analyzed.stderr
    report = json.loads(analyzed.stdout)
    assert report["complete"] is True and report["unreturned_dispatches"] == []
    missing = ctl(env, "trace", "show", str(desk.root / "nope.jsonl"))
    assert missing.returncode == 1
