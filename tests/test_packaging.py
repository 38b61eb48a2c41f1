"""Packaging: the wheel and sdist build, and the wheel works from a fresh venv on its own."""

from __future__ import annotations

import os
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dist(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("dist")
    subprocess.run(
        [
            sys.executable,
            "-m",
            "build",
            "--no-isolation",
            "--wheel",
            "--sdist",
            "--outdir",
            str(out),
            str(ROOT),
        ],
        check=True,
        capture_output=True,
        timeout=300,
    )
    return out


def test_wheel_contents(dist: Path) -> None:
    """The wheel ships both packages and the entry points, and no tests."""
    (wheel,) = dist.glob("*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "deskhand_d/__main__.py" in names
    assert "deskhandctl/__main__.py" in names
    assert "deskhandctl/facade/mcpschemas.json" in names  # read by deskhandctl mcp at run time
    assert not any(n.startswith("tests/") for n in names)
    entry = next(n for n in names if n.endswith("entry_points.txt"))
    text = zipfile.ZipFile(wheel).read(entry).decode()
    assert "deskhand-d = deskhand_d.__main__:main" in text
    assert "deskhandctl = deskhandctl.__main__:main" in text


def test_sdist_contents(dist: Path) -> None:
    """The sdist carries the sources, units, docs and tests needed to rebuild and verify."""
    (sdist,) = dist.glob("*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = {n.split("/", 1)[1] for n in tar.getnames() if "/" in n}
    for needed in (
        "pyproject.toml",
        "README.md",
        "deskhand_d/app.py",
        "systemd/deskhand.service",
        "systemd/deskhand.socket",
        "clients/deskhandctl/__main__.py",
    ):
        assert needed in names, needed
    assert not any("/.venv/" in f"/{n}" or "__pycache__" in n for n in names)


def test_fresh_venv_runs_both_commands(dist: Path, tmp_path: Path) -> None:
    """Installed into a new venv, both console scripts run, importing only the installed copy."""
    (wheel,) = dist.glob("*.whl")
    venv = tmp_path / "venv"
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, timeout=120)
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    subprocess.run(
        [
            str(venv / "bin" / "pip"),
            "install",
            "--quiet",
            "--disable-pip-version-check",
            str(wheel),
        ],
        check=True,
        timeout=600,
        env=env,
    )
    for script, expected in (("deskhandctl", "deskhandctl 0."), ("deskhand-d", "deskhand-d 0.")):
        out = subprocess.run(
            [str(venv / "bin" / script), "--version"],
            capture_output=True,
            text=True,
            timeout=60,
            cwd=tmp_path,
            env=env,
        )
        assert out.returncode == 0, out.stderr
        assert out.stdout.strip().startswith(expected)
    where = subprocess.run(
        [
            str(venv / "bin" / "python"),
            "-c",
            "import deskhand_d, deskhandctl, trio, msgspec; "
            "print(deskhand_d.__file__); print(deskhandctl.__file__)",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=tmp_path,
        env=env,
        check=True,
    ).stdout.split()
    assert all(str(venv) in w for w in where), where
