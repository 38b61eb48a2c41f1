"""Linux app identity: finds an app's executable without launching it and asks who owns it.

Owns resolution (path, desktop entry or command on ``PATH``), the rule for a saved ``package``
identity, and finding a running process in ``/proc``. Parsers are pure; :class:`LinuxPlatform`
is the thin shell. Package tools come from a fixed system path, never the caller's ``PATH``:
the agent we guard against can change the environment.
"""

from __future__ import annotations

import glob
import os
import shutil
import stat
from collections.abc import Hashable, Iterator, Mapping
from pathlib import PurePath

from deskhand_d.consent.identity import (
    AppIdentity,
    IdentityUnavailable,
    Instance,
    content,
    package,
)
from deskhand_d.consent.probe import Runner, run_command, sha256_file
from deskhand_d.desktopentry import exec_program, parse_desktop_entry

SYSTEM_TOOLS_PATH = "/usr/bin:/bin:/usr/sbin:/sbin"
# Launchers that start something else in a sandbox: their own identity says nothing about the
# app, and the sandboxed program is not visible to us yet.
SANDBOX_LAUNCHERS = frozenset({"flatpak", "snap"})
SHELLS = frozenset({"sh", "bash", "dash", "zsh", "ksh", "fish"})
_WRITABLE_BY_OTHERS = stat.S_IWGRP | stat.S_IWOTH


# --- pure parsing ---------------------------------------------------------------------------


def parse_dpkg_search(output: str, path: str) -> str | None:
    """The first package ``dpkg-query -S`` lists for exactly ``path``, or None.

    Lines are ``pkg1, pkg2: /path``; a package may carry an architecture (``libc6:amd64``),
    so the split is on the known path, not the first colon. Diversion lines are not owners.
    """
    suffix = ": " + path
    for line in output.splitlines():
        if line.startswith(("diversion by ", "local diversion ")) or not line.endswith(suffix):
            continue
        first = line[: -len(suffix)].split(",")[0].strip()
        if first and " " not in first:
            return first
    return None


def parse_rpm_query(output: str) -> str | None:
    """The package name ``rpm -qf --queryformat '%{NAME}\\n'`` printed, or None."""
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    # "file /x is not owned by any package" and "error: ..." are sentences, never a name.
    if not lines or len(lines[0].split()) != 1:
        return None
    return lines[0]


def parse_stat_starttime(text: str) -> str | None:
    """Field 22 (start time in clock ticks) of ``/proc/PID/stat``.

    Field 2 is the command name in parentheses and may hold spaces and ``)`` itself, so the
    fields are counted from after the last ``)``.
    """
    _, paren, rest = text.rpartition(")")
    fields = rest.split()
    if not paren or len(fields) < 20 or not fields[19].isdigit():
        return None
    return fields[19]  # fields[0] is field 3 (state)


# --- the platform ---------------------------------------------------------------------------


def _merged_usr_twin(path: str) -> str:
    """``/usr/bin/ls`` <-> ``/bin/ls``: dpkg records the path the package shipped."""
    return path.removeprefix("/usr") if path.startswith("/usr/") else "/usr" + path


class LinuxPlatform:
    """Resolves Linux apps to identities backed by system package ownership."""

    name = "linux"

    def __init__(
        self,
        *,
        env: Mapping[str, str] | None = None,
        run: Runner = run_command,
        proc: str = "/proc",
        tools_path: str = SYSTEM_TOOLS_PATH,
    ) -> None:
        self._env = os.environ if env is None else env
        self._run = run
        self._proc = proc
        self._tools_path = tools_path

    # resolution

    def _entry_files(self) -> Iterator[tuple[str, str]]:
        """(desktop file id, path) in XDG precedence order; a later duplicate id is shadowed."""
        home = self._env.get("HOME") or os.path.expanduser("~")
        data_home = self._env.get("XDG_DATA_HOME") or os.path.join(home, ".local", "share")
        data_dirs = (self._env.get("XDG_DATA_DIRS") or "/usr/local/share:/usr/share").split(":")
        seen: set[str] = set()
        for base in [data_home, *data_dirs]:
            root = os.path.join(base, "applications")
            # One level of subdirectories: the spec makes ``kde/foo.desktop`` the id ``kde-foo``.
            for path in sorted(glob.glob(f"{glob.escape(root)}/*.desktop")) + sorted(
                glob.glob(f"{glob.escape(root)}/*/*.desktop")
            ):
                file_id = os.path.relpath(path, root).removesuffix(".desktop").replace("/", "-")
                if file_id not in seen and os.path.isfile(path):
                    seen.add(file_id)
                    yield file_id, path

    def _find_entry(self, app: str) -> tuple[str, dict[str, str]] | None:
        wanted = app.casefold().removesuffix(".desktop")
        entries: list[tuple[str, str, dict[str, str]]] = []
        for file_id, path in self._entry_files():
            try:
                with open(path, encoding="utf-8", errors="replace") as f:
                    entry = parse_desktop_entry(f.read())
            except OSError:
                continue
            if entry.get("Type", "Application") == "Application":
                entries.append((file_id, path, entry))
        for file_id, path, entry in entries:
            if file_id.casefold() == wanted:
                return path, entry
        for _, path, entry in entries:
            if "true" in (entry.get("NoDisplay"), entry.get("Hidden")):
                continue  # hidden from menus: the person cannot mean it by its name
            names = [v for k, v in entry.items() if k == "Name" or k.startswith("Name[")]
            if wanted in {n.casefold() for n in names}:
                return path, entry
        return None

    def _which(self, command: str, missing: str) -> str:
        found = shutil.which(command, path=self._env.get("PATH", os.defpath))
        if found is None:
            raise IdentityUnavailable(
                f"{missing}; install it or give the full path to the executable"
            )
        return found

    def _program_of(self, path: str, entry: dict[str, str]) -> str:
        if "X-Flatpak" in entry or "X-SnapInstanceName" in entry:
            raise _sandboxed(path)
        program = entry.get("TryExec") or exec_program(entry.get("Exec", ""))
        if not program:
            raise IdentityUnavailable(
                f"{path} has no usable Exec= line; give the full path to the executable"
            )
        if not os.path.isabs(program):
            program = self._which(program, f"{path} runs {program!r}, which is not on PATH")
        if os.path.basename(os.path.realpath(program)) in SHELLS:
            raise IdentityUnavailable(
                f"{path} starts the app through a shell, so the program it runs is "
                "unknown; give the full path to the executable"
            )
        return program

    def _resolve(self, app: str) -> tuple[str, str]:
        """(desktop entry path or "", canonical executable) for what the person asked for."""
        bundle, program = "", app
        if os.path.isabs(app):
            if app.endswith(".desktop") and os.path.isfile(app):
                with open(app, encoding="utf-8", errors="replace") as f:
                    bundle, program = app, self._program_of(app, parse_desktop_entry(f.read()))
        elif "/" in app:
            raise IdentityUnavailable(
                f"{app!r} is a relative path; give the full path to the executable"
            )
        elif (found := self._find_entry(app)) is not None:
            bundle, program = found[0], self._program_of(*found)
        else:
            program = self._which(app, f"{app!r} is neither a desktop entry nor on PATH")
        real = os.path.realpath(program)
        if os.path.basename(real) in SANDBOX_LAUNCHERS or any(
            mark in p for p in (program, real) for mark in ("/flatpak/", "/snap/")
        ):
            raise _sandboxed(app)
        if not (os.path.isfile(real) and os.access(real, os.X_OK)):
            raise IdentityUnavailable(
                f"{program} is not an executable file; install the app "
                "or give the full path to the executable"
            )
        return bundle, real

    # the saved-identity rule

    def _unsafe(self, path: str) -> list[str]:
        """Why the file is not safe from the person's own account; empty when it is."""
        problems: list[str] = []
        st = os.stat(path)
        if not stat.S_ISREG(st.st_mode):
            problems.append("not a regular file")
        if st.st_uid != 0:
            problems.append("not owned by root")
        if st.st_mode & _WRITABLE_BY_OTHERS:
            problems.append("writable by group or others")
        # Root may write anything, so for root (tests, CI) os.access always says writable;
        # there the ownership and mode checks above are what keeps the file out of reach.
        if os.geteuid() != 0 and os.access(path, os.W_OK):
            problems.append("writable by you")
        for folder in map(str, PurePath(path).parents):
            try:
                dst = os.stat(folder)
            except OSError:
                problems.append(f"its directory {folder} cannot be checked")
                break
            if dst.st_uid != 0 or dst.st_mode & _WRITABLE_BY_OTHERS:
                # Whoever may write the directory may swap the file for another one.
                problems.append(f"its directory {folder} is writable by someone other than root")
                break
        return problems

    def _owner(self, path: str) -> str | None:
        """The system package owning ``path`` per dpkg, else rpm; None if neither says so."""
        candidates = (path, _merged_usr_twin(path))
        dpkg = shutil.which("dpkg-query", path=self._tools_path)
        if dpkg is not None:
            # One call for both spellings. It exits 1 whenever either is unknown, so only
            # lines naming exactly one of the paths count, not the exit status.
            _, output = self._run([dpkg, "-S", *candidates])
            return next((n for c in candidates if (n := parse_dpkg_search(output, c))), None)
        rpm = shutil.which("rpm", path=self._tools_path)
        if rpm is None:
            return None
        for candidate in candidates:
            status, output = self._run([rpm, "-qf", "--queryformat", "%{NAME}\n", candidate])
            if status == 0 and (name := parse_rpm_query(output)):
                return name
        return None

    # the protocol

    def identify(self, app: str) -> AppIdentity:
        """Resolve ``app`` and vouch for it by package ownership, or by content."""
        bundle, exe = self._resolve(app)
        problems = self._unsafe(exe)
        owner = self._owner(exe)
        if owner is None:
            problems.append("not owned by a system package")
        if owner is not None and not problems:
            return package(app, exe, owner, bundle=bundle)
        return content(app, exe, sha256_file(exe), why="; ".join(problems), bundle=bundle)

    def stamp(self, identity: AppIdentity) -> Hashable:
        """Changes when the executable is replaced, rewritten, re-owned or re-permissioned."""
        try:
            st = os.stat(identity.path)
        except OSError:
            return None  # gone: differs from any earlier stamp, so it is resolved again
        return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns, st.st_mode, st.st_uid)

    def instance(self, identity: AppIdentity) -> Instance | None:
        """The person's running process of this executable (the lowest pid), if any."""
        uid = os.getuid()
        try:
            pids = sorted(int(n) for n in os.listdir(self._proc) if n.isdigit())
        except OSError:
            return None
        for pid in pids:
            base = os.path.join(self._proc, str(pid))
            try:
                if os.stat(base).st_uid != uid:
                    continue
                exe = os.readlink(os.path.join(base, "exe")).removesuffix(" (deleted)")
                if exe != identity.path:
                    continue
                with open(os.path.join(base, "stat"), encoding="utf-8", errors="replace") as f:
                    started = parse_stat_starttime(f.read())
            except OSError:
                continue  # exited meanwhile, or not ours to look at
            if started is not None:
                return Instance(pid, started)
        return None


def _sandboxed(what: str) -> IdentityUnavailable:
    return IdentityUnavailable(
        f"{what} runs in a Flatpak or Snap sandbox, which is not supported yet; "
        "use a version installed from the system packages or give the full path to a "
        "program outside the sandbox"
    )
