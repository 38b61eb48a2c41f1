"""No secret of Deskhand's reaches a program it starts: the rule, and a real backend process."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from dhtest.daemon import daemon_env, short_tmpdir, spawn_daemon

from deskhand_d.childenv import child_env, is_secret_name


@pytest.mark.parametrize(
    ("name", "secret"),
    [
        ("TYPESAFE_API_KEY", True),
        ("DESKHAND_JEV_KEY", True),  # not read by Deskhand, still one of its keys
        ("DESKHAND_API_TOKEN", True),
        ("JEV_CUA_SECRET", True),
        ("TYPESAFE_PASSWORD", True),
        ("DESKHAND_BACKEND", False),
        ("DESKHAND_SOCKET", False),
        ("JEV_CUA_MODE", False),
        ("HOME", False),
        ("SSH_AUTH_SOCK", False),  # not ours to judge
        ("GITHUB_TOKEN", False),  # not in Deskhand's namespaces
    ],
)
def test_key_shaped_names_in_our_namespaces(name: str, secret: bool) -> None:
    assert is_secret_name(name) is secret


def test_configured_names_copies_and_the_service_handover_are_dropped() -> None:
    env = {
        "PATH": "/usr/bin",
        "TYPESAFE_API_KEY": "k-123456",
        "MY_COPY": "k-123456",  # the same value under another name
        "MY_TOKEN": "t-999999",
        "LISTEN_FDS": "1",
        "NOTIFY_SOCKET": "/run/x",
        "EMPTY": "",
    }
    assert child_env(env, ["MY_TOKEN"]) == {"PATH": "/usr/bin", "EMPTY": ""}


@pytest.mark.slow
def test_the_backend_process_has_none_of_them() -> None:
    """The issue's case: DESKHAND_JEV_KEY (which Deskhand does not read) reached the backend."""
    root = short_tmpdir()
    secrets = {
        "DESKHAND_JEV_KEY": "jev-key-abcdef",
        "TYPESAFE_API_KEY": "typesafe-key-abcdef",
        "SOME_COPY": "typesafe-key-abcdef",
    }
    daemon = spawn_daemon(root, extra_env={"DESKHAND_BACKEND": "sim", **secrets})
    try:
        listed = subprocess.run(
            [sys.executable, "-m", "deskhandctl", "--socket", str(daemon.socket), "--json",
             "list-apps"],
            env={**daemon_env(root), "DESKHAND_NO_AUTOSTART": "1"},
            capture_output=True, text=True, timeout=60,
        )  # fmt: skip
        assert listed.returncode == 0, listed.stderr
        status = json.loads(
            subprocess.run(
                [sys.executable, "-m", "deskhandctl", "--socket", str(daemon.socket), "--json",
                 "status"],
                env={**daemon_env(root), "DESKHAND_NO_AUTOSTART": "1"},
                capture_output=True, text=True, timeout=60,
            ).stdout
        )  # fmt: skip
        pid = status["backend"]["running_pid"]
        environ = Path(f"/proc/{pid}/environ").read_bytes().split(b"\0")
        names = {item.split(b"=", 1)[0].decode() for item in environ if item}
        values = {item.split(b"=", 1)[-1].decode() for item in environ if item}
        assert not names & set(secrets), names & set(secrets)
        assert not values & set(secrets.values())
        assert "PATH" in names  # the rest is passed on
    finally:
        daemon.stop()
        shutil.rmtree(root, ignore_errors=True)
