"""Sky starts without looking into another developer's group container, and from the right
working directory wherever Computer Use was installed (issue 25 §1 and §3), through a real
daemon with the fake ``codex`` and fake Sky client.

Since macOS 15 a look into ``~/Library/Group Containers/2DC432GLL2…`` can raise a privacy
prompt naming Python; on Python 3.11 and 3.12 ``Path.is_dir`` then raises. Here that cannot
be played (the tests run as root, where permissions block nothing), so the container is either
absent or a symbolic link to itself that no look can get through, and one test records every
file system call of the daemon and its children with ``strace`` and finds none that names it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest
from dhtest import skyfake
from dhtest.daemon import (
    DaemonProc,
    daemon_env,
    spawn_tracked,
    track,
    tracked_root,
    wait_connectable,
)
from dhtest.desk import open_client

linux_only = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="uses strace")


@pytest.fixture
def root() -> Iterator[Path]:
    with tracked_root() as path:
        yield path


def _start(root: Path, fake: skyfake.SkyFake, backend: str) -> DaemonProc:
    return spawn_tracked(root, {"DESKHAND_BACKEND": backend, **fake.env})


@pytest.mark.slow
def test_a_home_without_the_group_container_starts_sky(root: Path) -> None:
    """No ~/Library/Group Containers at all: doctor passes and the daemon's own Sky backend
    answers list_apps; the IPC folder is still named to codex, as text."""
    fake = skyfake.install(root, container="absent")
    assert not (fake.home / "Library").exists()
    d = _start(root, fake, "sky")
    status, result = skyfake.doctor(d, backend="")
    assert status == 0, result
    assert result["probe"]["status"] == "ok" and result["findings"] == []
    c = open_client(d.socket, "container", answers=False, name="test")
    assert c.call("list_apps")["type"] == "result"
    c.close()
    assert str(fake.ipc) in fake.client_starts()[-1]
    assert not (fake.home / "Library").exists()
    assert d.stop() == 0


@linux_only
@pytest.mark.slow
def test_nothing_looks_into_the_group_container(root: Path) -> None:
    """The container is a symbolic link to itself, so any stat, open or listing of a path in
    it fails. Under strace (every file system call of the daemon and all its children),
    doctor and a real start pass, and no call but the exec of codex (whose command line names
    the folder) touches the container."""
    strace = shutil.which("strace")
    if strace is None:
        pytest.fail("strace is not installed (Debian: apt-get install strace; .ci/setup.sh does)")
    check = subprocess.run(
        [strace, "-f", "-qq", "-e", "trace=%file", "-o", os.devnull, "true"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if check.returncode != 0:
        pytest.skip(f"strace cannot trace here: {check.stderr.strip()[:200]}")
    fake = skyfake.install(root, container="loop")
    trace = root / "file.trace"
    env = daemon_env(root, {"DESKHAND_BACKEND": "sky", **fake.env})
    sock = root / "run" / "deskhand" / "deskhand.sock"
    d = DaemonProc(proc=_traced(strace, trace, env, root), socket=sock, root=root,
                   log_path=root / "daemon.log")  # fmt: skip
    track(root, d)
    wait_connectable(sock, timeout=60, proc=d.proc)
    status, result = skyfake.doctor(d, backend="")
    assert status == 0, result
    assert result["probe"]["status"] == "ok"
    c = open_client(sock, "container", answers=False, name="test")
    assert c.call("list_apps")["type"] == "result"
    daemon_pid = c.call("status")["result"]["pid"]
    c.close()
    os.kill(daemon_pid, signal.SIGTERM)  # strace itself would only detach on SIGTERM
    assert d.proc.wait(60) == 0
    calls = trace.read_text(errors="replace").splitlines()
    assert any("stat" in line.split("(", 1)[0] for line in calls)  # it traced the stats
    assert any(" execve(" in line and str(fake.ipc) in line for line in calls)
    touched = [line for line in calls if "Group Containers" in line and " execve(" not in line]
    assert touched == []


def _traced(strace: str, trace: Path, env: dict[str, str], root: Path) -> subprocess.Popen[bytes]:
    with open(root / "daemon.log", "ab") as log:
        return subprocess.Popen(
            [strace, "-f", "-qq", "-s", "4096", "-e", "trace=%file", "-o", str(trace),
             sys.executable, "-m", "deskhand_d"],
            env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
        )  # fmt: skip


@pytest.mark.slow
def test_a_client_inside_an_app_runs_from_the_folder_holding_computer_use(root: Path) -> None:
    """Computer Use came inside ChatGPT.app and $CODEX_HOME/computer-use was never made: the
    client runs from the folder holding Codex Computer Use.app (never refused for a missing
    working directory)."""
    fake = skyfake.install(root, client_in_app=True)
    assert not (fake.home / ".codex" / "computer-use").exists()
    assert fake.cwd.name == "sky" and (fake.cwd / "Codex Computer Use.app").is_dir()
    d = _start(root, fake, "sim")
    status, result = skyfake.doctor(d)
    assert status == 0, result
    assert result["probe"]["status"] == "ok"
    (start,) = [c for c in fake.codex_calls() if c["argv"][-1:] == ["mcp"]]  # type: ignore[index]
    assert start["cwd"] == str(fake.cwd)
    assert d.stop() == 0


@pytest.mark.slow
def test_a_client_that_cannot_reach_its_service(root: Path) -> None:
    """Sky's own answer is the check (no folder was looked at): list_apps says its runtime
    app is missing, and doctor tells the person to open ChatGPT or Codex and use Computer Use
    there once."""
    fake = skyfake.install(root)
    fake.mode("no_service")
    d = _start(root, fake, "sim")
    status, result = skyfake.doctor(d)
    assert status == 1 and result["handshake_ok"] is True
    assert result["probe"]["status"] == "failed"
    (finding,) = result["findings"]
    assert finding["code"] == "runtime_missing"
    assert "use Computer Use there once" in finding["remedy"]
    assert "open ChatGPT or Codex" in finding["remedy"]
    assert d.stop() == 0
