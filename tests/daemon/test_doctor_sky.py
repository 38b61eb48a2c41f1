"""`deskhandctl doctor --backend sky` against fake Sky runtimes, through a real daemon.

The fake ``codex`` and fake ``SkyComputerUseClient`` (``tests/fakes/sky``) are real processes
started by the daemon's own launcher code: the recipe order and fallback, the posix_spawn
path through ctypes (on Linux without the macOS-only disclaim attribute), the handshake and the
read-only ``list_apps`` probe. Each test plays one way the real runtime fails and checks the
diagnosis and the fix that doctor prints, in JSON and for a person.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest import skyfake
from dhtest.daemon import (
    DaemonProc,
    daemon_env,
    spawn_daemon,
    spawn_tracked,
    tracked_root,
)

from deskhand_d.backends import skylaunch


@pytest.fixture
def root() -> Iterator[Path]:
    with tracked_root() as path:
        yield path


def _start(root: Path, fake: skyfake.SkyFake | None, **extra: str) -> DaemonProc:
    # The daemon itself serves the simulator: `--backend sky` checks Sky with a throwaway
    # process, the way a person checks Sky before switching to it.
    env = {"DESKHAND_BACKEND": "sim", **(fake.env if fake else {}), **extra}
    return spawn_tracked(root, env)


def _ctl(d: DaemonProc, *args: str) -> list[str]:
    return [sys.executable, "-m", "deskhandctl", "--socket", str(d.socket), "--no-autostart", *args]


def _doctor(d: DaemonProc, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        _ctl(d, "doctor", "--backend", "sky", *args),
        capture_output=True,
        text=True,
        timeout=90,
        env=daemon_env(d.root),
    )


def _both(d: DaemonProc) -> tuple[int, dict[str, object], str]:
    """(exit status, the JSON result, the human text) of two doctor runs."""
    machine = _doctor(d, "--json")
    human = _doctor(d)
    assert machine.returncode == human.returncode, machine.stderr + human.stderr
    assert human.stdout, human.stderr
    return machine.returncode, json.loads(machine.stdout), human.stdout


def _codes(result: dict[str, object]) -> list[str]:
    findings = result["findings"]
    assert isinstance(findings, list)
    return [f["code"] for f in findings]


def test_the_predecessors_recipe_goes_first_and_list_apps_proves_the_path(root: Path) -> None:
    """A codex that needs -P: the first recipe is the predecessor's command line (its options
    spelt long, as this codex's help lists them), run from ~/.codex/computer-use; the
    handshake and a read-only list_apps pass (audited as doctor's), and nothing else is
    sent."""
    fake = skyfake.install(root, codex_mode="needs_p")
    d = _start(root, fake)
    code, result, human = _both(d)
    assert code == 0, human
    assert result["handshake_ok"] is True and result["findings"] == []
    assert result["recipe"] == "permissions_profile"
    assert result["attempts"] == [{"recipe": "permissions_profile", "outcome": "ok", "detail": ""}]
    assert result["probe"] == {
        "tool": "list_apps",
        "status": "ok",
        "detail": "list_apps answered (3 lines; apps not shown): tool calls reach Sky",
    }
    assert "not disclaimed" in str(result["responsibility"])  # no such attribute off macOS
    first = fake.codex_calls()[0]
    assert first["argv"] == [
        str(fake.codex),
        "sandbox",
        "--permissions-profile",
        ":danger-full-access",
        "--allow-unix-socket",
        str(fake.ipc),
        "--",
        str(fake.client),
        "mcp",
    ]
    assert first["cwd"] == str(fake.cwd)
    sent = [json.loads(line) for line in fake.record.read_text().splitlines()]
    calls = [m["params"]["name"] for m in sent if m.get("method") == "tools/call"]
    assert calls == ["list_apps", "list_apps"]  # one per doctor run, nothing else
    assert "recipe:     permissions_profile" in human
    assert "action:     ok: list_apps answered" in human
    assert "Calculator" not in human  # the apps themselves are not shown
    audit = "".join(
        p.read_text() for p in (root / "state" / "deskhand" / "audit").glob("audit.jsonl*")
    )
    assert audit.count('"tool":"list_apps"') >= 2 and "doctor (deskhandctl" in audit
    assert '"event": "backend.recipe"' in d.log_text()
    assert d.stop() == 0


def test_fallback_on_recognisable_refusals_and_memory(root: Path) -> None:
    """An older codex that knows no -P (usage error) and runs -c read-only (the client is
    aborted, exit 134), and whose help cannot be read (so every recipe is tried): both
    refusals are recognised, the third recipe works, is remembered and goes first next time;
    each refusal is logged."""
    fake = skyfake.install(root, codex_mode="ignores_c")
    d = _start(root, fake, FAKE_CODEX_HELP="fails")
    first = _doctor(d, "--json")
    assert first.returncode == 0, first.stdout + first.stderr
    result = json.loads(first.stdout)
    assert [(a["recipe"], a["outcome"]) for a in result["attempts"]] == [
        ("permissions_profile", "refused"),
        ("config_override", "refused"),
        ("sandbox_state", "ok"),
    ]
    assert "did not accept this command line (exit 2)" in result["attempts"][0]["detail"]
    assert "sandbox stopped the client (exit 134)" in result["attempts"][1]["detail"]
    assert result["recipe"] == "sandbox_state" and result["recipe_choice"] == "default"
    assert result["probe"]["status"] == "ok"
    memory = root / "state" / "deskhand" / skylaunch.MEMORY_NAME
    assert json.loads(memory.read_text()) == {"codex": str(fake.codex), "recipe": "sandbox_state"}
    log = d.log_text()
    assert log.count('"event": "backend.recipe_refused"') == 2
    again = _doctor(d)
    assert again.returncode == 0, again.stdout
    assert "recipe:     sandbox_state (the one that last worked here, first)" in again.stdout
    assert "  tried" not in again.stdout  # one try, nothing refused
    state = fake.codex_calls()[-1]["argv"]
    assert state[2] == "--sandbox-state-json"
    assert json.loads(state[3])["sandboxCwd"] == fake.cwd.as_uri()
    assert d.stop() == 0


def test_a_pinned_recipe_is_not_second_guessed(root: Path) -> None:
    """backend.sky_recipe pins config_override; this codex runs -c read-only: no other recipe
    is tried, and doctor names the sandbox's abort and the setting to change."""
    fake = skyfake.install(root, codex_mode="needs_p")
    d = _start(root, fake, DESKHAND_SKY_RECIPE="config_override")
    code, result, human = _both(d)
    assert code == 1
    assert result["handshake_ok"] is False and result["exit_status"] == 134
    assert [a["recipe"] for a in result["attempts"]] == ["config_override"]
    assert result["recipe_choice"] == "pinned"
    assert _codes(result) == ["sandbox_abort"]
    assert result["probe"]["status"] == "not_checked"
    assert "backend.sky_recipe pins config_override: set it to auto" in human
    assert all("-P" not in call["argv"] for call in fake.codex_calls())
    assert not (root / "state" / "deskhand" / skylaunch.MEMORY_NAME).exists()
    assert d.stop() == 0


def test_a_pinned_recipe_codex_does_not_know(root: Path) -> None:
    """Pinned to the -P recipe, an older codex rejects the command line: recipe_refused."""
    fake = skyfake.install(root, codex_mode="ignores_c")
    d = _start(root, fake, DESKHAND_SKY_RECIPE="permissions_profile")
    code, result, human = _both(d)
    assert code == 1 and _codes(result) == ["recipe_refused"]
    assert "unexpected argument '-P'" in "\n".join(result["stderr_tail"])
    assert "set it to auto so Deskhand tries the others" in human
    assert d.stop() == 0


def test_handshake_passes_then_every_call_is_not_authenticated(root: Path) -> None:
    """The untrusted-parent case: the handshake and tools/list work, list_apps answers -10000.
    Handshake-only doctor would have called this healthy."""
    fake = skyfake.install(root)
    fake.mode("unauthenticated")
    d = _start(root, fake)
    code, result, human = _both(d)
    assert code == 1
    assert result["handshake_ok"] is True and result["schema_differences"] == []
    assert result["probe"]["status"] == "failed"
    assert "-10000" in result["probe"]["detail"]
    assert _codes(result) == ["not_authenticated"]
    assert "action:     FAILED: Sky answered with an error" in human
    assert "codex signed by OpenAI" in human and "jump host line says disclaimed" in human
    assert d.stop() == 0


def test_sigkill_at_start_reads_as_a_launch_constraint(root: Path) -> None:
    """A client killed by SIGKILL before saying anything (no stderr): the exit status is the
    only clue; doctor names the launch constraint and where the crash report is. A SIGKILL
    says nothing about the recipe, so no other recipe is tried."""
    fake = skyfake.install(root)
    fake.mode("sigkill")
    d = _start(root, fake)
    code, result, human = _both(d)
    assert code == 1
    assert result["exit_status"] == 137 and result["stderr_tail"] == []
    assert [a["outcome"] for a in result["attempts"]] == ["failed"]
    assert _codes(result) == ["launch_constraint"]
    assert "killed with SIGKILL before its handshake (exit 137)" in human
    assert "~/Library/Logs/DiagnosticReports" in human and "Launch Constraint Violation" in human
    assert len(fake.codex_calls()) == 2  # one start per doctor run
    assert d.stop() == 0


def test_missing_runtime_names_every_missing_path(root: Path) -> None:
    """No client, no codex, no working directory: nothing is started, and each missing part is
    named with where it was looked for and its fix."""
    fake = skyfake.install(root, client=False, codex=False, cwd=False)
    d = _start(root, fake)
    code, result, human = _both(d)
    assert code == 1 and result["handshake_ok"] is False
    assert result["error"]["code"] == "backend_unavailable"
    missing = result["error"]["data"]["missing"]
    assert [m["what"] for m in missing] == [
        "Sky's client SkyComputerUseClient",
        "a signed codex to start Sky from",
        "Computer Use's working directory",
    ]
    assert _codes(result) == ["runtime_missing"]
    for path in (fake.client, fake.codex, fake.cwd):
        assert str(path) in human, path
    assert "Homebrew's codex is not signed by OpenAI" in human
    assert fake.codex_calls() == []
    assert d.stop() == 0


@pytest.mark.parametrize(
    ("mode", "code", "fix"),
    [
        ("locked", "mac_locked", "unlock it"),
        ("turn_ended", "turn_ended", "deskhandctl shutdown"),
        ("quarantined", "translocated", "never open a copy from Downloads"),
        ("permissions", "permissions_missing", "Privacy & Security → Accessibility"),
    ],
)
def test_sky_errors_after_the_handshake(root: Path, mode: str, code: str, fix: str) -> None:
    """Each error Sky answers list_apps with is named, with its fix."""
    fake = skyfake.install(root)
    fake.mode(mode)
    d = _start(root, fake)
    status, result, human = _both(d)
    assert status == 1 and result["handshake_ok"] is True
    assert result["probe"]["status"] == "failed"
    assert _codes(result) == [code]
    assert fix in human
    assert d.stop() == 0


def test_a_call_that_never_answers(root: Path) -> None:
    """list_apps that hangs (some Macs with an untrusted parent, or an Automation prompt):
    the call's deadline ends it, the process is closed, and doctor says where to look."""
    fake = skyfake.install(root)
    fake.mode("hang")
    d = _start(root, fake, DESKHAND_CALL_TIMEOUT_S="1")
    status, result, human = _both(d)
    assert status == 1
    assert result["probe"] == {
        "tool": "list_apps",
        "status": "failed",
        "detail": "no answer within 1 s (the Sky client was closed)",
    }
    assert _codes(result) == ["call_hung"]
    assert "Privacy & Security → Automation" in human
    assert d.stop() == 0


def test_doctor_on_the_daemons_own_sky_backend(root: Path) -> None:
    """With Sky as the daemon's own backend, plain `doctor` probes it the same way, and the
    running process serves the probe (no second start)."""
    fake = skyfake.install(root)
    d = spawn_daemon(root, extra_env={"DESKHAND_BACKEND": "sky", **fake.env})
    out = subprocess.run(
        _ctl(d, "doctor", "--json"),
        capture_output=True,
        text=True,
        timeout=90,
        env=daemon_env(root),
    )
    assert out.returncode == 0, out.stdout + out.stderr
    result = json.loads(out.stdout)
    assert result["backend"] == "sky" and "checked on request" not in result["notice"]
    assert result["probe"]["status"] == "ok" and result["recipe"] == "permissions_profile"
    assert len(fake.codex_calls()) == 1
    assert d.stop() == 0
