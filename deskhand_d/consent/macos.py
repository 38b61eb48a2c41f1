"""macOS app identity: finds a bundle without launching it and checks its code signature.

Owns bundle lookup (path, bundle id or display name), reading the designated requirement
with ``codesign``, and finding a running process of the executable: ``ps`` lists pids and
start times, and the kernel says which executable each runs (``proc_pidpath`` from libproc,
through ctypes; ``ps``'s command column is only the name the process was launched by). The
parsers (:func:`parse_designated`, :func:`parse_ps`) are pure; :class:`MacPlatform` is the thin
shell that runs the commands and reads the file system. Commands are taken from fixed absolute
paths, never from ``PATH``, because the agent we guard against can change the environment.

A ``codesign`` that runs out of time is reported (:class:`IdentityUnavailable`), never taken
for an unsigned app: a large bundle could otherwise lose its "always" grant silently.
"""

from __future__ import annotations

import ctypes
import os
import plistlib
import re
import sys
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import Any
from xml.parsers.expat import ExpatError

from deskhand_d.consent.identity import (
    AppIdentity,
    IdentityUnavailable,
    Instance,
    content,
    signed,
)
from deskhand_d.consent.probe import COMMAND_TIMEOUT, TIMED_OUT, Runner, run_command, sha256_file

CODESIGN = "/usr/bin/codesign"
PS = "/bin/ps"
NOT_SIGNED = "code object is not signed at all"
PROC_PIDPATHINFO_MAXSIZE = 4096  # <libproc.h>: 4 * MAXPATHLEN

PidPath = Callable[[int], str | None]
"""The executable a process runs, as the kernel knows it; None when it cannot say."""

_PROC_PIDPATH: Any = None  # the ctypes function, declared on first use


def proc_pidpath(pid: int) -> str | None:
    """``proc_pidpath(3)``: the kernel's path of the image ``pid`` runs (macOS only; None
    elsewhere, for a process that is gone, or one the kernel will not describe)."""
    global _PROC_PIDPATH
    if sys.platform != "darwin":
        return None
    if _PROC_PIDPATH is None:
        fn = ctypes.CDLL(None, use_errno=True).proc_pidpath
        # int proc_pidpath(int pid, void *buffer, uint32_t buffersize)
        fn.argtypes = [ctypes.c_int, ctypes.c_void_p, ctypes.c_uint32]
        fn.restype = ctypes.c_int
        _PROC_PIDPATH = fn
    buf = ctypes.create_string_buffer(PROC_PIDPATHINFO_MAXSIZE)
    size = _PROC_PIDPATH(pid, buf, PROC_PIDPATHINFO_MAXSIZE)
    return os.fsdecode(buf.raw[:size]) if size > 0 else None


def default_search_dirs() -> list[str]:
    """Where bundles are looked up by id or name, in order of preference."""
    return [
        "/Applications",
        "/System/Applications",
        "/System/Applications/Utilities",
        os.path.expanduser("~/Applications"),
        "/System/Library/CoreServices",
    ]


# --- pure parsing ---------------------------------------------------------------------------


@dataclass(frozen=True)
class Designated:
    """What ``codesign -d -r-`` says about a signature."""

    requirement: str  # "" when the output has no designated requirement
    adhoc: bool  # only pins the code hash: anyone can produce such a signature
    signer: str  # "Apple", a team id, or "" when the requirement names neither


_DESIGNATED = re.compile(r"^\s*(?:#\s*)?designated\s*=>\s*(?P<req>.+?)\s*$", re.MULTILINE)
_CDHASH = r'cdhash\s+H"[0-9a-fA-F]+"'
_CDHASH_ONLY = re.compile(rf"^\(?\s*{_CDHASH}(?:\s+or\s+{_CDHASH})*\s*\)?$")
_APPLE = re.compile(r"\banchor\s+apple\b(?!\s+generic)")
_TEAM = re.compile(r'certificate\s+leaf\[subject\.OU\]\s*=\s*"?(?P<team>[A-Za-z0-9]+)"?')


def parse_designated(output: str) -> Designated:
    """Read the designated requirement from ``codesign -d -r-`` output.

    An implicit requirement is printed as a comment (``# designated => ...``); it is what
    ``--verify`` checks all the same, so it counts.
    """
    match = _DESIGNATED.search(output)
    if match is None:
        return Designated(requirement="", adhoc=False, signer="")
    requirement = match["req"]
    if _CDHASH_ONLY.match(requirement):
        return Designated(requirement=requirement, adhoc=True, signer="")
    if _APPLE.search(requirement):
        return Designated(requirement=requirement, adhoc=False, signer="Apple")
    team = _TEAM.search(requirement)
    return Designated(requirement=requirement, adhoc=False, signer=team["team"] if team else "")


def parse_ps(output: str) -> list[tuple[int, str]]:
    """(pid, start time) from ``ps -axww -o pid=,lstart=``.

    The start time is five words (``Mon Jan  1 09:00:00 2024``), normalised to single spaces.
    """
    rows: list[tuple[int, str]] = []
    for line in output.splitlines():
        words = line.split()
        if len(words) != 6 or not words[0].isdigit():
            continue
        rows.append((int(words[0]), " ".join(words[1:6])))
    return rows


# --- the platform ---------------------------------------------------------------------------


def _read_info(bundle: str) -> dict[str, str]:
    """The string values of a bundle's Info.plist; empty when it cannot be read."""
    try:
        with open(os.path.join(bundle, "Contents", "Info.plist"), "rb") as f:
            info = plistlib.load(f)
    except (OSError, ValueError, ExpatError):  # InvalidFileException is a ValueError
        return {}
    if not isinstance(info, dict):
        return {}
    return {k: v for k, v in info.items() if isinstance(k, str) and isinstance(v, str)}


def _stat_key(path: str) -> tuple[int, int, int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None  # gone: differs from any earlier stamp, so the identity is resolved again
    return (st.st_ino, st.st_size, st.st_mtime_ns, st.st_ctime_ns)


class MacPlatform:
    """Resolves macOS apps to identities backed by their code signature."""

    name = "macos"

    def __init__(
        self,
        *,
        search_dirs: Sequence[str] | None = None,
        run: Runner = run_command,
        pidpath: PidPath = proc_pidpath,
    ) -> None:
        self._dirs = list(search_dirs) if search_dirs is not None else default_search_dirs()
        self._run = run
        self._pidpath = pidpath

    # resolution

    def _bundles(self) -> Iterator[str]:
        """Every ``*.app`` one level under each search directory and its ``Utilities``."""
        seen: set[str] = set()
        for top in self._dirs:
            for folder in (top, os.path.join(top, "Utilities")):
                try:
                    names = sorted(os.listdir(folder))
                except OSError:
                    continue  # a missing directory (no ~/Applications, say) is normal
                for entry in names:
                    path = os.path.join(folder, entry)
                    if entry.lower().endswith(".app") and os.path.isdir(path):
                        real = os.path.realpath(path)
                        if real not in seen:
                            seen.add(real)
                            yield real

    def _find_bundle(self, app: str) -> str | None:
        wanted = app.casefold()
        bare = wanted.removesuffix(".app")
        bundles = list(self._bundles())
        infos = {b: _read_info(b) for b in bundles}
        # A bundle id is unambiguous, so it wins over a name that happens to be equal.
        for bundle in bundles:
            if infos[bundle].get("CFBundleIdentifier", "").casefold() == wanted:
                return bundle
        for bundle in bundles:
            info = infos[bundle]
            names = {
                os.path.basename(bundle)[: -len(".app")],
                info.get("CFBundleName", ""),
                info.get("CFBundleDisplayName", ""),
            }
            if bare in {n.casefold() for n in names if n}:
                return bundle
        return None

    def _resolve(self, app: str) -> tuple[str, str]:
        """(bundle path or "", canonical executable) for what the person asked for."""
        if os.path.isabs(app):
            real = os.path.realpath(app)
            if real.lower().endswith(".app") and os.path.isdir(real):
                return real, self._executable(real)
            if not (os.path.isfile(real) and os.access(real, os.X_OK)):
                raise IdentityUnavailable(
                    f"{app} is neither an app bundle nor an executable file; "
                    "give the path of the .app bundle"
                )
            macos_dir = os.path.dirname(real)
            if macos_dir.lower().endswith(".app/contents/macos"):
                # The bundle's main executable is the bundle; a helper beside it is not.
                outer = os.path.dirname(os.path.dirname(macos_dir))
                try:
                    if self._executable(outer) == real:
                        return outer, real
                except IdentityUnavailable:
                    pass
            return "", real  # a plain Mach-O tool: codesign handles it directly
        bundle = self._find_bundle(app)
        if bundle is None:
            where = ", ".join(self._dirs)
            raise IdentityUnavailable(
                f"no app called {app!r} was found in {where}; install it, check the name or "
                "bundle id, or give the full path to the .app bundle"
            )
        return bundle, self._executable(bundle)

    def _executable(self, bundle: str) -> str:
        name = _read_info(bundle).get("CFBundleExecutable", "")
        if not name or "/" in name or name in {".", ".."}:
            raise IdentityUnavailable(
                f"{bundle} has no usable CFBundleExecutable in Contents/Info.plist; "
                "reinstall the app"
            )
        exe = os.path.realpath(os.path.join(bundle, "Contents", "MacOS", name))
        if not os.path.isfile(exe):
            raise IdentityUnavailable(
                f"{bundle} is missing its executable {exe}; reinstall the app"
            )
        return exe

    # the protocol

    def identify(self, app: str) -> AppIdentity:
        """Resolve ``app`` and vouch for it by its verified signature, or by content."""
        bundle, exe = self._resolve(app)
        target = bundle or exe

        def unverified(why: str) -> AppIdentity:
            return content(app, exe, sha256_file(exe), why=why, bundle=bundle)

        status, output = self._run([CODESIGN, "-d", "-r-", target])
        _raise_if_timed_out(status, target)
        if status != 0:
            if NOT_SIGNED in output:
                return unverified("not signed")
            return unverified(f"codesign could not read the signature: {_first_line(output)}")
        found = parse_designated(output)
        if not found.requirement:
            return unverified("signed without a designated requirement")
        if found.adhoc:
            return unverified("ad-hoc signed: no developer identity vouches for it")
        # Reading the requirement does not check it: the bundle may have been modified since
        # it was signed. Verifying against that exact requirement covers both.
        status, output = self._run([CODESIGN, "--verify", f"-R={found.requirement}", target])
        _raise_if_timed_out(status, target)
        if status != 0:
            return unverified(f"the signature does not verify: {_first_line(output)}")
        return signed(app, exe, found.requirement, signer=found.signer, bundle=bundle)

    def stamp(self, identity: AppIdentity) -> Hashable:
        """Changes when the executable or the bundle's signature seal is replaced or touched."""
        if not identity.bundle:
            return (_stat_key(identity.path),)
        seal = os.path.join(identity.bundle, "Contents", "_CodeSignature", "CodeResources")
        return (_stat_key(identity.path), _stat_key(seal))

    def instance(self, identity: AppIdentity) -> Instance | None:
        """The running process of this executable (the lowest pid if several), if any."""
        status, output = self._run([PS, "-axww", "-o", "pid=,lstart="])
        if status != 0:
            return None
        found = [
            Instance(pid, started)
            for pid, started in parse_ps(output)
            if self._runs(pid, identity.path)
        ]
        return min(found, key=lambda i: i.pid) if found else None

    def _runs(self, pid: int, path: str) -> bool:
        image = self._pidpath(pid)
        # The kernel's path is the file it mapped; a symlinked install resolves to ours.
        return image is not None and (image == path or os.path.realpath(image) == path)


def _raise_if_timed_out(status: int, target: str) -> None:
    if status == TIMED_OUT:
        raise IdentityUnavailable(
            f"codesign did not finish checking the signature of {target} within "
            f"{COMMAND_TIMEOUT:g} s (very large apps can take longer), so Deskhand could not "
            "verify it and did not treat it as unsigned either; try again (a second check is "
            "often faster, once the app's files are cached)"
        )


def _first_line(output: str) -> str:
    lines = [line.strip() for line in output.splitlines() if line.strip()]
    return lines[0] if lines else "no output"
