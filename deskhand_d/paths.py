"""Where Deskhand keeps its socket, configuration and state, per platform.

Standard library only: the CLI imports this module on its hot path, so the daemon and every
client agree on the default socket without a round of configuration parsing.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

SOCKET_NAME = "deskhand.sock"
LAUNCHD_LABEL = "dev.deskhand.daemon"
SYSTEMD_SERVICE = "deskhand.service"
SYSTEMD_SOCKET = "deskhand.socket"


def _home(env: dict[str, str] | os._Environ[str]) -> Path:
    return Path(env.get("HOME") or os.path.expanduser("~"))


def is_macos() -> bool:
    return sys.platform == "darwin"


def runtime_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    """The private directory that holds the socket (created 0700 by the daemon)."""
    if is_macos():
        # $TMPDIR is a per-user directory under /var/folders on macOS, unlike /tmp.
        base = env.get("TMPDIR") or "/tmp"
        return Path(base) / "deskhand"
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg:
        return Path(xdg) / "deskhand"
    # No login session runtime dir (e.g. a bare ssh shell): fall back like ssh-agent does,
    # to a per-uid directory in /tmp whose ownership and mode the daemon verifies.
    return Path("/tmp") / f"deskhand-{os.getuid()}"


def default_socket(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    override = env.get("DESKHAND_SOCKET")
    if override:
        return Path(override)
    return runtime_dir(env) / SOCKET_NAME


def config_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    if is_macos():
        return _home(env) / "Library" / "Application Support" / "Deskhand"
    xdg = env.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else _home(env) / ".config") / "deskhand"


def state_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    if is_macos():
        return _home(env) / "Library" / "Application Support" / "Deskhand" / "state"
    xdg = env.get("XDG_STATE_HOME")
    return (Path(xdg) if xdg else _home(env) / ".local" / "state") / "deskhand"


def systemd_user_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    xdg = env.get("XDG_CONFIG_HOME")
    return (Path(xdg) if xdg else _home(env) / ".config") / "systemd" / "user"


def launch_agents_dir(env: dict[str, str] | os._Environ[str] = os.environ) -> Path:
    return _home(env) / "Library" / "LaunchAgents"
