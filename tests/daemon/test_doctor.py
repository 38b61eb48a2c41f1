"""`deskhandctl doctor` through a real daemon: handshake only, surface check, known failures."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

from dhtest.daemon import daemon_env, short_tmpdir, spawn_daemon


def _doctor(root: Path, sock: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-m",
            "deskhandctl",
            "--socket",
            str(sock),
            "--no-autostart",
            "doctor",
            *args,
        ],
        capture_output=True,
        text=True,
        timeout=90,
        env=daemon_env(root),
    )


def test_doctor_on_the_simulator_is_healthy_and_calls_no_tool() -> None:
    """The simulator passes: 10 tools, surface as expected, and no tools/call was sent."""
    root = short_tmpdir()
    record = root / "record.jsonl"
    try:
        d = spawn_daemon(
            root, extra_env={"DESKHAND_BACKEND": "sim", "DESKHAND_SIM_RECORD": str(record)}
        )
        out = _doctor(root, d.socket, "--json")
        assert out.returncode == 0, out.stdout + out.stderr
        result = json.loads(out.stdout)
        assert result["handshake_ok"] is True and result["backend"] == "sim"
        assert result["server_name"] == "Computer Use" and len(result["tools"]) == 10
        assert result["schema_differences"] == [] and result["findings"] == []
        human = _doctor(root, d.socket)
        assert human.returncode == 0 and "surface:    matches" in human.stdout
        methods = [json.loads(line).get("method") for line in record.read_text().splitlines()]
        assert "initialize" in methods and "tools/list" in methods and "tools/call" not in methods
        assert d.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_doctor_reports_a_failing_backend_with_remedy() -> None:
    """A backend that dies at start is reported with its stderr and a known-failure remedy."""
    root = short_tmpdir()
    try:
        script = root / "broken.py"
        script.write_text(
            "import sys\nsys.stderr.write('Launch Constraint Violation for SkyComputerUseClient\\n')\nsys.exit(9)\n"
        )
        env = {
            "DESKHAND_BACKEND": "command",
            "DESKHAND_BACKEND_COMMAND": json.dumps([sys.executable, str(script)]),
        }
        d = spawn_daemon(root, extra_env=env)
        out = _doctor(root, d.socket, "--json")
        assert out.returncode == 1
        result = json.loads(out.stdout)
        assert result["handshake_ok"] is False
        assert result["error"]["code"] == "backend_unavailable"
        assert result["exit_status"] == 9
        assert [f["code"] for f in result["findings"]] == ["launch_constraint"]
        assert any("Launch Constraint" in line for line in result["stderr_tail"])
        assert d.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)


def test_doctor_flags_schema_drift() -> None:
    """A backend whose tools differ from Sky's surface is listed tool by tool."""
    root = short_tmpdir()
    try:
        peer = Path(__file__).resolve().parents[1] / "peers" / "scripted_server.py"
        env = {
            "DESKHAND_BACKEND": "command",
            "DESKHAND_BACKEND_COMMAND": json.dumps([sys.executable, str(peer)]),
        }
        d = spawn_daemon(root, extra_env=env)
        out = _doctor(root, d.socket, "--json")
        assert out.returncode == 1
        diffs = json.loads(out.stdout)["schema_differences"]
        assert {x["tool"] for x in diffs} >= {"get_app_state", "click", "probe"}
        assert os.path.exists(d.socket)
        assert d.stop() == 0
    finally:
        shutil.rmtree(root, ignore_errors=True)
