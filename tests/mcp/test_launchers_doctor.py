"""Backend launchers (which process, which environment) and doctor's pure diagnosis."""

from __future__ import annotations

import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from pathlib import Path

import pytest

from deskhand_d import config, surface
from deskhand_d.backends import a11ybus, desktop, doctor, launchers, skylaunch
from deskhand_d.errors import BackendUnavailable, DesktopUnreachable


def _cfg(**env: str) -> config.BackendConfig:
    return config.parse("", source="t", env=env).backend


def _exe(path: Path) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("#!/bin/sh\n")
    path.chmod(path.stat().st_mode | stat.S_IXUSR)
    return path


def test_env_selects_backend_and_command_argv() -> None:
    """DESKHAND_BACKEND and DESKHAND_BACKEND_COMMAND (a JSON array) drive the choice."""
    env = {"DESKHAND_BACKEND": "command", "DESKHAND_BACKEND_COMMAND": '["python3", "/srv/x.py"]'}
    spec = launchers.resolve(_cfg(**env), env)
    assert spec.kind == "command" and spec.argv == ("python3", "/srv/x.py")
    sim = launchers.resolve(_cfg(DESKHAND_BACKEND="sim"), {})
    assert sim.argv == (sys.executable, "-m", "deskhand_d.programs.sim")


def test_bad_command_env_is_a_config_error() -> None:
    """A command that is not a JSON array is refused, naming the variable."""
    with pytest.raises(config.ConfigError, match="DESKHAND_BACKEND_COMMAND"):
        _cfg(DESKHAND_BACKEND_COMMAND="python3 x.py")
    with pytest.raises(config.ConfigError, match=r"backend\.command"):
        _cfg(DESKHAND_BACKEND_COMMAND='"python3"')
    with pytest.raises(BackendUnavailable, match="no command"):
        launchers.resolve(_cfg(DESKHAND_BACKEND="command"), {})


def test_secrets_never_reach_the_backend() -> None:
    """TYPESAFE_API_KEY, configured secrets and service-manager variables are stripped."""
    env = {
        "PATH": "/bin",
        "TYPESAFE_API_KEY": "sk-1",
        "MY_TOKEN": "t",
        "NOTIFY_SOCKET": "/n",
        "HOME": "/h",
    }
    spec = launchers.resolve(_cfg(DESKHAND_BACKEND="sim"), env, secrets=["MY_TOKEN"])
    assert spec.env == {"PATH": "/bin", "HOME": "/h"}


def _never(env: Mapping[str, str]) -> list[desktop.Check]:
    raise AssertionError("auto probed a desktop it should not have")


def test_auto_without_any_desktop_session_is_the_simulator_with_the_reason() -> None:
    """No DISPLAY, WAYLAND_DISPLAY or session bus (a server, CI): the simulator, and the notice
    says why; nothing is probed."""
    env = {"PATH": "/bin", "HOME": "/h", "XDG_RUNTIME_DIR": "/run/user/1"}
    spec = launchers.resolve(_cfg(), env, platform="linux", checks=_never)
    assert spec.kind == "sim"
    assert spec.notice.startswith("using the simulated desktop: no desktop session here")
    assert "DISPLAY" in spec.notice and "session bus" in spec.notice
    # the same on a platform Deskhand has no real backend for
    assert launchers.resolve(_cfg(), {}, platform="freebsd", checks=_never).kind == "sim"


@pytest.mark.parametrize(
    "env",
    [
        {"DISPLAY": ":0"},  # the reproduction: a desktop whose session bus is not exported
        {"WAYLAND_DISPLAY": "wayland-0"},
        {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/run/user/1/bus"},
    ],
)
def test_auto_with_any_desktop_session_never_falls_back_to_the_simulator(
    env: dict[str, str],
) -> None:
    """Any one sign of a desktop session is enough: auto then checks that desktop and refuses
    when a check fails, with every check in the error's data."""
    seen: list[dict[str, str]] = []

    def failing(e: Mapping[str, str]) -> list[desktop.Check]:
        seen.append(dict(e))
        return [
            desktop.Check("display", "ok", "X display :0 answers."),
            desktop.Check("accessibility_bus", "failed", "no bus here.", "start one."),
        ]

    with pytest.raises(DesktopUnreachable) as caught:
        launchers.resolve(_cfg(), env, platform="linux", checks=failing)
    assert seen == [env]
    err = caught.value
    assert err.code == "desktop_unreachable" and isinstance(err, BackendUnavailable)
    assert "accessibility bus: no bus here. Fix: start one." in err.message
    assert "X display :0 answers" not in err.message  # only what failed is in the message
    assert 'backend.kind = "sim"' in err.message and "deskhandctl doctor" in err.message
    assert [c["name"] for c in err.data["checks"]] == ["display", "accessibility_bus"]
    assert err.data["checks"][1]["status"] == "failed"
    # a platform without a real backend refuses too, rather than pretend
    with pytest.raises(BackendUnavailable, match="no backend for the desktop on this platform"):
        launchers.resolve(_cfg(), env, platform="freebsd", checks=failing)


def test_auto_on_linux_with_a_desktop_is_atspi() -> None:
    """When every check passes, auto starts the AT-SPI server and says what it found."""
    seen: list[dict[str, str]] = []

    def found(env: Mapping[str, str]) -> list[desktop.Check]:
        seen.append(dict(env))
        return [
            desktop.Check("display", "ok", "X display :5 answers."),
            desktop.Check("accessibility_bus", "ok", "both buses answer."),
        ]

    env = {"DBUS_SESSION_BUS_ADDRESS": "unix:path=/x", "TYPESAFE_API_KEY": "sk"}
    spec = launchers.resolve(_cfg(), env, platform="linux", checks=found)
    assert spec.kind == "atspi" and spec.argv == (sys.executable, "-m", "deskhand_d.programs.atspi")
    assert spec.notice == "using AT-SPI: X display :5 answers. both buses answer."
    assert "TYPESAFE_API_KEY" not in spec.env and seen and seen[0] == env
    # an explicit kind is never probed
    assert launchers.resolve(_cfg(DESKHAND_BACKEND="atspi"), {}, checks=_never).kind == "atspi"
    assert launchers.resolve(_cfg(DESKHAND_BACKEND="sim"), env, checks=_never).kind == "sim"


def test_auto_refusal_names_the_fix_for_a_missing_session_bus() -> None:
    """The reproduction, checked for real: DISPLAY set (an X display nobody serves here) and
    DBUS_SESSION_BUS_ADDRESS unset. The message says how to give deskhand-d the session bus."""
    env = {"DISPLAY": ":4711", "PATH": "/usr/bin:/bin"}
    with pytest.raises(DesktopUnreachable) as caught:
        launchers.resolve(_cfg(), env, platform="linux")
    message = caught.value.message
    assert message.startswith("there is a desktop session here (DISPLAY=:4711)")
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in message
    assert "import-environment DBUS_SESSION_BUS_ADDRESS" in message
    assert "cannot connect to X display ':4711'" in message
    statuses = {c["name"]: c["status"] for c in caught.value.data["checks"]}
    assert statuses == {
        "display": "failed",
        "xtest": "not_checked",
        "accessibility_bus": "failed",
    }


def test_probe_names_what_is_missing(tmp_path: Path) -> None:
    """The real probe: no session bus, a session bus that is not there, a bus address file
    that nothing listens on. Each answer is unusable, says which part failed and the fix."""
    none = a11ybus.probe({})
    assert "DBUS_SESSION_BUS_ADDRESS is not set" in none.why
    assert "import-environment DBUS_SESSION_BUS_ADDRESS" in none.fix
    dead = a11ybus.probe({"DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/none"}, 0.5)
    assert not dead.usable and f"session bus at unix:path={tmp_path}/none does not" in dead.why
    assert "DBUS_SESSION_BUS_ADDRESS" in dead.fix
    a11y = a11ybus.probe(
        {
            "DBUS_SESSION_BUS_ADDRESS": f"unix:path={tmp_path}/none",
            "AT_SPI_BUS_ADDRESS": f"unix:path={tmp_path}/a11y",
        },
        0.5,
    )
    assert not a11y.usable and "accessibility bus does not accept" in a11y.why
    assert "at-spi-bus-launcher" in a11y.fix


def _sky_home(tmp_path: Path) -> tuple[dict[str, str], Path, Path]:
    """A complete Sky runtime under ``tmp_path`` (placeholders, never run): env, client, codex."""
    home = tmp_path / "home"
    codex_home = home / ".codex"
    client = _exe(codex_home / "computer-use" / launchers._CLIENT_IN_APP)
    codex = _exe(tmp_path / "bin" / "codex")
    env = {
        "HOME": str(home),
        "CODEX_HOME": str(codex_home),
        "DESKHAND_CODEX": str(codex),
        "XDG_STATE_HOME": str(tmp_path / "state"),
        "TYPESAFE_API_KEY": "k",
    }
    return env, client, codex


def test_sky_found_through_codex_home_with_signed_jump_host(tmp_path: Path) -> None:
    """Sky is started behind codex sandbox from $CODEX_HOME/computer-use, with the
    predecessor's -P recipe first and the other two as fallbacks, as its own responsible
    process where macOS allows it. This placeholder codex says nothing about its options, so
    they are spelt as the predecessor spelt them, with ``--`` before the client."""
    env, client, codex = _sky_home(tmp_path)
    ipc = Path(env["HOME"]) / "Library" / "Group Containers" / skylaunch.SKY_TEAM_CONTAINER
    spec = launchers.resolve(_cfg(DESKHAND_BACKEND="sky"), env)
    assert spec.argv == (
        str(codex),
        "sandbox",
        "-P",
        ":danger-full-access",
        "--allow-unix-socket",
        str(ipc / "IPC"),
        "--",
        str(client),
        "mcp",
    )
    assert spec.cwd == str(Path(env["CODEX_HOME"]) / "computer-use")
    assert (spec.recipe, spec.recipe_choice, spec.disclaim) == (
        "permissions_profile",
        "default",
        True,
    )
    assert [f.recipe for f in spec.fallbacks] == ["config_override", "sandbox_state"]
    assert spec.fallbacks[0].argv == (
        str(codex),
        "sandbox",
        "-c",
        'sandbox_mode="danger-full-access"',
        "--",
        str(client),
        "mcp",
    )
    assert all(f.cwd == spec.cwd and f.disclaim for f in spec.fallbacks)
    assert "TYPESAFE_API_KEY" not in spec.env and spec.env["CODEX_HOME"] == env["CODEX_HOME"]


def test_sky_recipe_order_memory_and_pin(tmp_path: Path) -> None:
    """What worked is remembered per codex and goes first; a pin is the only recipe tried and
    is never written to the memory."""
    env, _, codex = _sky_home(tmp_path)
    spec = launchers.resolve(_cfg(DESKHAND_BACKEND="sky"), env)
    assert spec.remember is not None
    spec.remember("sandbox_state")
    again = launchers.resolve(_cfg(DESKHAND_BACKEND="sky"), env)
    assert again.recipe == "sandbox_state" and again.recipe_choice == "remembered"
    assert [f.recipe for f in again.fallbacks] == ["permissions_profile", "config_override"]
    memory = skylaunch.RecipeMemory(tmp_path / "state" / "deskhand" / skylaunch.MEMORY_NAME)
    assert memory.read(codex) == "sandbox_state" and memory.read(tmp_path / "other") == ""
    pinned = launchers.resolve(
        _cfg(DESKHAND_BACKEND="sky", DESKHAND_SKY_RECIPE="config_override"), env
    )
    assert (pinned.recipe, pinned.recipe_choice, pinned.fallbacks) == (
        "config_override",
        "pinned",
        (),
    )
    assert pinned.remember is not None
    pinned.remember("config_override")
    assert memory.read(codex) == "sandbox_state"
    with pytest.raises(config.ConfigError, match="sky_recipe"):
        _cfg(DESKHAND_SKY_RECIPE="-c")


@pytest.mark.parametrize(
    ("status", "stderr", "refused"),
    [
        (2, ["error: unexpected argument '-P' found", "", "Usage: codex sandbox"], True),
        (134, [], True),  # the sandbox aborted the client, reported like a shell does
        (-6, [], True),
        (137, [], False),  # a SIGKILL is not about the command line
        (-9, [], False),
        (1, ["panicked at something else"], False),
        (0, [], False),
        (None, [], False),  # still running: a hang, not a refusal
    ],
)
def test_what_counts_as_a_refused_recipe(
    status: int | None, stderr: list[str], refused: bool
) -> None:
    """Only a rejected command line or the sandbox's abort moves on to the next recipe."""
    assert bool(skylaunch.refusal(status, stderr)) is refused


def test_exit_statuses_are_explained() -> None:
    """SIGKILL (from the client or as a parent reports it) is a launch constraint with the
    crash-report hint; 134 is the sandbox, whose fix depends on a pin; others say nothing."""
    for status in (-9, 137):
        (found,) = doctor.exit_findings(status)
        assert found.code == "launch_constraint" and "DiagnosticReports" in found.remedy
    (pinned,) = doctor.exit_findings(134, "config_override", "pinned")
    assert pinned.code == "sandbox_abort" and "pins config_override" in pinned.remedy
    (auto,) = doctor.exit_findings(-6, "config_override", "default")
    assert "leave backend.sky_recipe at auto" in auto.remedy
    assert doctor.exit_findings(1) == doctor.exit_findings(None) == []


def test_auto_on_macos_without_sky_refuses_instead_of_simulating(tmp_path: Path) -> None:
    """auto on macOS without Sky names what is missing and how to use the simulator on
    purpose; it never stands in with it."""
    with pytest.raises(BackendUnavailable) as caught:
        launchers.resolve(
            _cfg(), {"CODEX_HOME": str(tmp_path), "HOME": str(tmp_path)}, platform="darwin"
        )
    assert caught.value.code == "backend_unavailable"
    message = caught.value.message
    assert "runtime is incomplete" in message and 'backend.kind = "sim"' in message
    assert len(caught.value.data["missing"]) == 3  # client, codex, working dir


def test_sky_without_signed_codex_is_refused(tmp_path: Path) -> None:
    """A Sky client without a signed codex parent is not started (every call would fail)."""
    env, _, _ = _sky_home(tmp_path)
    env["DESKHAND_CODEX"] = str(tmp_path / "missing")
    with pytest.raises(BackendUnavailable, match="signed codex") as caught:
        launchers.resolve(_cfg(DESKHAND_BACKEND="sky"), env)
    data = caught.value.data
    assert data["reason"] == "runtime_missing"
    assert data["missing"] == [
        {
            "what": "a signed codex to start Sky from",
            "paths": [str(tmp_path / "missing")],
            "fix": data["missing"][0]["fix"],
        }
    ]
    found = doctor.runtime_finding(data)
    assert found is not None and str(tmp_path / "missing") in found.evidence


def test_schema_differences() -> None:
    """Sky's own surface has no differences; drift is reported per tool and argument."""
    tools = [{"name": n, "inputSchema": surface.input_schema(n)} for n in surface.TOOL_ORDER]
    assert doctor.schema_differences(tools) == []
    tools[1]["inputSchema"] = {
        **surface.input_schema("get_app_state"),
        "properties": {"app": {"type": "string"}, "disableDiff": {"type": "boolean"}},
    }
    tools[2]["inputSchema"] = {
        **surface.input_schema("click"),
        "properties": {
            **surface.input_schema("click")["properties"],
            "element_index": {"type": "integer"},
        },
    }
    del tools[5]
    tools.append({"name": "screenshot", "inputSchema": {}})
    problems = {
        (d.tool, d.problem.split(":")[0].split(" is ")[0]) for d in doctor.schema_differences(tools)
    }
    assert ("get_app_state", "argument disableDiff") in problems
    assert ("click", "argument element_index") in problems
    assert ("select_text", "missing") in problems
    assert ("screenshot", "extra") in problems


@pytest.mark.parametrize(
    ("text", "code"),
    [
        (
            "Computer Use server error -10000: Sender process is not authenticated",
            "not_authenticated",
        ),
        (
            "kernel: Launch Constraint Violation (code 4) for SkyComputerUseClient",
            "launch_constraint",
        ),
        (
            "Computer Use permissions are still pending. The user has not finished granting",
            "permissions_pending",
        ),
        ("Computer Use server error -10020: The Mac is locked and automatic unlock", "mac_locked"),
        (
            "Computer Use server error -10021: Computer Use is unavailable because the current "
            "turn ended.",
            "turn_ended",
        ),
        ("Apple event error -1708: Unknown error", "translocated"),
        (
            "Computer Use server error -10009: Computer Use permissions are not granted",
            "permissions_missing",
        ),
        (
            "Computer Use could not start because its runtime app is missing. Try again",
            "runtime_missing",
        ),
    ],
)
def test_known_failures_have_one_remedy_each(text: str, code: str) -> None:
    """Known failure texts are recognised with a remedy line."""
    (found,) = doctor.findings(["unrelated noise", text])
    assert found.code == code and found.remedy and "\n" not in found.remedy
    assert doctor.findings(["all good"]) == []


_BUS_CONFIG = """<!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-Bus Bus Configuration 1.0//EN"
 "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
<busconfig>
  <type>session</type>
  <listen>unix:dir={dir}</listen>
  {services}
  <policy context="default">
    <allow send_destination="*" eavesdrop="true"/>
    <allow eavesdrop="true"/>
    <allow own="*"/>
  </policy>
</busconfig>
"""


@contextmanager
def _private_bus(tmp_path: Path, services: str) -> Iterator[str]:
    """A private session bus (its own dbus-daemon) and its address."""
    tmp_path.mkdir()
    conf = tmp_path / "bus.conf"
    conf.write_text(_BUS_CONFIG.format(dir=tmp_path, services=services))
    proc = subprocess.Popen(
        ["dbus-daemon", f"--config-file={conf}", "--print-address=1", "--nofork"],
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    try:
        assert proc.stdout is not None
        yield proc.stdout.readline().strip()
    finally:
        proc.terminate()
        proc.wait(10)
        if proc.stdout is not None:
            proc.stdout.close()


@pytest.mark.skipif(shutil.which("dbus-daemon") is None, reason="needs dbus-daemon")
def test_probe_against_real_buses(tmp_path: Path) -> None:
    """A bus without the accessibility service is refused by name; with the system's service
    files (at-spi2-core's org.a11y.Bus) the accessibility bus is started on demand and usable."""
    with _private_bus(tmp_path / "bare", "") as address:
        bare = a11ybus.probe({"DBUS_SESSION_BUS_ADDRESS": address}, 2.0)
    assert not bare.usable and "no accessibility bus" in bare.why
    assert "at-spi2-core" in bare.fix and "toolkit-accessibility true" in bare.fix
    if not Path("/usr/share/dbus-1/services/org.a11y.Bus.service").exists():
        return  # at-spi2-core is not installed: the rest needs it
    with _private_bus(tmp_path / "a11y", "<standard_session_servicedirs/>") as address:
        found = a11ybus.probe({"DBUS_SESSION_BUS_ADDRESS": address}, 5.0)
    assert found.usable and not found.fix, found.why
