"""Start-up hygiene: the common commands load no async stack and no heavy standard modules."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import trio
from dhtest.clidaemon import sim_desk
from dhtest.daemon import DaemonProc, daemon_env
from fake_daemon import WsStart, fake_daemon, standard

__all__ = ["sim_desk"]  # the fixture, used by name

# Run a command in-process, then report every module it loaded (on stderr, after its output).
_PROBE = """
import sys
from deskhandctl.__main__ import main
code = main(sys.argv[1:])
sys.stderr.write("\\nMODULES " + " ".join(sorted(sys.modules)) + "\\n")
sys.exit(code)
"""

# Never on the common path: the daemon's stack, and standard modules that cost milliseconds.
FORBIDDEN = {
    "trio",
    "msgspec",
    "wsproto",
    "trio_websocket",
    "deskhand_d.protocol",
    "subprocess",
    "argparse",
    "typing",
    "dataclasses",
    "inspect",
    "shutil",
    "hashlib",
    "socket",
    "asyncio",
    "email",
    "http",
    "logging",
    "json",  # deskhandctl.wire.jsontext uses the C accelerator _json without the package
    "re",
    "enum",
}


def loaded_modules(*argv: str, env: dict[str, str]) -> tuple[int, set[str]]:
    done = subprocess.run(
        [sys.executable, "-c", _PROBE, *argv], env=env, capture_output=True, text=True, timeout=30
    )
    line = done.stderr.rsplit("MODULES ", 1)[1]
    return done.returncode, set(line.split())


def roots(modules: set[str]) -> set[str]:
    return modules | {name.split(".")[0] for name in modules}


@pytest.mark.slow
@pytest.mark.parametrize("command", ["status", "ping"])
def test_common_commands_stay_light(daemon: DaemonProc, command: str) -> None:
    """status and ping, talking to a real daemon, import none of the forbidden modules."""
    code, modules = loaded_modules(
        "--socket", str(daemon.socket), command, env=daemon_env(daemon.root)
    )
    assert code == 0
    assert "deskhandctl.wire.client" in modules  # the probe really ran the command
    assert roots(modules) & FORBIDDEN == set()
    assert "pathlib" not in modules  # an explicit --socket needs no default path


@pytest.mark.slow
@pytest.mark.parametrize(
    "argv",
    [
        ["observe", "Calculator", "--screenshot", "shot.jpg"],
        ["--json", "observe", "Calculator"],
        ["click", "--app", "Calculator", "--state", "s1", "--index", "3"],
        ["drag", "--app", "Calculator", "--state", "s1", "--from", "1,2", "--to", "3,4"],
    ],
)
async def test_desktop_commands_stay_light(
    ws_server: WsStart, tmp_path: Path, argv: list[str]
) -> None:
    """observe (saving a screenshot) and the actions import none of the forbidden modules either."""
    path = await ws_server(fake_daemon(standard))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKHAND_")}
    argv = [str(tmp_path / a) if a == "shot.jpg" else a for a in argv]
    with trio.fail_after(30):
        code, modules = await trio.to_thread.run_sync(
            lambda: loaded_modules("--socket", path, *argv, env=env)
        )
    assert code == 0
    assert "deskhandctl.cli.commands" in modules
    assert roots(modules) & FORBIDDEN == set()
    assert "argparse" not in modules and "pathlib" not in modules


@pytest.mark.slow
def test_an_action_saving_its_screenshot_stays_light(sim_desk: Any, tmp_path: Path) -> None:
    """A click with --screenshot against a real daemon on the simulator (its reply carries a
    picture): the file is written without any of the forbidden modules or pathlib."""
    d = sim_desk()
    state = d.observe("Calculator")
    shot = tmp_path / "after.jpg"
    code, modules = loaded_modules(
        *d.argv("click", "--app", "Calculator", "--state", state, "--index", "9"),
        "--screenshot",
        str(shot),
        env=d.env,
    )
    assert code == 0 and shot.stat().st_size > 0
    assert "deskhandctl.cli.commands" in modules
    assert roots(modules) & FORBIDDEN == set()
    assert "argparse" not in modules and "pathlib" not in modules


@pytest.mark.slow
def test_default_socket_costs_only_deskhand_d_paths(daemon: DaemonProc) -> None:
    """Without --socket, deskhand_d.paths is the only addition; still no async stack."""
    code, modules = loaded_modules("status", env=daemon_env(daemon.root))
    assert code == 0
    assert "deskhand_d.paths" in modules
    assert roots(modules) & FORBIDDEN == set()


@pytest.mark.slow
def test_version_loads_no_connection_code(daemon: DaemonProc) -> None:
    """--version is answered before any connection or JSON module is imported."""
    code, modules = loaded_modules("--version", env=daemon_env(daemon.root))
    assert code == 0
    assert not {"json", "_socket", "deskhandctl.wire.connect", "re"} & modules
