"""The service-manager files for deskhand-d: templates and their rendering.

This module is the single source of truth for the systemd user units and the launchd agent.
The copies at the top of the repository (``systemd/deskhand.service``,
``systemd/deskhand.socket``, ``launchd/dev.deskhand.daemon.plist``) are generated from the
constants below with their placeholders left in, so people and CI can read and lint them
without Python; ``tests/test_service_units.py`` fails when they drift. After editing a
template here, regenerate them with::

    .venv/bin/python -m deskhandctl.setup.units

Keeping the templates as strings in the package (instead of package data files) means an
installed wheel renders exactly what the repository shows, with no resource lookup.

Placeholders (each replaced at install time by ``deskhandctl service install``):

* ``@DESKHAND_D@``: the daemon command, absolute executable first (in the plist, one
  ``<string>`` per argument);
* ``@SOCKET_PATH@``: the absolute socket path (plist only; the socket unit uses ``%t``);
* ``@LOG_DIR@``: the absolute directory for launchd's stdout/stderr files (plist only).

The end of the module answers the questions about where the units live: where they put
things (socket, logs), whether the service manager that would run them answers from here
(:func:`manager_unreachable`), and, on macOS, what keeps a LaunchAgent from running: an
installation inside a privacy-protected folder (:func:`protected_folder`), and the agent's
background item switched off under Login Items, which shows as ``bootstrap`` failing with EIO
(:func:`background_refused`) or as a job launchd never starts (:func:`launchd_runs`).
``deskhandctl service`` asks the manager question before it installs anything; autostart asks
it before deferring to units that are installed. Every command of the service manager runs
with :func:`manager_env`: no secret Deskhand knows reaches it.

Standard library only; ``deskhand_d.paths`` is stdlib-only too. :func:`manager_env` alone
reads the configuration (msgspec), when a service-manager command is about to run.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path, PurePosixPath
from typing import Final
from xml.sax.saxutils import escape as _xml_escape

from deskhand_d import paths
from deskhand_d.paths import LAUNCHD_LABEL, SOCKET_NAME, SYSTEMD_SERVICE, SYSTEMD_SOCKET

DESKHAND_D: Final = "@DESKHAND_D@"
SOCKET_PATH: Final = "@SOCKET_PATH@"
LOG_DIR: Final = "@LOG_DIR@"
LOG_FILE_NAME: Final = "deskhand-d.log"
PLIST_NAME: Final = f"{LAUNCHD_LABEL}.plist"

_TOKEN = re.compile(r"@[A-Z_]+@")

SERVICE_TEMPLATE: Final = f"""\
# systemd user service for the Deskhand daemon (deskhand-d).
#
# `deskhandctl service install` writes this file to ~/.config/systemd/user/ with the
# placeholder in ExecStart= replaced by the absolute daemon command of the installation
# it runs from.
# Generated from clients/deskhandctl/setup/units.py; edit it there, not here.
#
# {SYSTEMD_SOCKET} is the unit that gets enabled: systemd holds the listening socket and
# starts this service on the first connection; the daemon takes the socket from LISTEN_FDS
# and sends READY=1 once it serves it.

[Unit]
Description=Deskhand desktop agent daemon
Requires={SYSTEMD_SOCKET}
After={SYSTEMD_SOCKET}
# Five failed starts within a minute end the restart loop (the socket unit fails too);
# after fixing the cause: systemctl --user reset-failed {SYSTEMD_SERVICE} {SYSTEMD_SOCKET}
StartLimitIntervalSec=60
StartLimitBurst=5

[Service]
Type=notify
NotifyAccess=main
ExecStart={DESKHAND_D}
Restart=on-failure
RestartSec=2s
# The daemon finishes a graceful stop within 5 s of SIGTERM; the rest is margin.
TimeoutStopSec=10
# SIGTERM goes to the daemon only, so it can shut its backend down in order itself;
# whatever is still in the unit's cgroup once it has exited gets SIGKILL.
KillMode=mixed
# Logs are JSON lines on stderr, collected by the journal; never keep them in a buffer.
Environment=PYTHONUNBUFFERED=1
SyslogIdentifier=deskhand-d

# Hardening. Every setting below is inherited by the processes the daemon starts: its
# backend and any application it launches for an agent. So it only takes away what a
# desktop application never needs, using seccomp and prctl, which work the same in any
# systemd user manager and need no namespaces.
#
# New files (config, grants, traces, audit log) are readable by this user only.
UMask=0077
# No privilege gain through setuid, setgid or file capabilities: nothing started from
# here can use sudo, pkexec or su.
NoNewPrivileges=yes
LockPersonality=yes
RestrictRealtime=yes
RestrictSUIDSGID=yes
# Native system calls only (on x86-64 this also refuses 32-bit x86 programs).
SystemCallArchitectures=native
# Off on purpose: ctypes/libffi callbacks (the AT-SPI bindings use them) and JIT runtimes
# in backends or launched apps (Node, Chromium, Electron) need memory that is writable
# and executable, and would be killed.
MemoryDenyWriteExecute=no
# Off on purpose: the X11 server's sockets are in /tmp/.X11-unix, which a private /tmp
# would hide.
PrivateTmp=no
# Not set on purpose: ProtectSystem=, ProtectHome=, ReadWritePaths=, PrivateUsers=,
# ProtectKernelTunables=, ProtectKernelModules=, ProtectControlGroups=. A user manager
# can only apply them inside a user namespace: systemd 252 skips them silently unless
# PrivateUsers=yes is set, later releases switch PrivateUsers= on by themselves. Either
# way the read-only mounts would also apply to the apps the daemon launches (the home
# directory and /tmp would become read-only for them), and the kernel and cgroup ones
# guard files an unprivileged user cannot write anyway. docs/operations.md shows how to
# add them with a drop-in. RestrictNamespaces= is not set because the sandboxes of
# launched browsers and Flatpak apps create namespaces.

[Install]
WantedBy=default.target
Also={SYSTEMD_SOCKET}
"""

SOCKET_TEMPLATE: Final = f"""\
# systemd user socket for the Deskhand daemon: the unit `deskhandctl service install`
# enables. systemd creates the socket at login and starts {SYSTEMD_SERVICE} on the first
# connection. Generated from clients/deskhandctl/setup/units.py; edit it there, not here.

[Unit]
Description=Deskhand daemon socket

[Socket]
# %t is $XDG_RUNTIME_DIR, so this is the path clients use by default.
ListenStream=%t/deskhand/{SOCKET_NAME}
# Owner only: the socket and its directory. The daemon also checks the peer's uid.
SocketMode=0600
DirectoryMode=0700
RemoveOnStop=yes
Service={SYSTEMD_SERVICE}

[Install]
WantedBy=sockets.target
"""

PLIST_TEMPLATE: Final = f"""\
<?xml version="1.0" encoding="UTF-8"?>
<!DOCTYPE plist PUBLIC "-//Apple//DTD PLIST 1.0//EN" "http://www.apple.com/DTDs/PropertyList-1.0.dtd">
<!--
  LaunchAgent for the Deskhand daemon (deskhand-d).

  `deskhandctl service install` writes this file to ~/Library/LaunchAgents/ with the
  placeholders replaced by absolute paths for the current user (launchd expands neither
  "~" nor variables), and loads it with `launchctl bootstrap gui/<uid>`.
  Generated from clients/deskhandctl/setup/units.py; edit it there, not here.
-->
<plist version="1.0">
<dict>
  <key>Label</key>
  <string>{LAUNCHD_LABEL}</string>
  <key>ProgramArguments</key>
  <array>
    <string>{DESKHAND_D}</string>
  </array>
  <!--
    Start at login: a start-up problem then shows in the log right after login or
    install instead of in the middle of an agent's first request.
  -->
  <key>RunAtLoad</key>
  <true/>
  <!--
    Restart right away only after a crash (a signal such as SIGSEGV or SIGABRT). After
    any exit, clean or not, launchd keeps the socket and starts the daemon again on the
    next connection. An exit with a status is a decision with a reason in the log (bad
    configuration, a socket launchd did not hand over): restarting it at once would only
    repeat the same line every few seconds.
  -->
  <key>KeepAlive</key>
  <dict>
    <key>Crashed</key>
    <true/>
  </dict>
  <!--
    The daemon takes this socket with launch_activate_socket("Listeners").
    SockPathMode is decimal: 384 is 0600.
  -->
  <key>Sockets</key>
  <dict>
    <key>Listeners</key>
    <dict>
      <key>SockPathName</key>
      <string>{SOCKET_PATH}</string>
      <key>SockPathMode</key>
      <integer>384</integer>
    </dict>
  </dict>
  <!-- It drives the GUI, so it belongs to the logged-in desktop session only. -->
  <key>LimitLoadToSessionType</key>
  <string>Aqua</string>
  <!--
    Interactive: no resource limits, like an app. The daemon carries out actions the
    user watches on screen, each with a latency budget, so it must not be throttled the
    way a default (Standard) job may be; Adaptive does not apply, as clients do not use
    XPC. When nobody uses it, it is idle, blocked on its socket.
  -->
  <key>ProcessType</key>
  <string>Interactive</string>
  <!-- 63 is 0077: new files (config, grants, traces) are readable by this user only. -->
  <key>Umask</key>
  <integer>63</integer>
  <key>EnvironmentVariables</key>
  <dict>
    <!-- The log files are not terminals; don't let Python hold output in a buffer. -->
    <key>PYTHONUNBUFFERED</key>
    <string>1</string>
  </dict>
  <key>StandardOutPath</key>
  <string>{LOG_DIR}/{LOG_FILE_NAME}</string>
  <key>StandardErrorPath</key>
  <string>{LOG_DIR}/{LOG_FILE_NAME}</string>
</dict>
</plist>
"""

_PLIST_ARG_LINE: Final = f"    <string>{DESKHAND_D}</string>\n"
# Safe without quotes in an ExecStart= line; anything else is double-quoted.
_SYSTEMD_PLAIN = re.compile(r"[A-Za-z0-9_@%+=:,./-]+")


class RenderError(ValueError):
    """A value cannot be written into a unit or plist safely (relative path, control
    characters, ``$``). Raised by the ``render_*`` functions; the caller should report the
    message, which names the value, and stop."""


class SocketPathTooLong(RenderError):
    """The LaunchAgent's socket path does not fit macOS's 104-byte ``sun_path``: launchd could
    not create it, and the daemon would never start. The message names the path and the fix."""


def _check_command(command: Sequence[str]) -> None:
    if not command:
        raise RenderError("the daemon command is empty")
    if not PurePosixPath(command[0]).is_absolute():
        raise RenderError(f"the daemon executable must be an absolute path, not {command[0]!r}")
    for word in command:
        _check_text(word)


def _check_text(value: str) -> None:
    if any(ord(c) < 0x20 or c == "\x7f" for c in value):
        raise RenderError(f"{value!r} contains control characters")
    try:
        value.encode("utf-8")
    except UnicodeEncodeError:
        raise RenderError(f"{value!r} is not valid UTF-8") from None


def _systemd_word(word: str) -> str:
    # systemd expands "$VAR" in arguments but not in the executable path, so a literal "$"
    # cannot be written the same way everywhere; such a path is refused rather than mangled.
    if "$" in word:
        raise RenderError(f"{word!r} contains '$', which systemd would expand")
    word = word.replace("%", "%%")  # "%x" is a unit specifier
    if _SYSTEMD_PLAIN.fullmatch(word):
        return word
    return '"' + word.replace("\\", "\\\\").replace('"', '\\"') + '"'


def _finish(text: str) -> str:
    left = _TOKEN.findall(text)
    if left:
        raise RenderError(f"placeholders left unrendered: {', '.join(sorted(set(left)))}")
    return text


def render_service(command: Sequence[str]) -> str:
    """The systemd service with ``ExecStart=`` set to ``command`` (quoted for systemd)."""
    _check_command(command)
    bad = sorted(set("\"'\\") & set(command[0]))
    if bad:
        # systemd refuses such executable names ("contains special characters").
        raise RenderError(f"systemd cannot run an executable whose path contains {bad}")
    line = " ".join(_systemd_word(w) for w in command)
    return _finish(SERVICE_TEMPLATE.replace(DESKHAND_D, line))


def render_socket() -> str:
    """The systemd socket unit (it has no placeholders: ``%t`` is expanded by systemd)."""
    return _finish(SOCKET_TEMPLATE)


def render_plist(command: Sequence[str], socket_path: str, log_dir: str) -> str:
    """The LaunchAgent plist for ``command``, listening on ``socket_path``, logging to
    ``log_dir``; all three must be absolute."""
    _check_command(command)
    for what, value in (("socket path", socket_path), ("log directory", log_dir)):
        _check_text(value)
        if not PurePosixPath(value).is_absolute():
            raise RenderError(f"the {what} must be absolute, not {value!r}")
    if not paths.fits_macos_socket(socket_path):
        size = len(socket_path.encode("utf-8"))
        raise SocketPathTooLong(
            f"socket_path_too_long: the socket path {socket_path} has {size} bytes, and macOS "
            f"allows at most {paths.SUN_PATH_BYTES_MACOS - 1}; run install from a shell whose "
            "TMPDIR is set (Deskhand then uses your temp folder), or give your account a "
            "shorter home folder"
        )
    args = "".join(f"    <string>{_xml_escape(w)}</string>\n" for w in command)
    # The command is substituted first and escaped, so a path that happens to contain
    # another placeholder's text cannot be rewritten by the later replacements.
    head, sep, tail = PLIST_TEMPLATE.partition(_PLIST_ARG_LINE)
    if not sep:
        raise RenderError("PLIST_TEMPLATE lost its ProgramArguments placeholder line")
    tail = tail.replace(SOCKET_PATH, _xml_escape(socket_path))
    tail = tail.replace(LOG_DIR, _xml_escape(log_dir))
    return _finish(head + args + tail)


def canonical_files() -> dict[str, str]:
    """The repository's checked-in copies, keyed by path relative to the repository root."""
    return {
        f"systemd/{SYSTEMD_SERVICE}": SERVICE_TEMPLATE,
        f"systemd/{SYSTEMD_SOCKET}": SOCKET_TEMPLATE,
        f"launchd/{PLIST_NAME}": PLIST_TEMPLATE,
    }


def _write_canonical(root: Path) -> None:
    for rel, text in canonical_files().items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(text.encode("utf-8"))
        print(f"wrote {target}")


if __name__ == "__main__":
    _write_canonical(Path(sys.argv[1]) if len(sys.argv) > 1 else Path.cwd())


# ----- where the units put things ---------------------------------------------------------


def macos_socket(env: Mapping[str, str]) -> Path:
    """Where the LaunchAgent's socket goes: the path macOS clients use by default (also when
    rendering for macOS elsewhere: dry runs, tests)."""
    return Path(paths.macos_runtime_dir_str(dict(env))) / paths.SOCKET_NAME


def macos_log_dir(env: Mapping[str, str]) -> Path:
    """``~/Library/Logs/Deskhand``, where Console.app looks for per-user logs."""
    return paths.launch_agents_dir(dict(env)).parent / "Logs" / "Deskhand"


def linux_socket_text(env: Mapping[str, str]) -> str:
    # The socket unit says %t/deskhand/deskhand.sock; %t is the session's XDG_RUNTIME_DIR.
    xdg = env.get("XDG_RUNTIME_DIR")
    return str(Path(xdg or "$XDG_RUNTIME_DIR") / "deskhand" / paths.SOCKET_NAME)


# ----- whether a service manager runs them ------------------------------------------------

# `systemctl --user` fails within milliseconds when no user manager answers; a manager that
# hangs must not hang deskhandctl with it.
PROBE_TIMEOUT_S = 5.0


def manager_probe(*, macos: bool) -> tuple[str, ...]:
    """A harmless command that succeeds only when this user's service manager answers."""
    if macos:
        return ("launchctl", "print", f"gui/{os.getuid()}")
    return ("systemctl", "--user", "show-environment")


def manager_env(env: Mapping[str, str]) -> dict[str, str]:
    """``env`` as ``systemctl`` and ``launchctl`` get it: without any secret Deskhand knows
    (:func:`deskhand_d.childenv.child_env`), the configuration's ``secrets.redact_env`` included.

    A configuration that cannot be read leaves the built-in rule (Deskhand's own key, the
    key-shaped names of its namespaces): the daemon refuses to start on such a file and says
    why, so there is nothing for the service command to add.
    """
    from deskhand_d.childenv import child_env
    from deskhand_d.config import load
    from deskhand_d.errors import ConfigError

    try:
        names = load(env).secrets.redact_env
    except ConfigError:
        names = []
    return child_env(env, names)


def manager_unreachable(probe: Sequence[str], env: Mapping[str, str]) -> str | None:
    """Why the service manager cannot be used from here, or None when ``probe`` succeeds.

    Without a systemd user instance (containers, ssh sessions outside logind, sudo) or a GUI
    login on macOS, installed units are files nobody reads: nothing will start the daemon
    from them.
    """
    if shutil.which(probe[0], path=env.get("PATH")) is None:
        return f"there is no {probe[0]} on PATH"
    try:
        done = subprocess.run(
            probe,
            env=manager_env(env),
            stdin=subprocess.DEVNULL,
            capture_output=True,
            text=True,
            check=False,
            timeout=PROBE_TIMEOUT_S,
        )
    except OSError as exc:
        return f"{probe[0]} could not be run ({exc.strerror})"
    except subprocess.TimeoutExpired:
        return f"'{' '.join(probe)}' did not answer within {PROBE_TIMEOUT_S:g} s"
    if done.returncode != 0:
        detail = done.stderr.strip().splitlines()
        return f"'{' '.join(probe)}' failed" + (f": {detail[0]}" if detail else "")
    return None


# ----- what keeps a LaunchAgent from running on macOS --------------------------------------

# Folders macOS guards with a privacy prompt (TCC) for every program that reads them: a
# LaunchAgent's Python gets a prompt naming Python, or, with nobody to answer, cannot read its
# own modules. iCloud Drive is ~/Library/Mobile Documents; Desktop and Documents may be synced
# there too, but keep their names under the home folder.
PROTECTED_FOLDERS: Final = (
    (("Desktop",), "Desktop"),
    (("Documents",), "Documents"),
    (("Downloads",), "Downloads"),
    (("Library", "Mobile Documents"), "iCloud Drive (~/Library/Mobile Documents)"),
)


def protected_folder(path: str, home: str) -> str | None:
    """The privacy-protected folder of ``home`` that ``path`` lies in (its name as a person
    knows it), or None. Both must be absolute. Pure; names are compared without regard to
    case, as macOS's file systems compare them by default."""
    parts = [p.casefold() for p in PurePosixPath(os.path.normpath(path)).parts]
    base = [p.casefold() for p in PurePosixPath(os.path.normpath(home)).parts]
    if parts[: len(base)] != base:
        return None
    rest = parts[len(base) :]
    for folder, name in PROTECTED_FOLDERS:
        if rest[: len(folder)] == [f.casefold() for f in folder]:
            return name
    return None


BACKGROUND_FIX: Final = (
    "open System Settings → General → Login Items (Login Items & Extensions on later "
    "versions) and, under Allow in the Background, switch on the item for deskhand-d (macOS "
    "may list it under its Python's name, such as python3); then run "
    "`deskhandctl service install` again"
)


def background_refused(argv: Sequence[str], code: int, detail: str) -> bool:
    """Whether a failed command is ``launchctl bootstrap`` refused with EIO: what launchd
    answers on macOS 13 and later when the agent's background item is switched off (also,
    for a few seconds, right after a ``bootout``, which the install retries first). Pure."""
    return tuple(argv[:2]) == ("launchctl", "bootstrap") and (
        code == 5 or "Input/output error" in detail
    )


_RUNS = re.compile(r"^\s*runs = (\d+)\s*$", re.MULTILINE)
_PID = re.compile(r"^\s*pid = \d+\s*$", re.MULTILINE)


def launchd_runs(printed: str) -> int | None:
    """How often launchd has started the job, from ``launchctl print <job>``'s text: its
    ``runs`` count (at least 1 while a ``pid`` is shown), or None when the text says neither
    (the job is not loaded, or the format is unknown). Pure."""
    runs = _RUNS.search(printed)
    if _PID.search(printed):
        return max(1, int(runs.group(1)) if runs else 1)
    return int(runs.group(1)) if runs else None
