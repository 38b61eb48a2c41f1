"""A revocation takes effect in the running daemon at once, even when it cannot be saved.

grants.json sits on a small tmpfs that is then filled (root only; CI runs as root): `grants
revoke Calculator` still cancels, retires and refuses at once, and says the revocation is in
force but not saved; Calculator stays refused (nobody here can answer the consent question);
once space returns the daemon writes the revocation itself. A revocation during an emergency
stop works too, and never needs the disk.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest
from dhtest.daemon import daemon_env, short_tmpdir, spawn_daemon
from dhtest.desk import SIM_APPS, save_grants

pytestmark = pytest.mark.slow
EXTRA = {
    "DESKHAND_BACKEND": "sim",
    "DESKHAND_SIM_SCENARIO": json.dumps({"preapproved": ["*"]}),
    "DESKHAND_ALLOWED_APPS": "Calculator,TextEdit",
}


def _ctl(root: Path, sock: Path, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "deskhandctl", "--socket", str(sock), *argv],
        env={**daemon_env(root), "DESKHAND_NO_AUTOSTART": "1"},
        capture_output=True,
        text=True,
        timeout=60,
    )


def _fill(directory: Path) -> Path:
    filler = directory / "filler"
    with open(filler, "wb", buffering=0) as f:
        for size in (65536, 4096, 1):
            try:
                while f.write(b"\0" * size):
                    pass
            except OSError:
                pass
    return filler


def test_revoke_on_a_full_config_disk_is_in_force_at_once() -> None:
    if os.geteuid() != 0 or shutil.which("mount") is None:
        if os.environ.get("CI"):
            pytest.fail("a tmpfs needs root and mount(8); CI runs as root")
        pytest.skip("needs root to mount a small tmpfs for the full-disk case")
    root = short_tmpdir()
    config = root / "config"
    config.mkdir(mode=0o700)
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k,mode=0700", "tmpfs", str(config)],
                   check=True)  # fmt: skip
    daemon = None
    try:
        save_grants(config, SIM_APPS)
        daemon = spawn_daemon(root, extra_env=EXTRA)
        sock = daemon.socket
        assert _ctl(root, sock, "observe", "Calculator").returncode == 0
        grants_file = config / "deskhand" / "grants.json"
        before = grants_file.read_text()
        filler = _fill(config)
        revoked = _ctl(root, sock, "grants", "revoke", "Calculator")
        assert revoked.returncode == 0, revoked.stderr
        assert "in force now but could not be saved" in revoked.stdout, revoked.stdout
        assert grants_file.read_text() == before  # the disk took nothing...
        observed = _ctl(root, sock, "--json", "observe", "Calculator")
        error = json.loads(observed.stdout)["error"]
        assert error["code"] == "consent_denied", error  # ...and still Calculator is refused
        assert error["data"]["delivery"] == "refused"
        listed = json.loads(_ctl(root, sock, "--json", "grants", "list").stdout)
        calc = [g for g in listed["grants"] if g["app"] == "Calculator"]
        assert calc and all(g["revoked_at"] for g in calc), listed
        assert _ctl(root, sock, "observe", "TextEdit").returncode == 0  # others unaffected
        filler.unlink()  # space returns: the daemon saves the revocation itself
        time.sleep(1.2)
        _ctl(root, sock, "observe", "TextEdit")
        saved = json.loads(grants_file.read_text())["grants"]
        assert [g["revoked_at"] is not None for g in saved if g["app"] == "Calculator"] == [True]
    finally:
        if daemon is not None:
            daemon.stop()
        subprocess.run(["umount", "-l", str(config)], check=False)
        shutil.rmtree(root, ignore_errors=True)


def test_revoke_during_an_emergency_stop() -> None:
    root = short_tmpdir()
    save_grants(root / "config", SIM_APPS)
    daemon = spawn_daemon(root, extra_env=EXTRA)
    try:
        sock = daemon.socket
        assert _ctl(root, sock, "observe", "Calculator").returncode == 0
        assert _ctl(root, sock, "stop").returncode == 0
        revoked = _ctl(root, sock, "grants", "revoke", "Calculator")
        assert revoked.returncode == 0, revoked.stderr
        assert "could not be saved" not in revoked.stdout
        assert _ctl(root, sock, "unlock").returncode == 0
        observed = json.loads(_ctl(root, sock, "--json", "observe", "Calculator").stdout)
        assert observed["error"]["code"] == "consent_denied", observed
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
