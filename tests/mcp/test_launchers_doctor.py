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

from deskhand_d import config
from deskhand_d.backends import a11ybus, desktop, doctor, launchers, surface
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
    assert sim.argv == (sys.executable, "-m", "deskhand_d.backends.sim")


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
    assert spec.kind == "atspi" and spec.argv == (sys.executable, "-m", "deskhand_d.backends.atspi")
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


def test_sky_found_through_codex_home_with_signed_jump_host(tmp_path: Path) -> None:
    """Sky is started behind codex sandbox from $CODEX_HOME/computer-use."""
    home = tmp_path / "codex"
    client = _exe(home / "computer-use" / launchers._CLIENT_IN_APP)
    codex = _exe(tmp_path / "bin" / "codex")
    env = {"CODEX_HOME": str(home), "DESKHAND_CODEX": str(codex), "TYPESAFE_API_KEY": "k"}
    spec = launchers.resolve(_cfg(DESKHAND_BACKEND="sky"), env)
    assert spec.argv == (
        str(codex),
        "sandbox",
        "-c",
        'sandbox_mode="danger-full-access"',
        "--",
        str(client),
        "mcp",
    )
    assert spec.cwd == str(home / "computer-use")
    assert "TYPESAFE_API_KEY" not in spec.env and spec.env["CODEX_HOME"] == str(home)


def test_auto_on_macos_without_sky_refuses_instead_of_simulating(tmp_path: Path) -> None:
    """auto on macOS without Sky names what is missing and how to use the simulator on
    purpose; it never stands in with it."""
    with pytest.raises(BackendUnavailable) as caught:
        launchers.resolve(
            _cfg(), {"CODEX_HOME": str(tmp_path), "HOME": str(tmp_path)}, platform="darwin"
        )
    assert caught.value.code == "backend_unavailable"
    assert "not found" in caught.value.message and 'backend.kind = "sim"' in caught.value.message


def test_sky_without_signed_codex_is_refused(tmp_path: Path) -> None:
    """A Sky client without a signed codex parent is not started (every call would fail)."""
    client = _exe(tmp_path / "Sky")
    env = {"DESKHAND_SKY_CLIENT": str(client), "DESKHAND_CODEX": str(tmp_path / "missing")}
    with pytest.raises(BackendUnavailable, match="signed codex"):
        launchers.resolve(_cfg(DESKHAND_BACKEND="sky"), env)


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
