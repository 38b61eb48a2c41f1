"""No configured secret reaches a program Deskhand starts (issue 24 §3).

The daemon runs with ``[secrets] redact_env = ["TYPESAFE_API_KEY", "MY_CUSTOM_SECRET"]`` and
both set in its environment; each kind of program it starts is started for real and its
environment read as the kernel gave it: the backend (``/proc/PID/environ``), the package tool
consent runs to identify an app (every ``execve`` of the daemon's children, through ``strace``,
as the issue saw it: that tool comes from a fixed system path, so no stand-in can take its
place), ``launch_app``'s launcher and ``deskhandctl service``'s service-manager commands
(stand-ins first on ``PATH`` that save ``/proc/$$/environ``). A last test reads the source:
every place in the daemon that starts a process builds its environment with ``child_env``.
"""

from __future__ import annotations

import ast
import os
import shutil
import signal
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from dhtest.daemon import daemon_env, short_tmpdir, wait_connectable
from dhtest.desk import desk_factory as desk_factory  # the fixture
from dhtest.desk import open_client
from dhtest.launcher import FakeLauncher, environ_of

from deskhand_d.consent.linux import SYSTEM_TOOLS_PATH

SECRET_NAME = "MY_CUSTOM_SECRET"
SECRET_VALUE = "custom-secret-4c1d9e"
CONFIG = '[secrets]\nredact_env = ["TYPESAFE_API_KEY", "MY_CUSTOM_SECRET"]\n'
SECRETS = {SECRET_NAME: SECRET_VALUE, "TYPESAFE_API_KEY": "typesafe-key-8f2a61"}
REPO = Path(__file__).resolve().parents[2]

linux_only = pytest.mark.skipif(
    not sys.platform.startswith("linux"), reason="reads /proc and runs Linux's launcher"
)


def assert_no_secret(environ: dict[str, str], who: str) -> None:
    leaked = {k for k, v in environ.items() if k in SECRETS or v in SECRETS.values()}
    assert not leaked, f"{who} got {sorted(leaked)}"
    assert "PATH" in environ, f"{who} got no PATH: the rest must be passed on"


@pytest.fixture
def launcher() -> Iterator[FakeLauncher]:
    fake = FakeLauncher()
    yield fake
    fake.close()


@linux_only
@pytest.mark.slow
def test_the_backend_gets_no_configured_secret(desk_factory: Any) -> None:
    """The backend process the daemon started has neither secret."""
    desk = desk_factory(config=CONFIG, **SECRETS)
    c = desk.client("backend")
    assert c.call("list_apps")["type"] == "result"
    pid = c.call("status")["result"]["backend"]["running_pid"]
    assert_no_secret(environ_of(Path(f"/proc/{pid}/environ")), "the backend")


@linux_only
@pytest.mark.slow
def test_launch_gets_no_configured_secret(desk_factory: Any, launcher: FakeLauncher) -> None:
    """The launcher ``launch_app`` runs has neither secret."""
    desk = desk_factory(config=CONFIG, **launcher.daemon_env(), **SECRETS)
    c = desk.client("launch")
    reply = c.call("launch_app", app="Calculator")
    assert reply["type"] == "result", reply
    assert launcher.launches() == ["calculator"]
    (environ,) = launcher.environs()
    assert_no_secret(environ, "the launcher")


def _strace() -> str:
    found = shutil.which("strace")
    if found is None:
        pytest.fail("strace is not installed (Debian: apt-get install strace; .ci/setup.sh does)")
    check = subprocess.run(
        [found, "-f", "-qq", "-e", "trace=execve", "-o", os.devnull, "true"],
        capture_output=True,
        text=True,
        check=False,
    )
    if check.returncode != 0:
        pytest.skip(f"strace cannot trace here: {check.stderr.strip()[:200]}")
    return found


@linux_only
@pytest.mark.slow
def test_the_consent_probe_gets_no_configured_secret() -> None:
    """The issue's case: observing an app for the first time runs ``dpkg-query -S`` (or
    ``rpm -qf``) to identify it; no process the daemon starts meanwhile has either secret."""
    tools = [t for t in ("dpkg-query", "rpm") if shutil.which(t, path=SYSTEM_TOOLS_PATH)]
    if not tools:
        pytest.skip("neither dpkg-query nor rpm is installed: consent runs no package tool")
    strace = _strace()
    root = short_tmpdir()
    conf = root / "config" / "deskhand"
    conf.mkdir(parents=True, mode=0o700)
    (conf / "config.toml").write_text(CONFIG)
    env = daemon_env(
        root,
        {
            "DESKHAND_BACKEND": "sim",
            "DESKHAND_CONSENT_PLATFORM": "linux",
            "DESKHAND_ALLOWED_APPS": "ls",
            **SECRETS,
        },
    )
    trace = root / "execve.trace"
    sock = root / "run" / "deskhand" / "deskhand.sock"
    with open(root / "daemon.log", "ab") as log:
        proc = subprocess.Popen(
            [strace, "-f", "-qq", "-v", "-s", "65536", "-e", "trace=execve", "-o", str(trace),
             sys.executable, "-m", "deskhand_d"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )  # fmt: skip
    try:
        wait_connectable(sock, timeout=60, proc=proc)
        c = open_client(sock, "probe", answers=False, name="test")
        reply = c.call("get_app_state", app="ls")
        # No one can answer consent's question, so the observation is refused; the package
        # tool has run by then, to find out what `ls` is.
        assert reply["type"] == "error", reply
        daemon_pid = c.call("status")["result"]["pid"]
        c.close()
        os.kill(daemon_pid, signal.SIGTERM)
        assert proc.wait(60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
    execs = [line for line in trace.read_text().splitlines() if " execve(" in line]
    children = [line for line in execs if line.split(" ", 1)[0] != str(daemon_pid)]
    assert any(f"/{tool}" in line for line in children for tool in tools), execs
    for line in children:
        assert f"{SECRET_NAME}=" not in line and SECRET_VALUE not in line, line
        assert "TYPESAFE_API_KEY=" not in line and SECRETS["TYPESAFE_API_KEY"] not in line, line
    # the daemon itself had them: the test would see a leak
    assert any(f"{SECRET_NAME}={SECRET_VALUE}" in line for line in execs[:1]), execs[:1]
    shutil.rmtree(root, ignore_errors=True)


@linux_only
def test_service_manager_calls_get_no_configured_secret() -> None:
    """``deskhandctl service install`` runs ``systemctl --user`` three times (is the manager
    there, reload, enable); none of them has either secret."""
    box = Path(tempfile.mkdtemp(prefix="dh", dir="/tmp"))
    try:
        dirs = {name: box / name for name in ("home", "config", "run", "tmp", "bin", "dumps")}
        for d in dirs.values():
            d.mkdir(mode=0o700)
        (dirs["config"] / "deskhand").mkdir(mode=0o700)
        (dirs["config"] / "deskhand" / "config.toml").write_text(CONFIG)
        systemctl = dirs["bin"] / "systemctl"
        systemctl.write_text(f'#!/bin/sh\n/bin/cat "/proc/$$/environ" > "{dirs["dumps"]}/$$"\n')
        systemctl.chmod(0o755)
        env = {
            **{k: v for k, v in os.environ.items() if not k.startswith("DESKHAND_")},
            "HOME": str(dirs["home"]),
            "XDG_CONFIG_HOME": str(dirs["config"]),
            "XDG_RUNTIME_DIR": str(dirs["run"]),
            "TMPDIR": str(dirs["tmp"]),
            "PATH": f"{dirs['bin']}{os.pathsep}{os.environ.get('PATH', os.defpath)}",
            **SECRETS,
        }
        done = subprocess.run(
            [sys.executable, "-m", "deskhandctl", "service", "install"],
            env=env, capture_output=True, text=True, timeout=60, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        dumps = sorted(dirs["dumps"].iterdir())
        assert len(dumps) == 3, done.stdout
        for dump in dumps:
            assert_no_secret(environ_of(dump), "systemctl")
    finally:
        shutil.rmtree(box, ignore_errors=True)


# ----- the source: one function builds every child's environment --------------------------------

SPAWNERS = {
    ("subprocess", "run"),
    ("subprocess", "Popen"),
    ("subprocess", "call"),
    ("subprocess", "check_call"),
    ("subprocess", "check_output"),
    ("trio", "run_process"),
    ("lowlevel", "open_process"),
}
ELSEWHERE = {
    # The backend's environment: the LaunchSpec's, which backends/launchers.py builds with
    # child_env; spawn.py starts what transport.py hands it.
    "deskhand_d/backends/mcpclient/transport.py",
    "deskhand_d/backends/mcpclient/spawn.py",
    # Run inside the AT-SPI backend, whose whole environment the daemon built with child_env.
    "deskhand_d/programs/atspi/frames.py",
    "deskhand_d/programs/atspi/reaper.py",
    # Run by deskhandctl, not the daemon: the private desktop of `deskhandctl demo` and the
    # tests, and `ps` for `deskhandctl stop` on macOS.
    "deskhand_d/programs/xsession.py",
    "deskhand_d/pidfile.py",
}


def _spawns(tree: ast.AST) -> Iterator[ast.Call]:
    """Every call that starts a process: ``subprocess.run(...)``, ``os.execve(...)`` and the like."""
    for node in ast.walk(tree):
        if not isinstance(node, ast.Call) or not isinstance(node.func, ast.Attribute):
            continue
        func, value = node.func, node.func.value
        owner = value.id if isinstance(value, ast.Name) else getattr(value, "attr", "")
        os_call = owner == "os" and func.attr.startswith(("exec", "spawn", "posix_spawn"))
        if (owner, func.attr) in SPAWNERS or os_call:
            yield node


def test_every_process_the_daemon_starts_gets_its_env_from_child_env() -> None:
    """Each process start in ``deskhand_d`` (outside the places listed above, each with its
    reason) passes ``env=`` built by ``child_env``: none inherits the daemon's environment."""
    found: list[str] = []
    bad: list[str] = []
    for path in sorted((REPO / "deskhand_d").rglob("*.py")):
        rel = path.relative_to(REPO).as_posix()
        if rel in ELSEWHERE:
            continue
        for call in _spawns(ast.parse(path.read_text(), rel)):
            where = f"{rel}:{call.lineno}"
            found.append(where)
            env = next((k.value for k in call.keywords if k.arg == "env"), None)
            uses = env is not None and any(
                isinstance(n, ast.Call)
                and isinstance(n.func, ast.Name)
                and n.func.id == "child_env"
                for n in ast.walk(env)
            )
            if not uses:
                bad.append(where)
    assert not bad, f"processes started without child_env(...) as env=: {bad}"
    assert len(found) >= 3, found  # consent's probe, the launcher, the desktop checks
