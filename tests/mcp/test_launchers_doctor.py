"""Backend launchers (which process, which environment) and doctor's pure diagnosis."""

from __future__ import annotations

import stat
import sys
from pathlib import Path

import pytest

from deskhand_d import config
from deskhand_d.backends import doctor, launchers, surface
from deskhand_d.errors import BackendUnavailable


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


def test_auto_picks_sim_off_macos_with_a_notice() -> None:
    """auto on Linux (for now) is the simulator, and says why."""
    spec = launchers.resolve(_cfg(), {}, platform="linux")
    assert spec.kind == "sim" and "simulated" in spec.notice


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


def test_auto_on_macos_falls_back_to_sim_when_sky_is_missing(tmp_path: Path) -> None:
    """auto on macOS without Sky uses the simulator and names what was missing."""
    spec = launchers.resolve(
        _cfg(), {"CODEX_HOME": str(tmp_path), "HOME": str(tmp_path)}, platform="darwin"
    )
    assert spec.kind == "sim" and "not found" in spec.notice


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
