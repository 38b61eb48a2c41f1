"""Which apps Deskhand may touch: the app-name rule, the effective allowlist, and ``apps.json``.

Standard library only (the CLI may import it), and no trio: every call here is short and sync.

Theory of operation:

* :func:`validate_app_name` is the one gate for a name that is about to be granted. It keeps the
  predecessor's rule exactly (see the function) so that ``apps.json`` files stay interchangeable.
* The effective allowlist is a base list (environment, else config, else ``Calculator``) plus the
  grants in ``apps.json``. :func:`is_allowed` decides membership; it never matches substrings
  or patterns, and a name that fails validation never matches anything.
* ``apps.json`` only ever grows, one app per :meth:`AppsFile.add`. Locking, safe reads and
  atomic replacement are :mod:`deskhand_d.privatefile`'s.
"""

from __future__ import annotations

import json
import os
import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, NoReturn

from deskhand_d import paths
from deskhand_d.errors import AppsFileError, BadRequest
from deskhand_d.privatefile import PrivateFile

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
    return paths.profile_dir(env) / APPS_FILE_NAME


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
        self._file = PrivateFile(
            path, max_bytes=MAX_FILE_BYTES, lock_wait_s=lock_wait_s, error=self._error
        )
        self.path = self._file.path
        self.lock_path = self._file.lock_path

    def read(self) -> list[str]:
        """The granted apps in file order, duplicates collapsed; a missing file means none.

        Raises:
            AppsFileError: the file is a symlink, not a regular file, larger than 16 KiB, has
                group/other permission bits, belongs to another user, or is not exactly
                ``{"version": 1, "apps": [valid names, at most 100]}``.
        """
        data = self._file.read_bytes()
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
        with self._file.locked():
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
            self._file.replace(data)
        return AddResult(added=True, app=app, path=str(self.path))

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

    def _error(self, reason: str, message: str) -> AppsFileError:
        return AppsFileError(
            f"{message}. Nothing was changed.", data={"path": str(self.path), "reason": reason}
        )
