"""A full disk for tests: a small tmpfs (root only) and a file that fills it to the last byte.

What this owns: mounting and unmounting the tmpfs, and filling a file system completely; the
tests decide what lives on it and when the space comes back (by deleting the filler).
"""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest


def mount_tmpfs(path: Path, size: str) -> None:
    """A tmpfs of ``size`` at ``path`` (created 0700); skips without root, fails under CI."""
    if os.geteuid() != 0 or shutil.which("mount") is None:
        if os.environ.get("CI"):
            pytest.fail("a tmpfs needs root and mount(8); CI runs as root")
        pytest.skip("needs root to mount a small tmpfs for the full-disk case")
    path.mkdir(parents=True, mode=0o700, exist_ok=True)
    subprocess.run(
        ["mount", "-t", "tmpfs", "-o", f"size={size},mode=0700", "tmpfs", str(path)], check=True
    )


def unmount(path: Path) -> None:
    subprocess.run(["umount", "-l", str(path)], check=False)


def fill(directory: Path) -> Path:
    """Fill the file system of ``directory`` to the last byte; return the filler file."""
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 1):  # down to the last byte
            try:
                while f.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler
