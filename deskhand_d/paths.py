"""Where Deskhand keeps its socket, configuration and state, per platform.

Standard library only, and the socket lookup avoids even ``pathlib`` (which drags in
``urllib.parse`` and friends): the CLI resolves the default socket on its hot path. The
``*_str`` functions hold the logic; the ``Path`` versions wrap them for everyone else.
"""

from __future__ import annotations

import os
import sys

# Not `from typing import TYPE_CHECKING`: importing typing costs the CLI measurable time.
# mypy treats any constant of this name as true when checking.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Mapping
    from pathlib import Path

    Env = Mapping[str, str]

SOCKET_NAME = "deskhand.sock"
LOCK_NAME = "deskhand.lock"
LAUNCHD_LABEL = "dev.deskhand.daemon"
SYSTEMD_SERVICE = "deskhand.service"
SYSTEMD_SOCKET = "deskhand.socket"


def is_macos() -> bool:
    return sys.platform == "darwin"


def _home(env: Env) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def runtime_dir_str(env: Env = os.environ) -> str:
    """The private directory that holds the socket (created 0700 by the daemon)."""
    if is_macos():
        # $TMPDIR is a per-user directory under /var/folders on macOS, unlike /tmp.
        return os.path.join(env.get("TMPDIR") or "/tmp", "deskhand")
    xdg = env.get("XDG_RUNTIME_DIR")
    if xdg:
        return os.path.join(xdg, "deskhand")
    # No login session runtime dir (e.g. a bare ssh shell): fall back like ssh-agent does,
    # to a per-uid directory in /tmp whose ownership and mode the daemon and every client
    # verify (deskhand_d/clientcheck.py): anyone can create it first.
    return f"/tmp/deskhand-{os.getuid()}"


def default_socket_str(env: Env = os.environ) -> str:
    return env.get("DESKHAND_SOCKET") or os.path.join(runtime_dir_str(env), SOCKET_NAME)


def _path(value: str) -> Path:
    from pathlib import Path

    return Path(value)


def runtime_dir(env: Env = os.environ) -> Path:
    return _path(runtime_dir_str(env))


def default_socket(env: Env = os.environ) -> Path:
    return _path(default_socket_str(env))


def config_dir(env: Env = os.environ) -> Path:
    if is_macos():
        return _path(os.path.join(_home(env), "Library", "Application Support", "Deskhand"))
    base = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
    return _path(os.path.join(base, "deskhand"))


def profile_dir(env: Env = os.environ) -> Path:
    """Where the person's settings live: beside ``DESKHAND_CONFIG`` if it names a config file,
    else the config directory. ``apps.json`` and ``grants.json`` are kept here."""
    override = env.get("DESKHAND_CONFIG")
    if override:
        return _path(override).parent
    return config_dir(env)


def state_dir(env: Env = os.environ) -> Path:
    if is_macos():
        return config_dir(env) / "state"
    base = env.get("XDG_STATE_HOME") or os.path.join(_home(env), ".local", "state")
    return _path(os.path.join(base, "deskhand"))


def systemd_user_dir(env: Env = os.environ) -> Path:
    base = env.get("XDG_CONFIG_HOME") or os.path.join(_home(env), ".config")
    return _path(os.path.join(base, "systemd", "user"))


def launch_agents_dir(env: Env = os.environ) -> Path:
    return _path(os.path.join(_home(env), "Library", "LaunchAgents"))
