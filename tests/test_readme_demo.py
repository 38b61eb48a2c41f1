"""The README's main job really does 6 + 7 = 13: on this Linux machine with the real
gnome-calculator through AT-SPI in a private desktop (X11, and a headless GNOME Wayland
session; also while another desktop runs a Calculator of its own), and with ``--sim`` on the
simulator.

The screenshot the demo saves is read back with OCR (tesseract), so "the screenshot shows 13"
is checked on the pixels, not taken from the tree text.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from dhtest.desktop import require_binaries

from deskhand_d.programs import xsession

ROOT = Path(__file__).resolve().parents[1]


def _env(tmp: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("DESKHAND_", "DISPLAY", "DBUS_", "AT_SPI", "WAYLAND"))
    }
    env["XDG_RUNTIME_DIR"] = str(tmp)
    env["DESKHAND_DEMO_SCREENSHOT"] = str(tmp / "result.png")
    return env


def _private_desktop_processes() -> set[int]:
    """Processes of any private desktop (they carry xsession's marker variable)."""
    return set(_marked())


def _orphans() -> set[int]:
    """Processes of a private desktop that was torn down (its directory, the marker's value,
    is gone): what a desktop that did not end everything it started leaves behind. Desktops
    of other tests running at the same time still have their directories."""
    return {pid for pid, root in _marked().items() if not os.path.isdir(root)}


def _marked() -> dict[int, str]:
    needle = f"{xsession.MARKER}=".encode()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            environ = Path(f"/proc/{entry}/environ").read_bytes().split(b"\0")
        except OSError:
            continue
        for item in environ:
            if item.startswith(needle):
                found[int(entry)] = item[len(needle) :].decode(errors="replace")
    return found


def _demo_profiles() -> set[str]:
    return {p.name for p in Path(tempfile.gettempdir()).glob("deskhand-demo-*") if p.is_dir()}


def test_demo_script_drives_the_real_calculator_to_13() -> None:
    """`bash .ci/demo.sh` with no desktop: a private Xvfb desktop with gnome-calculator, the
    task through the daemon and AT-SPI, a PNG whose pixels read 6+7 = 13, nothing left over."""
    require_binaries("gnome-calculator", "tesseract")
    tmp = Path(tempfile.mkdtemp(prefix="dhdemo", dir="/tmp"))
    before_procs, before_profiles = _private_desktop_processes(), _demo_profiles()
    try:
        out = subprocess.run(
            ["bash", ".ci/demo.sh"],
            cwd=ROOT,
            env=_env(tmp),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=300,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        assert "started a private desktop" in out.stdout
        assert "Calculator shows 13: done." in out.stdout
        for key in ("6", "+", "7", "="):
            assert f"demo: press {key} " in out.stdout
        shot = tmp / "result.png"
        assert f"Screenshot: {shot}" in out.stdout
        data = shot.read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n")
        seen = subprocess.run(
            ["tesseract", str(shot), "-"], capture_output=True, text=True, check=True
        ).stdout
        words = seen.split()
        assert "13" in words, seen
        assert "6+7" in seen.replace(" ", ""), seen
        assert not _orphans() - before_procs  # the demo ended every process it started
        assert _demo_profiles() <= before_profiles
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def test_demo_script_on_a_wayland_session(tmp_path: Path) -> None:
    """`DESKHAND_DEMO_SESSION=wayland bash .ci/demo.sh`: the same task on a private headless
    GNOME Wayland session (no X server at all); its screenshot, a frame of GNOME's screen cast,
    reads 6+7 = 13; nothing is left running."""
    require_binaries("gnome-calculator", "tesseract", "gst-launch-1.0", session="wayland")
    before_procs, before_profiles = _private_desktop_processes(), _demo_profiles()
    out = subprocess.run(
        ["bash", ".ci/demo.sh"],
        cwd=ROOT,
        env={**_env(tmp_path), "DESKHAND_DEMO_SESSION": "wayland"},
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "started a private Wayland desktop" in out.stdout, out.stdout
    assert "Calculator shows 13: done." in out.stdout
    seen = subprocess.run(
        ["tesseract", str(tmp_path / "result.png"), "-"], capture_output=True, text=True, check=True
    ).stdout
    # the display's caret may be read as a bar after the digits ("13|")
    assert re.search(r"(?<![0-9])13(?![0-9])", seen) and "6+7" in seen.replace(" ", ""), seen
    assert not _orphans() - before_procs
    assert _demo_profiles() <= before_profiles


def test_demo_finds_its_own_calculator_while_another_desktop_runs_one(tmp_path: Path) -> None:
    """A gnome-calculator already runs on a second private Xvfb desktop (its own display and
    session bus). The demo's backend must not take it for its own app still starting (it would
    wait for a window that never reaches its accessibility bus): it starts Calculator on the
    demo's desktop, reaches 13, and leaves the other one running untouched."""
    require_binaries("gnome-calculator")
    with xsession.private_desktop(apps=("gnome-calculator",)) as other:
        decoy = other.apps["gnome-calculator"]
        out = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "deskhandctl"), "demo", "--screenshot", "r.png"],
            cwd=tmp_path,
            env=_env(tmp_path),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert out.returncode == 0, out.stdout + out.stderr
        own = re.search(r"started a private desktop on (:\d+)", out.stdout)
        assert own is not None and own.group(1) != other.display, out.stdout
        assert "Calculator shows 13: done." in out.stdout
        assert (tmp_path / "r.png").read_bytes().startswith(b"\x89PNG\r\n\x1a\n")
        assert decoy.poll() is None, "the other desktop's Calculator was disturbed"


@pytest.mark.parametrize("flag", ["--sim"])
def test_demo_on_the_simulator(flag: str, tmp_path: Path) -> None:
    """``deskhandctl demo --sim``: the same task on the simulated desktop (its screenshot is a
    JPEG, so the file name follows), stopped and cleaned up afterwards."""
    before = _demo_profiles()
    out = subprocess.run(
        [str(ROOT / ".venv" / "bin" / "deskhandctl"), "demo", flag],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "using the simulated desktop (--sim)" in out.stdout
    assert "Calculator shows 13: done." in out.stdout
    shot = tmp_path / "deskhand-demo.jpg"
    assert shot.read_bytes().startswith(b"\xff\xd8\xff")
    assert _demo_profiles() <= before
