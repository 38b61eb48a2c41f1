"""Which apps Deskhand may touch: the app-name rule, the effective allowlist, and ``apps.json``.

Standard library only (the CLI may import it), and no trio: every call here is short and sync.

Theory of operation:

* :func:`validate_app_name` is the one gate for a name that is about to be granted. It keeps the
  predecessor's rule exactly (see the function) so that ``apps.json`` files stay interchangeable.
* The effective allowlist is a base list (environment, else config, else ``Calculator``) plus the
  grants in ``apps.json``. :func:`is_allowed` decides membership; it never matches substrings
  or patterns, and a name that fails validation never matches anything.
* ``apps.json`` only ever grows, one app per :meth:`AppsFile.add`. Invariants of an update:
  every writer holds an exclusive ``flock`` on ``apps.json.lock`` (so writers queue up; the
  kernel drops the lock when a writer dies, even by SIGKILL); the new content is written to a
  fresh temp file, fsynced, then renamed over the target, so readers and survivors of a crash
  see the old file or the new one, never a mix. The lock file is never unlinked: removing it
  would let a waiter lock an orphaned inode while a newcomer locks a new one.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import json
import os
import re
import stat
import time
import unicodedata
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from deskhand_d import paths
from deskhand_d.errors import AppsFileError, BadRequest

APPS_FILE_NAME = "apps.json"
MAX_NAME_UNITS = 200
"""Longest name, in UTF-16 code units (the predecessor's ``String.length``, kept for parity)."""
MAX_APPS = 100
MAX_FILE_BYTES = 16_384
LOCK_WAIT_S = 10.0
"""How long :meth:`AppsFile.add` waits for another writer before giving up."""
DEFAULT_APPS: tuple[str, ...] = ("Calculator",)
ALLOWED_APPS_ENV: tuple[str, ...] = ("DESKHAND_ALLOWED_APPS", "JEV_CUA_ALLOWED_APPS")
"""Environment variables for the base list, first set one wins (the second is the predecessor's)."""

_FORBIDDEN_CHARS = frozenset(",*?[]{}")
_BULK_WORDS = frozenset({"all", "all apps", "全部", "所有", "所有应用", "全部应用"})
_TEMP_RE = re.compile(r"\.[0-9a-f]{16}\.tmp")


def validate_app_name(value: str) -> str:
    """Return the stored form of one app name, bundle id or ``.app`` path, or raise BadRequest.

    The rule is the predecessor's, unchanged: the raw value may contain no control or format
    character (Unicode Cc/Cf) and none of ``, * ? [ ] { }``; the trimmed name is 1-200 UTF-16
    code units, does not start with ``--``, is not a bulk word (``all``, ``all apps``, 全部,
    所有, 所有应用, 全部应用, any case), and if it starts with ``/`` it ends in ``.app`` or
    ``.app/``. One addition: lone surrogates (from undecodable command-line bytes) are refused
    too, since they cannot be written as UTF-8.
    """
    for ch in value:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cf", "Cs"):
            _bad_name(
                "control", "the app name contains a control or invisible formatting character"
            )
        if ch in _FORBIDDEN_CHARS:
            _bad_name(
                "pattern",
                "the app name contains one of , * ? [ ] { }: grant exactly one app, "
                "by name, bundle id or .app path; lists and wildcards are not supported",
            )
    # Python's whitespace set differs from JavaScript's trim() only in Cc/Cf characters,
    # which were refused above, so strip() trims exactly what the predecessor trimmed.
    name = value.strip()
    if not name:
        _bad_name("empty", "the app name is empty")
    if len(name.encode("utf-16-le")) // 2 > MAX_NAME_UNITS:
        _bad_name("too_long", f"the app name is longer than {MAX_NAME_UNITS} characters")
    if name.startswith("--"):
        _bad_name("option", "the app name starts with '--'; pass the app itself, not an option")
    if name.lower() in _BULK_WORDS:
        _bad_name("bulk", f"{name!r} is not an app: apps are granted one at a time, by name")
    if name.startswith("/") and not name.endswith((".app", ".app/")):
        _bad_name("path", "an app given by path must be an .app bundle (ending in .app)")
    return name


def _bad_name(rule: str, message: str) -> NoReturn:
    raise BadRequest(message, data={"rule": rule})


def parse_app_list(value: str) -> list[str]:
    """A comma-separated list: entries trimmed, empty ones dropped, order kept."""
    return [part.strip() for part in value.split(",") if part.strip()]


def effective_allowlist(
    config_apps: list[str], env: Mapping[str, str], granted: list[str]
) -> list[str]:
    """The apps this daemon may touch: the base list plus the grants, without duplicates.

    The base list is the first of ``DESKHAND_ALLOWED_APPS`` / ``JEV_CUA_ALLOWED_APPS`` that is set
    to something other than blanks and commas (an empty variable counts as unset, the usual shell
    convention), else ``config_apps`` if non-empty, else ``["Calculator"]``. Base entries are not
    validated (the predecessor did not either); :func:`is_allowed` never lets a pattern match.
    """
    base: list[str] = []
    for var in ALLOWED_APPS_ENV:
        base = parse_app_list(env.get(var, ""))
        if base:
            break
    if not base:
        base = [app.strip() for app in config_apps if app.strip()]
    if not base:
        base = list(DEFAULT_APPS)
    return list(dict.fromkeys([*base, *granted]))


def is_allowed(app: str, allowlist: Iterable[str]) -> bool:
    """Whether ``app`` (as a client asked for it) is on ``allowlist``.

    Whole-entry equality only, never substrings or patterns, and a request that fails
    :func:`validate_app_name` (``*``, ``all``, a comma list, ...) is never allowed. Names and
    bundle ids compare case-insensitively (``calculator`` matches ``Calculator``): macOS
    resolves app names on a case-insensitive file system and treats bundle ids
    case-insensitively, so both spellings reach the same app and refusing one only invites the
    agent to retry with the other. ``.app`` paths compare exactly apart from one trailing ``/``,
    because a case-sensitive volume can hold two bundles whose paths differ only in case. The
    predecessor matched exactly; everything it allowed is still allowed.
    """
    try:
        key = _match_key(validate_app_name(app))
    except BadRequest:
        return False
    return any(_match_key(entry.strip()) == key for entry in allowlist)


def _match_key(name: str) -> str:
    if name.startswith("/"):
        return name.removesuffix("/")
    return name.casefold()


def default_apps_path(env: Mapping[str, str] = os.environ) -> Path:
    """``apps.json`` beside the config file."""
    return paths.config_dir(env) / APPS_FILE_NAME


@dataclass(frozen=True, slots=True)
class AddResult:
    added: bool
    """False when the app was already granted (the file was not touched)."""
    app: str
    """The stored form of the name (trimmed)."""
    path: str


class AppsFile:
    """The grants file: read it, or append one app to it. There is no remove or bulk API."""

    def __init__(self, path: Path | str, *, lock_wait_s: float = LOCK_WAIT_S) -> None:
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
        self._lock_wait_s = lock_wait_s

    def read(self) -> list[str]:
        """The granted apps in file order, duplicates collapsed; a missing file means none.

        Raises:
            AppsFileError: the file is a symlink, not a regular file, larger than 16 KiB, has
                group/other permission bits, belongs to another user, or is not exactly
                ``{"version": 1, "apps": [valid names, at most 100]}``.
        """
        data = self._read_bytes()
        return [] if data is None else self._parse(data)

    def add(self, name: str) -> AddResult:
        """Grant one app: validate it, then append it under the lock.

        Waits up to ``lock_wait_s`` for a concurrent writer. Returns ``added=False`` and leaves
        the file untouched (mtime included) if the app is already there.

        Raises:
            BadRequest: ``name`` breaks the rule of :func:`validate_app_name`.
            AppsFileError: the file is unsafe or corrupt, holds 100 apps already, would grow
                past 16 KiB, the lock stayed busy, or the write failed. Nothing was changed.
        """
        app = validate_app_name(name)
        try:
            self.path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        except OSError as exc:
            raise self._error("io", f"cannot create the directory of {self.path}", exc) from None
        with self._locked():
            self._remove_stale_temps()
            apps = self.read()
            if app in apps:
                return AddResult(added=False, app=app, path=str(self.path))
            if len(apps) >= MAX_APPS:
                raise self._error(
                    "limit", f"{self.path} already grants the maximum of {MAX_APPS} apps"
                )
            body = json.dumps({"version": 1, "apps": [*apps, app]}, indent=2, ensure_ascii=False)
            data = (body + "\n").encode()
            if len(data) > MAX_FILE_BYTES:
                raise self._error(
                    "limit",
                    f"adding {app!r} would make {self.path} larger than {MAX_FILE_BYTES} bytes",
                )
            self._replace(data)
        return AddResult(added=True, app=app, path=str(self.path))

    # -- reading --------------------------------------------------------------------------

    def _read_bytes(self) -> bytes | None:
        # O_NONBLOCK: opening a FIFO planted at our path must not hang; fstat then refuses it.
        flags = os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.path, flags)
        except FileNotFoundError:
            return None
        except OSError as exc:
            if exc.errno == errno.ELOOP:
                raise self._error(
                    "unsafe", f"{self.path} is a symbolic link; it must be a plain file"
                ) from None
            raise self._error("unsafe", f"cannot open {self.path}", exc) from None
        try:
            st = os.fstat(fd)
            self._check_safe(st, self.path)
            chunks: list[bytes] = []
            size = 0
            while chunk := os.read(fd, MAX_FILE_BYTES + 1 - size):
                chunks.append(chunk)
                size += len(chunk)
                if size > MAX_FILE_BYTES:
                    raise self._error(
                        "unsafe", f"{self.path} is larger than {MAX_FILE_BYTES} bytes"
                    )
            return b"".join(chunks)
        except OSError as exc:
            raise self._error("unsafe", f"cannot read {self.path}", exc) from None
        finally:
            os.close(fd)

    def _check_safe(self, st: os.stat_result, path: Path) -> None:
        mode = stat.S_IMODE(st.st_mode)
        if not stat.S_ISREG(st.st_mode):
            raise self._error("unsafe", f"{path} is not a regular file")
        if st.st_size > MAX_FILE_BYTES:
            raise self._error("unsafe", f"{path} is larger than {MAX_FILE_BYTES} bytes")
        if st.st_uid != os.getuid():
            raise self._error(
                "unsafe", f"{path} belongs to uid {st.st_uid}, not to you (uid {os.getuid()})"
            )
        if mode & 0o077:
            raise self._error(
                "unsafe",
                f"{path} has mode {mode:04o}; it must be private to you: chmod 600 {path}",
            )

    def _parse(self, data: bytes) -> list[str]:
        try:
            doc: Any = json.loads(data.decode("utf-8"))
        except (ValueError, RecursionError):  # RecursionError: absurdly deep nesting
            raise self._error("corrupt", f"{self.path} is not valid UTF-8 JSON") from None
        if not (
            isinstance(doc, dict)
            and set(doc) == {"version", "apps"}
            and doc["version"] == 1
            and not isinstance(doc["version"], bool)
            and isinstance(doc["apps"], list)
            and len(doc["apps"]) <= MAX_APPS
        ):
            raise self._error(
                "corrupt",
                f'{self.path} must hold exactly {{"version": 1, "apps": [...]}} '
                f"with at most {MAX_APPS} apps",
            )
        apps: list[str] = []
        for index, item in enumerate(doc["apps"]):
            try:
                ok = isinstance(item, str) and validate_app_name(item) == item
            except BadRequest:
                ok = False
            if not ok:
                raise self._error(
                    "corrupt", f"{self.path}: apps[{index}] is not a valid app name as stored"
                )
            if item not in apps:
                apps.append(item)
        return apps

    # -- writing --------------------------------------------------------------------------

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        flags = os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK
        try:
            fd = os.open(self.lock_path, flags, 0o600)
        except OSError as exc:
            raise self._error("io", f"cannot open the lock file {self.lock_path}", exc) from None
        try:
            st = os.fstat(fd)
            if not stat.S_ISREG(st.st_mode) or st.st_uid != os.getuid():
                raise self._error(
                    "unsafe", f"{self.lock_path} is not a regular file of yours; remove it"
                )
            self._wait_for_lock(fd)
            yield
        finally:
            os.close(fd)  # releases the flock

    def _wait_for_lock(self, fd: int) -> None:
        # flock has no timeout, so poll: short sleeps first (the usual holder needs ~1 ms),
        # growing to 50 ms, until the deadline.
        deadline = time.monotonic() + self._lock_wait_s
        pause = 0.001
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                return
            except BlockingIOError:
                pass
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise self._error(
                    "locked",
                    f"another update of {self.path} has held {self.lock_path.name} for more "
                    f"than {self._lock_wait_s:g} s; try again later",
                )
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, 0.05)

    def _remove_stale_temps(self) -> None:
        # Under the lock no other writer is mid-update, so a temp file of ours that is still
        # here was left by a writer that was killed before it could clean up.
        prefix = self.path.name
        try:
            names = os.listdir(self.path.parent)
        except OSError:
            return
        for entry in names:
            if entry.startswith(prefix) and _TEMP_RE.fullmatch(entry[len(prefix) :]):
                with contextlib.suppress(OSError):
                    os.unlink(self.path.parent / entry)

    def _replace(self, data: bytes) -> None:
        temp = self.path.with_name(f"{self.path.name}.{os.urandom(8).hex()}.tmp")
        flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC
        created = renamed = False
        try:
            fd = os.open(temp, flags, 0o600)
            created = True
            try:
                os.fchmod(fd, 0o600)  # exactly 0600 whatever the umask
                view = memoryview(data)
                while view:
                    view = view[os.write(fd, view) :]
                os.fsync(fd)
            finally:
                os.close(fd)
            os.replace(temp, self.path)
            renamed = True
        except OSError as exc:
            raise self._error("io", f"cannot write {self.path}", exc) from None
        finally:
            if created and not renamed:
                with contextlib.suppress(OSError):
                    os.unlink(temp)
        _fsync_dir(self.path.parent)

    def _error(self, reason: str, message: str, exc: OSError | None = None) -> AppsFileError:
        if exc is not None:
            message = f"{message}: {exc.strerror or exc}"
        return AppsFileError(
            f"{message}. Nothing was changed.", data={"path": str(self.path), "reason": reason}
        )


def _fsync_dir(directory: Path) -> None:
    """Make the rename durable. Best effort: some file systems refuse fsync on a directory."""
    try:
        fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | os.O_CLOEXEC)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
