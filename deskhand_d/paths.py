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
SUN_PATH_BYTES_MACOS = 104
"""sizeof(sockaddr_un.sun_path) on macOS, the terminating NUL included: a socket path may have
at most 103 bytes."""
_CS_DARWIN_USER_TEMP_DIR = 65537  # confstr(3) name of the per-user temp dir, <unistd.h>


def is_macos() -> bool:
    return sys.platform == "darwin"


def _home(env: Env) -> str:
    return env.get("HOME") or os.path.expanduser("~")


def fits_macos_socket(path: str) -> bool:
    """Whether ``path`` can be bound as a Unix socket on macOS (at most 103 bytes)."""
    return len(os.fsencode(path)) < SUN_PATH_BYTES_MACOS


def darwin_user_temp_dir(env: Env = os.environ) -> str:
    """This user's own temp directory on macOS (under /var/folders): ``$TMPDIR``, or, where a
    shell lost it (some ssh sessions, sudo), what ``confstr(_CS_DARWIN_USER_TEMP_DIR)`` says.
    ``""`` when neither answers (off macOS). Never the shared ``/tmp``."""
    tmp = env.get("TMPDIR")
    if tmp:
        return tmp
    if not is_macos():
        return ""
    try:
        return os.confstr(_CS_DARWIN_USER_TEMP_DIR) or ""
    except (OSError, ValueError):
        return ""


def macos_runtime_dir_str(env: Env = os.environ) -> str:
    """The socket's directory on macOS: ``~/Library/Application Support/Deskhand/run``.

    Under ``~/Library`` rather than the temp directory, which macOS may clean while a
    LaunchAgent's socket path is fixed and launchd would not create the directory again. Only
    when that socket path would be too long for ``sun_path`` (a very long home path), the
    per-user temp directory instead; never the shared ``/tmp``.
    """
    library = os.path.join(_home(env), "Library", "Application Support", "Deskhand", "run")
    if fits_macos_socket(os.path.join(library, SOCKET_NAME)):
        return library
    tmp = darwin_user_temp_dir(env)
    return os.path.join(tmp, "deskhand") if tmp else library


def runtime_dir_str(env: Env = os.environ) -> str:
    """The private directory that holds the socket (created 0700 by the daemon)."""
    if is_macos():
        return macos_runtime_dir_str(env)
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
