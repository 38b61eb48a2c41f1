"""The README's main job really does the 6 + 7 = 13 task on the simulated desktop."""

from __future__ import annotations

import os
import subprocess
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_demo_script_computes_13() -> None:
    """`bash .ci/demo.sh` exits 0 and reports the display showing 13; its daemon is stopped."""
    run_dir = Path(tempfile.mkdtemp(prefix="dhdemo", dir="/tmp"))
    env = {k: v for k, v in os.environ.items() if not k.startswith("DESKHAND_")}
    env["XDG_RUNTIME_DIR"] = str(run_dir)
    out = subprocess.run(
        ["bash", ".ci/demo.sh"],
        cwd=ROOT,
        env=env,
        stdin=subprocess.DEVNULL,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert out.returncode == 0, out.stdout + out.stderr
    assert "Calculator shows 13: done." in out.stdout
    assert "press Return" in out.stdout
    sock = run_dir / f"deskhand-demo-{os.getuid()}" / "deskhand.sock"
    for _ in range(100):  # shutdown is acknowledged first, then the socket goes
        if not sock.exists():
            break
        time.sleep(0.05)
    assert not sock.exists()
