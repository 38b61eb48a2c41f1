"""Which desktop the person is really operating, as ``deskhandctl`` shows it from a real daemon.

The simulated desktop is never mistaken for the real one: its list, observations, action
results, ``status`` and ``doctor`` all say so. ``auto`` uses it only where there is no desktop
session at all; where there is one it cannot operate, every desktop command is refused with
``desktop_unreachable`` and the fix, and no backend is started.
"""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import DaemonProc, daemon_env, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, save_grants

from deskhand_d import ax
from deskhand_d.backends.desktop import SIMULATED_NOTE

# What the daemon must not inherit from the machine running the tests: "" counts as unset.
NO_SESSION = {"DISPLAY": "", "WAYLAND_DISPLAY": "", "DBUS_SESSION_BUS_ADDRESS": ""}


class Ctl:
    def __init__(self, daemon: DaemonProc) -> None:
        self.daemon = daemon

    def run(self, *argv: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "deskhandctl", "--socket", str(self.daemon.socket), *argv],
            env=daemon_env(self.daemon.root),
            capture_output=True,
            text=True,
            timeout=60,
            stdin=subprocess.DEVNULL,
        )

    def json(self, *argv: str, code: int = 0) -> dict[str, Any]:
        done = self.run("--json", *argv)
        assert done.returncode == code, (argv, done.stdout, done.stderr)
        value: dict[str, Any] = json.loads(done.stdout)
        return value


@pytest.fixture
def ctl() -> Iterator[Any]:
    """``ctl(**env)``: a daemon with ``env`` added (and the simulator's apps granted)."""
    started: list[DaemonProc] = []

    def make(**env: str) -> Ctl:
        root = short_tmpdir()
        save_grants(root / "config", SIM_APPS)
        # the simulator's own approval prompt is not what these tests are about
        env = {"DESKHAND_SIM_SCENARIO": json.dumps({"preapproved": ["*"]}), **env}
        started.append(spawn_daemon(root, extra_env=env))
        return Ctl(started[-1])

    yield make
    for d in started:
        if d.proc.poll() is None:
            d.proc.kill()
            d.proc.wait(10)
        shutil.rmtree(d.root, ignore_errors=True)


def _six(text: str) -> int:
    for element in ax.parse(text).elements:
        if "button" in element.role and element.attributes.get("Description") == "6":
            return element.index
    raise AssertionError(f"no 6 button in\n{text}")


@pytest.mark.parametrize(
    "env", [{"DESKHAND_BACKEND": "sim"}, NO_SESSION], ids=["sim", "auto-without-desktop"]
)
def test_the_simulated_desktop_says_so_everywhere(ctl: Any, env: dict[str, str]) -> None:
    """Chosen on purpose or by auto on a machine without a desktop session: list-apps,
    observe, an action, status and doctor all say "simulated desktop", in the human and the
    JSON forms, and the marked trees still parse (the state id and indices work)."""
    c = ctl(**env)
    listed = c.run("list-apps")
    assert listed.returncode == 0, listed.stderr
    first, _, rest = listed.stdout.partition("\n")
    assert first == SIMULATED_NOTE  # above "Finder … [frontmost, running]", not after it
    assert "Finder" in rest
    assert c.json("list-apps")["text"].startswith(SIMULATED_NOTE + "\n")

    seen = c.json("observe", "Calculator")
    assert seen["text"].startswith(SIMULATED_NOTE + "\n")
    info = ax.inspect(seen["text"])
    assert info.complete and info.identity
    done = c.json(
        "click", "--app", "Calculator", "--state", seen["state_id"], "--index",
        str(_six(seen["text"])),
    )  # fmt: skip
    assert done["delivery"] == "dispatched" and done["ok"] is True
    assert done["text"].startswith(SIMULATED_NOTE + "\n")
    human = c.run("observe", "Calculator")
    assert human.returncode == 0 and human.stdout.startswith("[Simulated desktop: ")

    status = c.json("status")
    assert status["backend"]["kind"] == "sim" and status["backend"]["simulated"] is True
    shown = c.run("status").stdout.splitlines()
    line = next(s for s in shown if s.startswith("  backend"))
    assert "sim: SIMULATED desktop: made-up apps, not this computer's" in line
    assert shown.index(line) < next(i for i, s in enumerate(shown) if s.startswith("  clients"))

    doctor = c.run("doctor")
    assert doctor.returncode == 0, doctor.stdout
    assert "desktop:    SIMULATED desktop" in doctor.stdout
    assert c.json("doctor")["simulated"] is True


def test_auto_with_a_desktop_it_cannot_reach_refuses_and_starts_nothing(ctl: Any) -> None:
    """A desktop session (DISPLAY set) without its session bus: the issue's reproduction, where
    the simulator used to answer as if it were the person's desktop."""
    c = ctl(**{**NO_SESSION, "DISPLAY": ":4713"})
    listed = c.run("list-apps")
    assert listed.returncode == 1
    assert "Finder" not in listed.stdout and "Simulated" not in listed.stdout
    assert listed.stderr.startswith("deskhandctl: desktop_unreachable: there is a desktop")
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in listed.stderr
    assert 'backend.kind = "sim"' in listed.stderr
    assert "refused: nothing was sent to the desktop" in listed.stderr
    # observe stops earlier, at consent (no terminal to ask): refused all the same
    observe = c.run("observe", "Calculator")
    assert observe.returncode == 1 and "Simulated" not in observe.stdout
    assert "refused: nothing was sent to the desktop" in observe.stderr
    backend = c.json("status")["backend"]
    assert backend == {
        "kind": "auto",
        "running_pid": None,
        "processes_started": 0,
        "simulated": False,
    }
    doctor = c.json("doctor", code=1)
    assert doctor["error"]["code"] == "desktop_unreachable"
    assert {ch["name"]: ch["status"] for ch in doctor["checks"]} == {
        "display": "failed",
        "xtest": "not_checked",
        "screenshot": "not_checked",
        "accessibility_bus": "failed",
    }
    audit = "".join(p.read_text() for p in Path(c.daemon.root, "state").rglob("*.jsonl"))
    assert '"delivery":"dispatched"' not in audit.replace(" ", "")
