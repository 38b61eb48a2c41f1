"""The real gnome-calculator (GTK 4) through the whole product: the daemon with the AT-SPI
backend, consent for Calculator as the Linux platform identifies it, the ``deskhandctl``
command line, and a Jev run decided by the fake Jev over real HTTP.

Each test gets its own private desktop; the backend starts Calculator itself on the first
observation. The person's "always" for Calculator is saved beforehand, as a grants file holds
it after they answered once (keyed to the package that owns /usr/bin/gnome-calculator).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import DaemonProc, short_tmpdir, spawn_daemon
from dhtest.desktop import MARKER, Desktop, desktop_or_skip
from dhtest.jev_rig import JevDesk, pick, run_request

from deskhand_d import ax
from deskhand_d.consent.grants import GrantsFile
from deskhand_d.consent.linux import LinuxPlatform
from deskhand_d.programs.xsession import _KEYFILE

ROOT = Path(__file__).resolve().parents[2]
CTL = [sys.executable, "-m", "deskhandctl"]
KEYS = ("6", "+", "7", "=")


@pytest.fixture
def desk() -> Iterator[Desktop]:
    with desktop_or_skip(require=("gnome-calculator",)) as d:
        yield d


def backend_env(desk: Desktop) -> dict[str, str]:
    """What the daemon needs to reach the private desktop (it keeps its own XDG dirs)."""
    keep = (
        "DISPLAY",
        "DBUS_SESSION_BUS_ADDRESS",
        "GSETTINGS_BACKEND",
        "GDK_BACKEND",
        "GSK_RENDERER",
        MARKER,
    )
    return {"DESKHAND_BACKEND": "atspi", **{k: desk.env[k] for k in keep}}


def grant_calculator(env: dict[str, str]) -> Callable[[Path], None]:
    def grant(config_home: Path) -> None:
        # the app the backend starts reads its settings from the daemon's XDG_CONFIG_HOME
        settings = config_home / "glib-2.0" / "settings"
        settings.mkdir(parents=True, exist_ok=True)
        (settings / "keyfile").write_text(_KEYFILE)
        store = GrantsFile(config_home / "deskhand" / "grants.json")
        store.add(LinuxPlatform(env=env).identify("Calculator"))

    return grant


def key_index(text: str, key: str) -> int:
    for element in ax.parse(text).elements:
        if "button" in element.role and element.label.split(",")[0].strip() == key:
            return element.index
    raise AssertionError(f"no {key!r} button in\n{text}")


def shows(text: str, value: str) -> bool:
    return any(e.role == "text" and e.label.strip() == value for e in ax.parse(text).elements)


def ctl(daemon: DaemonProc, *args: str) -> dict[str, Any]:
    env = {
        "PATH": "/usr/bin:/bin",
        "HOME": str(daemon.root / "home"),
        "DESKHAND_SOCKET": str(daemon.socket),
        "DESKHAND_NO_AUTOSTART": "1",
        "PYTHONPATH": str(ROOT / "clients"),
    }
    out = subprocess.run(
        [*CTL, "--json", *args], capture_output=True, text=True, env=env, timeout=120, cwd=ROOT
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def observe_keypad(daemon: DaemonProc) -> dict[str, Any]:
    """Calculator observed through ``deskhandctl`` once its keypad is there (a freshly
    started app shows it a moment after its window)."""
    seen = ctl(daemon, "observe", "Calculator")
    for _ in range(50):
        if " 6" in seen["text"]:
            break
        time.sleep(0.3)
        seen = ctl(daemon, "observe", "Calculator")
    return seen


def test_deskhandctl_drives_the_real_calculator_to_13(desk: Desktop) -> None:
    root = short_tmpdir()
    env = backend_env(desk)
    grant_calculator(env)(root / "config")
    daemon = spawn_daemon(root, extra_env=env)
    try:
        seen = observe_keypad(daemon)
        state, text = seen["state_id"], seen["text"]
        for key in KEYS:
            done = ctl(
                daemon, "click", "--app", "Calculator", "--state", state,
                "--index", str(key_index(text, key)),
            )  # fmt: skip
            assert done["delivery"] == "dispatched" and done["ok"] is True, done
            seen = ctl(daemon, "observe", "Calculator")
            state, text = seen["state_id"], seen["text"]
        for _ in range(25):
            if shows(text, "13"):
                break
            time.sleep(0.2)
            text = ctl(daemon, "observe", "Calculator")["text"]
        assert shows(text, "13"), text
        audit = "\n".join(p.read_text() for p in (root / "state").rglob("*.jsonl"))
        assert audit.count('"tool":"click"') + audit.count('"tool": "click"') >= 4
    finally:
        daemon.stop()


def test_a_jev_run_on_the_real_calculator(desk: Desktop) -> None:
    """The fake Jev picks 6, +, 7, = by their labels; the run ends verified on the tree."""
    env = backend_env(desk)
    script = [pick(f"button: {key}") for key in KEYS] + [pick("button: =")] * 2
    jev = JevDesk(script, None, "", extra_env=env, grant=grant_calculator(env))
    try:
        c = jev.client()
        reply, events = run_request(
            c,
            1,
            app="Calculator",
            goal="Calculate 6 + 7",
            max_steps=6,
            verify={"role": "text", "label_equals": "13"},
        )
        result = reply["result"]
        assert (result["status"], result["verified"]) == ("done", True), result
        assert 4 <= result["steps"] <= 6 and result["outcome_unknown"] is False
        decided = [e for e in events if e["kind"] == "progress" and e["phase"] == "decided"]
        assert len(decided) == result["steps"]
        first = jev.jev_requests()[0]["body"]["questions"]["target"]["criteria"]
        assert any(text.endswith("button: 6") or "button: 6" in text for text in first.values())
    finally:
        jev.close()


def _doctor(daemon: DaemonProc) -> dict[str, Any]:
    out = subprocess.run(
        [*CTL, "--socket", str(daemon.socket), "--no-autostart", "--json", "doctor"],
        capture_output=True,
        text=True,
        timeout=90,
        env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "clients")},
        cwd=ROOT,
    )
    result: dict[str, Any] = json.loads(out.stdout)
    return result


def test_auto_picks_atspi_with_a_desktop_and_the_simulator_without(desk: Desktop) -> None:
    """``backend = auto`` on Linux: with the private desktop's buses the AT-SPI server (doctor
    says so and why, and its handshake offers Sky's ten tools); with no session bus at all the
    simulator, and doctor names the missing bus."""
    env = {k: v for k, v in backend_env(desk).items() if k != "DESKHAND_BACKEND"}
    with_desk = spawn_daemon(short_tmpdir(), extra_env=env)
    try:
        found = _doctor(with_desk)
    finally:
        with_desk.stop()
    assert found["backend"] == "auto -> atspi" and found["handshake_ok"] is True, found
    assert found["notice"].startswith("using AT-SPI:") and len(found["tools"]) == 10
    assert found["schema_differences"] == []
    bare = spawn_daemon(short_tmpdir(), extra_env={"DBUS_SESSION_BUS_ADDRESS": ""})
    try:
        missing = _doctor(bare)
    finally:
        bare.stop()
    assert missing["backend"] == "auto -> sim", missing
    assert "session bus" in missing["notice"], missing["notice"]


def test_the_reply_and_the_audit_say_what_reading_back_showed(desk: Desktop) -> None:
    """set-value and type on Calculator's display through the daemon: the reply carries the
    effect read back (and the CLI prints it on its own line), and so does the audit log."""
    root = short_tmpdir()
    env = backend_env(desk)
    grant_calculator(env)(root / "config")
    daemon = spawn_daemon(root, extra_env=env)
    try:
        seen = ctl(daemon, "observe", "Calculator")
        entry = next(e for e in ax.parse(seen["text"]).elements if e.role == "text entry area")
        done = ctl(
            daemon, "set-value", "--app", "Calculator", "--state", seen["state_id"],
            "--index", str(entry.index), "12+30",
        )  # fmt: skip
        assert (done["delivery"], done["effect"], done["effect_of"]) == (
            "dispatched",
            "changed",
            "value",
        ), done
        seen = ctl(daemon, "observe", "Calculator")
        human = subprocess.run(
            [*CTL, "type", "--app", "Calculator", "--state", seen["state_id"], "*2"],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
            env={
                "PATH": "/usr/bin:/bin", "HOME": str(daemon.root / "home"),
                "DESKHAND_SOCKET": str(daemon.socket), "DESKHAND_NO_AUTOSTART": "1",
                "PYTHONPATH": str(ROOT / "clients"),
            },
        )  # fmt: skip
        assert human.returncode == 0, human.stdout + human.stderr
        assert "\neffect: changed (text): " in human.stdout, human.stdout[-800:]
        assert human.stdout.count("\ndelivery: ") == 1
        audit = [
            json.loads(line)
            for p in (root / "state").rglob("audit.jsonl")
            for line in p.read_text().splitlines()
        ]
        ends = [(a["tool"], a["effect"]) for a in audit if a.get("phase") == "end"]
        assert ("set_value", "changed") in ends and ("type_text", "changed") in ends, ends
    finally:
        daemon.stop()


def test_keys_that_cannot_be_sent_are_refused_not_dispatched(desk: Desktop) -> None:
    """The daemon has no X display (Calculator runs on the desktop, readable over the bus): a
    key press is refused as input_unavailable, never "dispatched", and the audit says so."""
    desk.launch("gnome-calculator")
    root = short_tmpdir()
    env = {k: v for k, v in backend_env(desk).items() if k != "DISPLAY"}
    grant_calculator(env)(root / "config")
    daemon = spawn_daemon(root, extra_env=env)
    try:
        seen = observe_keypad(daemon)
        out = subprocess.run(
            [*CTL, "--socket", str(daemon.socket), "--no-autostart", "--json", "press",
             "--app", "Calculator", "--state", seen["state_id"], "Return"],
            capture_output=True, text=True, timeout=120, cwd=ROOT,
            env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(ROOT / "clients")},
        )  # fmt: skip
        assert out.returncode != 0, out.stdout
        error = json.loads(out.stdout)["error"]
        assert error["code"] == "input_unavailable", error
        assert error["data"]["delivery"] == "refused", error
        assert "nothing was sent" in error["message"], error["message"]
        audit = [
            json.loads(line)
            for path in (root / "state").rglob("*.jsonl")
            for line in path.read_text().splitlines()
            if line.strip()
        ]
        ends = [e for e in audit if e.get("tool") == "press_key" or e.get("error_code")]
        assert any(e.get("delivery") == "refused" for e in ends), audit
        assert not any(e.get("delivery") == "dispatched" for e in ends), audit
    finally:
        daemon.stop()
